//! A safe parser for the `linux_dirent64` records that `getdents64(2)` and
//! `IORING_OP_GETDENTS` write.
//!
//! The kernel's record is
//!
//! ```text
//! struct linux_dirent64 {
//!     u64  d_ino;     // offset 0
//!     s64  d_off;     // offset 8: position of the *next* record
//!     u16  d_reclen;  // offset 16: size of this record, a multiple of 8
//!     u8   d_type;    // offset 18: DT_* constant
//!     char d_name[];  // offset 19: NUL-terminated, padded to d_reclen
//! };
//! ```
//!
//! The parser trusts nothing in the buffer: every length is checked against
//! the slice before it is used, so corrupt input yields a [`ParseError`] and
//! never an out-of-bounds read, a panic, or an endless loop.
//!
//! Names are as long as their record holds, not limited to `NAME_MAX`
//! (255): that limit is per file system, and FUSE allows 1 024 bytes (a
//! 1 048-byte record). Only `d_reclen`'s 16 bits bound a name.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;

mod error;
mod file_type;
pub use error::{ParseError, ParseErrorKind};
pub use file_type::FileType;

/// Size of the fixed part of a record, up to and excluding `d_name`.
pub const HEADER_LEN: usize = 19;
/// Records are padded so each starts at a multiple of this.
pub const RECORD_ALIGN: usize = 8;
/// The smallest possible record: the header plus a one-byte name's NUL,
/// rounded up to [`RECORD_ALIGN`].
pub const MIN_RECORD_LEN: usize = 24;

/// One parsed record, borrowing its name from the buffer.
///
/// # Example
///
/// ```
/// use io_uring_getdents::dirent::{Dirent, DirentIter};
/// let mut buf = Vec::new();
/// io_uring_getdents::dirent::encode(&mut buf, 42, 7, libc::DT_REG, b"a.txt");
/// let entry: Dirent<'_> = DirentIter::new(&buf).next().unwrap().unwrap();
/// assert_eq!(entry.ino(), 42);
/// assert_eq!(entry.offset(), 7);
/// assert_eq!(entry.name_bytes(), b"a.txt");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirent<'a> {
    ino: u64,
    off: u64,
    d_type: u8,
    name: &'a CStr,
}

impl<'a> Dirent<'a> {
    /// The inode number (`d_ino`).
    #[inline]
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// `d_off`: the directory position just after this entry. Reading again
    /// from this offset resumes with the next entry. The kernel's `s64` is
    /// returned as the same 64 bits, as `lseek` and SQE offsets take them.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.off
    }

    /// The raw `d_type` byte.
    #[inline]
    pub fn d_type(&self) -> u8 {
        self.d_type
    }

    /// The entry's type from `d_type`.
    #[inline]
    pub fn file_type(&self) -> FileType {
        FileType::from_d_type(self.d_type)
    }

    /// The name, without its NUL.
    #[inline]
    pub fn name(&self) -> &'a CStr {
        self.name
    }

    /// The name's bytes, without the NUL.
    #[inline]
    pub fn name_bytes(&self) -> &'a [u8] {
        self.name.to_bytes()
    }

    /// The name as an `OsStr` (any bytes but `/` and NUL).
    #[inline]
    pub fn name_os(&self) -> &'a OsStr {
        OsStr::from_bytes(self.name.to_bytes())
    }

    /// True for the `.` and `..` entries.
    #[inline]
    pub fn is_dot_or_dotdot(&self) -> bool {
        matches!(self.name_bytes(), b"." | b"..")
    }
}

/// Iterates over the records in the filled part of a buffer.
///
/// Pass exactly the bytes the kernel reported as written. After the first
/// error the iterator is fused and yields `None`.
///
/// # Example
///
/// ```
/// use std::os::fd::AsFd;
/// use io_uring_getdents::{dirent::DirentIter, syscall::getdents64};
///
/// let dir = std::fs::File::open("/")?;
/// let mut buf = vec![0u8; 32 * 1024];
/// loop {
///     let n = getdents64(dir.as_fd(), &mut buf)?;
///     if n == 0 {
///         break;
///     }
///     for entry in DirentIter::new(&buf[..n]) {
///         println!("{:?}", entry?.name());
///     }
/// }
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DirentIter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> DirentIter<'a> {
    /// Parses `buf`, the bytes filled by one directory read.
    pub fn new(buf: &'a [u8]) -> DirentIter<'a> {
        DirentIter { buf, pos: 0 }
    }

    /// Byte offset of the next record to parse.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn parse_at(buf: &'a [u8], start: usize) -> Result<(Dirent<'a>, usize), ParseError> {
        let record = parse_record(buf, start, MIN_RECORD_LEN, 0)?;
        Ok((record.entry, record.len))
    }
}

/// A record parsed by [`parse_record`].
pub(crate) struct Record<'a> {
    /// The entry its header and name describe.
    pub(crate) entry: Dirent<'a>,
    /// Its `d_reclen`: how far the next record starts.
    pub(crate) len: usize,
    /// The record's last bytes, after its name field.
    pub(crate) tail: &'a [u8],
}

/// Parses the record at `start` of `buf`, checking every length against the
/// buffer: `d_reclen` at least `min_len` and a multiple of 8, the record
/// inside the buffer, a NUL-terminated name of its own in the bytes from
/// the header to `tail_len` before the record's end. Both record formats
/// share this: plain records have no tail, readdirplus records end with
/// their status and `statx` (`min_len` must exceed `HEADER_LEN + tail_len`).
#[inline]
pub(crate) fn parse_record(
    buf: &[u8],
    start: usize,
    min_len: usize,
    tail_len: usize,
) -> Result<Record<'_>, ParseError> {
    let err = |kind| ParseError::new(kind, start);
    let rest = &buf[start..];
    let header = rest
        .get(..HEADER_LEN)
        .ok_or_else(|| err(ParseErrorKind::TruncatedHeader))?;
    let ino = u64::from_ne_bytes(header[0..8].try_into().expect("8 bytes"));
    let off = u64::from_ne_bytes(header[8..16].try_into().expect("8 bytes"));
    let reclen = usize::from(u16::from_ne_bytes([header[16], header[17]]));
    let d_type = header[18];
    if reclen < min_len {
        return Err(err(ParseErrorKind::RecordTooShort));
    }
    if reclen % RECORD_ALIGN != 0 {
        return Err(err(ParseErrorKind::Misaligned));
    }
    let record = rest
        .get(..reclen)
        .ok_or_else(|| err(ParseErrorKind::RecordPastEnd))?;
    let (name_field, tail) = record[HEADER_LEN..].split_at(reclen - HEADER_LEN - tail_len);
    let len = match nul_or_slash(name_field) {
        Some(len) if name_field[len] == 0 => len,
        Some(slash) if name_field[slash..].contains(&0) => {
            return Err(err(ParseErrorKind::InvalidName))
        }
        _ => return Err(err(ParseErrorKind::UnterminatedName)),
    };
    if len == 0 {
        return Err(err(ParseErrorKind::InvalidName));
    }
    // SAFETY: `len` is where the first NUL or `/` of the field is, and it
    // is a NUL: the slice up to it holds one NUL, its last byte, as
    // `from_bytes_with_nul_unchecked` requires. (The safe constructors
    // would look for that NUL a second time, once per entry.)
    let name = unsafe { CStr::from_bytes_with_nul_unchecked(&name_field[..=len]) };
    Ok(Record {
        entry: Dirent {
            ino,
            off,
            d_type,
            name,
        },
        len: reclen,
        tail,
    })
}

/// Where the first NUL or `/` of `field` is, if any: one pass, a word at a
/// time (this runs once per entry), byte by byte only in a last word
/// shorter than 8 bytes.
#[inline]
fn nul_or_slash(field: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const SLASHES: u64 = u64::from_ne_bytes([b'/'; 8]);
    // The high bit of each zero byte of `v`, and maybe of bytes after one
    // (a borrow runs from lower bytes to higher ones), never before one.
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut words = field.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        // Little-endian whatever the CPU, so that byte `i` of the word is
        // bits `8 i..8 i + 8`: the lowest bit set marks the first match.
        let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let hits = zero_in(v) | zero_in(v ^ SLASHES);
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    (words.remainder().iter())
        .position(|&b| b == 0 || b == b'/')
        .map(|i| at + i)
}

impl<'a> Iterator for DirentIter<'a> {
    type Item = Result<Dirent<'a>, ParseError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        next_record(self.buf, &mut self.pos, Self::parse_at)
    }
}

impl std::iter::FusedIterator for DirentIter<'_> {}

/// One step of an iterator over the records of `buf` with the next one at
/// `pos`, in either record format: the entry `parse_at(buf, pos)` finds
/// there, with `pos` moved on by the record's length it returns, or its
/// error, with `pos` moved to the end (fused: nothing after a corrupt
/// record can be trusted); `None` at the end.
pub(crate) fn next_record<'a, T>(
    buf: &'a [u8],
    pos: &mut usize,
    parse_at: impl FnOnce(&'a [u8], usize) -> Result<(T, usize), ParseError>,
) -> Option<Result<T, ParseError>> {
    if *pos >= buf.len() {
        return None;
    }
    match parse_at(buf, *pos) {
        Ok((entry, reclen)) => {
            *pos += reclen;
            Some(Ok(entry))
        }
        Err(e) => {
            *pos = buf.len();
            Some(Err(e))
        }
    }
}

/// Appends one well-formed record to `buf`, laid out as the kernel lays it
/// out.
///
/// A helper for tests, benchmarks and fuzzing (synthetic directory
/// buffers, such as names longer than any local file system allows);
/// reading a directory never needs it.
///
/// # Panics
///
/// If `name` is empty, contains NUL or `/`, or makes a record longer than
/// `d_reclen`'s 16 bits can describe: the kernel never produces such a
/// record. Names longer than 255 bytes are fine (FUSE allows 1 024).
///
/// ```
/// let mut buf = Vec::new();
/// io_uring_getdents::dirent::encode(&mut buf, 1, 1, libc::DT_DIR, b".");
/// assert_eq!(buf.len(), 24);
/// ```
pub fn encode(buf: &mut Vec<u8>, ino: u64, off: u64, d_type: u8, name: &[u8]) {
    assert!(
        !name.is_empty() && !name.iter().any(|&b| b == 0 || b == b'/'),
        "not a valid directory entry name"
    );
    let reclen = (HEADER_LEN + name.len() + 1).next_multiple_of(RECORD_ALIGN);
    let reclen_field = u16::try_from(reclen).expect("name too long for a linux_dirent64 record");
    let start = buf.len();
    buf.extend_from_slice(&ino.to_ne_bytes());
    buf.extend_from_slice(&off.to_ne_bytes());
    buf.extend_from_slice(&reclen_field.to_ne_bytes());
    buf.push(d_type);
    buf.extend_from_slice(name);
    buf.resize(start + reclen, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time search against a byte-at-a-time one: every
    /// length up to three words, the NUL or `/` at every position, among
    /// bytes that trip the word test's borrow (0x01, 0x80, 0xff, and the
    /// neighbours of `/`) before and after it.
    #[test]
    fn the_word_search_finds_the_first_nul_or_slash() {
        let naive = |f: &[u8]| f.iter().position(|&b| b == 0 || b == b'/');
        for fill in [b'a', 0x01, 0x80, 0xff, b'.', b'0'] {
            for len in 0..=24 {
                let plain = vec![fill; len];
                assert_eq!(nul_or_slash(&plain), naive(&plain), "{fill:#x} x {len}");
                for at in 0..len {
                    for hit in [0, b'/'] {
                        let mut field = plain.clone();
                        field[at] = hit;
                        if at + 1 < len {
                            field[at + 1] = if hit == 0 { b'/' } else { 0 };
                        }
                        assert_eq!(nul_or_slash(&field), Some(at), "{field:x?}");
                    }
                }
            }
        }
    }

    fn record(name: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        encode(&mut buf, 9, 100, libc::DT_REG, name);
        buf
    }

    fn first_error(buf: &[u8]) -> ParseErrorKind {
        DirentIter::new(buf)
            .find_map(Result::err)
            .expect("an error")
            .kind()
    }

    #[test]
    fn parses_records_in_sequence() {
        let mut buf = record(b"one");
        encode(&mut buf, 10, 200, libc::DT_DIR, &[b'x'; 255]);
        let entries: Vec<_> = DirentIter::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].name_bytes(), b"one");
        assert_eq!(entries[0].file_type(), FileType::Regular);
        assert_eq!(entries[1].ino(), 10);
        assert_eq!(entries[1].offset(), 200);
        assert_eq!(entries[1].name_bytes().len(), 255);
        assert_eq!(entries[1].file_type(), FileType::Directory);
    }

    /// Longer than NAME_MAX: 300 bytes, FUSE's 1 024, and the longest a
    /// record can describe, between short names, each kept whole.
    #[test]
    fn names_longer_than_255_bytes_are_kept_whole() {
        let longest = u16::MAX as usize / RECORD_ALIGN * RECORD_ALIGN - HEADER_LEN - 1;
        let names: Vec<Vec<u8>> = vec![
            b"a".to_vec(),
            vec![b'm'; 300],
            b"b".to_vec(),
            (0..1024).map(|i| b'a' + (i % 26) as u8).collect(),
            vec![0xc3; longest],
            b"c".to_vec(),
        ];
        let mut buf = Vec::new();
        for (i, name) in names.iter().enumerate() {
            encode(&mut buf, i as u64 + 1, i as u64 + 100, libc::DT_REG, name);
        }
        let parsed: Vec<_> = DirentIter::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(parsed.len(), names.len());
        for (i, (entry, name)) in parsed.iter().zip(&names).enumerate() {
            assert_eq!(entry.name_bytes(), &name[..], "record {i}");
            assert_eq!(entry.ino(), i as u64 + 1);
            assert_eq!(entry.offset(), i as u64 + 100);
        }
        assert_eq!(parsed[3].name_bytes().len(), 1024);
        // A 1 024-byte name takes a 1 048-byte record.
        let mut one = Vec::new();
        encode(&mut one, 1, 1, libc::DT_DIR, &names[3]);
        assert_eq!(one.len(), 1048);
    }

    #[test]
    #[should_panic(expected = "name too long")]
    fn encode_refuses_a_name_no_record_can_hold() {
        encode(&mut Vec::new(), 1, 1, libc::DT_REG, &vec![b'x'; 65_510]);
    }

    #[test]
    fn empty_buffer_has_no_entries() {
        assert!(DirentIter::new(&[]).next().is_none());
    }

    #[test]
    fn zero_reclen_is_an_error_not_a_loop() {
        let mut buf = record(b"a");
        buf[16] = 0;
        buf[17] = 0;
        assert_eq!(first_error(&buf), ParseErrorKind::RecordTooShort);
    }

    #[test]
    fn reclen_past_end() {
        let mut buf = record(b"abc");
        buf[16] = 32;
        assert_eq!(first_error(&buf), ParseErrorKind::RecordPastEnd);
    }

    #[test]
    fn misaligned_reclen() {
        let mut buf = record(b"abcdefgh");
        buf.push(0);
        buf[16] += 1;
        assert_eq!(first_error(&buf), ParseErrorKind::Misaligned);
    }

    #[test]
    fn missing_nul() {
        let mut buf = record(b"abcd");
        for b in &mut buf[HEADER_LEN..] {
            *b = b'z';
        }
        assert_eq!(first_error(&buf), ParseErrorKind::UnterminatedName);
    }

    #[test]
    fn truncated_header_after_good_record() {
        let mut buf = record(b"ok");
        buf.extend_from_slice(&[1, 2, 3]);
        let mut it = DirentIter::new(&buf);
        assert!(it.next().unwrap().is_ok());
        assert_eq!(
            it.next().unwrap().unwrap_err().kind(),
            ParseErrorKind::TruncatedHeader
        );
        assert!(it.next().is_none(), "fused after an error");
    }

    #[test]
    fn slash_or_empty_name_rejected() {
        let mut buf = record(b"axb");
        buf[HEADER_LEN + 1] = b'/';
        assert_eq!(first_error(&buf), ParseErrorKind::InvalidName);
        buf = record(b"abc");
        buf[HEADER_LEN] = 0;
        assert_eq!(first_error(&buf), ParseErrorKind::InvalidName);
    }

    #[test]
    fn non_utf8_names_survive() {
        let buf = record(&[0xff, b'\n', 0x80]);
        let e = DirentIter::new(&buf).next().unwrap().unwrap();
        assert_eq!(e.name_os().as_bytes(), &[0xff, b'\n', 0x80]);
    }
}
