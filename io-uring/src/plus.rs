//! A safe parser for the records of readdirplus: GETDENTS with
//! [`GETDENTS_PLUS`](crate::opcode::GETDENTS_PLUS)
//! ([`GetDents::plus`](crate::opcode::GetDents::plus)), which hands out each
//! entry's `statx` with its name, as NFS's `READDIRPLUS` and FUSE's
//! `readdirplus` do.
//!
//! A record is a `linux_dirent64` with a tail after its name:
//!
//! ```text
//! offset 0            u64  d_ino
//! offset 8            s64  d_off       position of the next record, as for plain GETDENTS
//! offset 16           u16  d_reclen    = name_end + 264, a multiple of 8
//! offset 18           u8   d_type
//! offset 19           char d_name[]    NUL-terminated
//! name_end            s32  error       0, or -errno; name_end = align_up(19 + strlen + 1, 8)
//! name_end + 4        u32  reserved    0
//! name_end + 8        struct statx     256 bytes, all zero when error != 0
//! ```
//!
//! The `statx` is what `statx(dirfd, name, AT_SYMLINK_NOFOLLOW |
//! AT_NO_AUTOMOUNT, mask)` gives, or the errno it fails with; `..` always
//! carries `EOPNOTSUPP` (its answer depends on the caller's root and
//! mounts, so stat it yourself), an entry removed between the read and its
//! lookup `ENOENT`, and every entry of a directory without search
//! permission `EACCES`. Its `stx_ino` may differ from `d_ino` when the name
//! was replaced in between.
//!
//! As [`dirent`]'s parser, this one trusts nothing in the
//! buffer: every length is checked before it is used, so corrupt input
//! gives a [`ParseError`] and never an out-of-bounds read, a panic or an
//! endless loop. It is stricter than that one, since the layout is fixed:
//! `d_reclen` must be exactly the padded name plus [`TAIL_LEN`]
//! ([`PlusTailMisplaced`](ParseErrorKind::PlusTailMisplaced)), and the status
//! must be 0 or an errno with the reserved word and a failed entry's
//! `statx` zero ([`PlusInvalidStatus`](ParseErrorKind::PlusInvalidStatus)),
//! so a kernel writing another layout is noticed at its first record.

use std::ffi::{CStr, OsStr};
use std::fmt;
use std::io;
use std::mem::{offset_of, size_of};

use crate::dirent::{
    self, next_record, parse_record, Dirent, FileType, ParseError, ParseErrorKind,
};

/// Size of the `struct statx` in each record.
pub const STATX_LEN: usize = 256;
/// Bytes after the padded name of each record: the status word, the
/// reserved word and the `statx`.
pub const TAIL_LEN: usize = 8 + STATX_LEN;
/// The smallest readdirplus record: the smallest plain record (a one-byte
/// name) plus [`TAIL_LEN`]. A buffer shorter than the next record is
/// `-EINVAL`, as for `getdents64(2)`.
pub const MIN_RECORD_LEN: usize = dirent::MIN_RECORD_LEN + TAIL_LEN;

/// Errno values are 1 to 4095 (the kernel's `MAX_ERRNO`).
const MAX_ERRNO: i32 = 4095;

const _: () = assert!(size_of::<libc::statx>() == STATX_LEN);

/// One parsed readdirplus record: the entry, borrowing its name from the
/// buffer, and its `statx` or the errno that took its place.
///
/// # Example
///
/// ```
/// use io_uring_getdents::plus::{encode_plus, DirentPlusIter};
/// let mut buf = Vec::new();
/// encode_plus(&mut buf, 42, 7, libc::DT_DIR, b"..", Err(libc::EOPNOTSUPP));
/// let entry = DirentPlusIter::new(&buf).next().unwrap()?;
/// assert_eq!(entry.ino(), 42);
/// assert_eq!(entry.name_bytes(), b"..");
/// assert_eq!(entry.stat().unwrap_err().raw_os_error(), Some(libc::EOPNOTSUPP));
/// # Ok::<_, io_uring_getdents::dirent::ParseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DirentPlus<'a> {
    entry: Dirent<'a>,
    /// 0, or the errno (positive) that took the place of the `statx`.
    errno: i32,
    statx: &'a [u8; STATX_LEN],
}

impl<'a> DirentPlus<'a> {
    /// The plain part of the record: inode, `d_off`, type and name.
    #[inline]
    pub fn dirent(&self) -> Dirent<'a> {
        self.entry
    }

    /// The inode number (`d_ino`).
    #[inline]
    pub fn ino(&self) -> u64 {
        self.entry.ino()
    }

    /// `d_off`: the position to read from for the entries after this one,
    /// as for plain GETDENTS.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.entry.offset()
    }

    /// The raw `d_type` byte.
    #[inline]
    pub fn d_type(&self) -> u8 {
        self.entry.d_type()
    }

    /// The entry's type from `d_type` (the `statx`'s `stx_mode` says it
    /// too, where the lookup succeeded).
    #[inline]
    pub fn file_type(&self) -> FileType {
        self.entry.file_type()
    }

    /// The name, without its NUL.
    #[inline]
    pub fn name(&self) -> &'a CStr {
        self.entry.name()
    }

    /// The name's bytes, without the NUL.
    #[inline]
    pub fn name_bytes(&self) -> &'a [u8] {
        self.entry.name_bytes()
    }

    /// The name as an `OsStr`.
    #[inline]
    pub fn name_os(&self) -> &'a OsStr {
        self.entry.name_os()
    }

    /// True for the `.` and `..` entries.
    #[inline]
    pub fn is_dot_or_dotdot(&self) -> bool {
        self.entry.is_dot_or_dotdot()
    }

    /// The entry's `statx`, copied out of the buffer, or the error the
    /// kernel's lookup gave (`raw_os_error()` is the errno): `EOPNOTSUPP`
    /// for `..`, `EACCES` without search permission on the directory,
    /// `ENOENT` for an entry removed after the read, `EAGAIN` for a name
    /// a [`plus_dcache`](crate::opcode::GetDents::plus_dcache) read did
    /// not look up (stat it yourself), or whatever `statx(2)` would have
    /// answered.
    #[inline]
    pub fn stat(&self) -> io::Result<libc::statx> {
        if self.errno != 0 {
            return Err(io::Error::from_raw_os_error(self.errno));
        }
        // SAFETY: `self.statx` is STATX_LEN initialised bytes, the size of
        // `libc::statx` (asserted above), a struct of integers and padding
        // for which any bytes are a valid value. The record is 8-aligned
        // only relative to the buffer's start, hence the unaligned read.
        Ok(unsafe { std::ptr::read_unaligned(self.statx.as_ptr().cast::<libc::statx>()) })
    }
}

impl fmt::Debug for DirentPlus<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The 256 bytes of the statx would drown the rest; its inode and
        // mode say which file it describes.
        let mut out = f.debug_struct("DirentPlus");
        out.field("entry", &self.entry);
        match self.stat() {
            Ok(stx) => out
                .field("stx_ino", &stx.stx_ino)
                .field("stx_mode", &format_args!("{:#o}", stx.stx_mode)),
            Err(e) => out.field("error", &e),
        };
        out.finish()
    }
}

/// Iterates over the readdirplus records in the filled part of a buffer.
///
/// Pass exactly the bytes the kernel reported as written. After the first
/// error the iterator is fused and yields `None`.
///
/// # Example
///
/// ```
/// use io_uring_getdents::plus::{encode_plus, DirentPlusIter};
/// use io_uring_getdents::syscall::statx;
///
/// let stx = statx(None, c"/", 0, libc::STATX_BASIC_STATS)?;
/// let mut buf = Vec::new();
/// encode_plus(&mut buf, stx.stx_ino, 1, libc::DT_DIR, b".", Ok(&stx));
/// encode_plus(&mut buf, 2, 2, libc::DT_DIR, b"..", Err(libc::EOPNOTSUPP));
/// let mut sizes = Vec::new();
/// for entry in DirentPlusIter::new(&buf) {
///     if let Ok(stx) = entry?.stat() {
///         sizes.push(stx.stx_size);
///     }
/// }
/// assert_eq!(sizes, [stx.stx_size]);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DirentPlusIter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> DirentPlusIter<'a> {
    /// Parses `buf`, the bytes filled by one readdirplus read.
    pub fn new(buf: &'a [u8]) -> DirentPlusIter<'a> {
        DirentPlusIter { buf, pos: 0 }
    }

    /// Byte offset of the next record to parse.
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    fn parse_at(buf: &'a [u8], start: usize) -> Result<(DirentPlus<'a>, usize), ParseError> {
        let err = |kind| ParseError::new(kind, start);
        let record = parse_record(buf, start, MIN_RECORD_LEN, TAIL_LEN)?;
        // The name field may hold more than the name's padding: the tail
        // must start right after it.
        if name_end(record.entry.name_bytes().len()) != record.len - TAIL_LEN {
            return Err(err(ParseErrorKind::PlusTailMisplaced));
        }
        let (status, statx) = record.tail.split_at(8);
        let error = i32::from_ne_bytes(status[0..4].try_into().expect("4 bytes"));
        let reserved = u32::from_ne_bytes(status[4..8].try_into().expect("4 bytes"));
        let statx: &[u8; STATX_LEN] = statx.try_into().expect("the tail ends with the statx");
        // A whole-buffer OR, not a search that stops at the first non-zero
        // byte: the compiler makes it a few vector instructions, where a
        // byte loop cost a thousand per `..` record.
        let valid = reserved == 0
            && (error == 0
                || ((-MAX_ERRNO..=-1).contains(&error)
                    && statx.iter().fold(0, |any, &b| any | b) == 0));
        if !valid {
            return Err(err(ParseErrorKind::PlusInvalidStatus));
        }
        let entry = DirentPlus {
            entry: record.entry,
            errno: -error,
            statx,
        };
        Ok((entry, record.len))
    }
}

impl<'a> Iterator for DirentPlusIter<'a> {
    type Item = Result<DirentPlus<'a>, ParseError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        next_record(self.buf, &mut self.pos, Self::parse_at)
    }
}

impl std::iter::FusedIterator for DirentPlusIter<'_> {}

/// Where a record's tail starts for a name of `len` bytes: after the header,
/// the name and its NUL, rounded up to 8.
fn name_end(len: usize) -> usize {
    (dirent::HEADER_LEN + len + 1).next_multiple_of(dirent::RECORD_ALIGN)
}

/// Appends one well-formed readdirplus record to `buf`, laid out as the
/// kernel lays it out: the entry with `stat`'s fields, or with
/// `Err(errno)` (a positive errno, stored as `-errno`) and a zeroed `statx`.
///
/// A helper for tests, benchmarks and fuzzing, like
/// [`dirent::encode`]. It writes each field of
/// `stat` that libc has named since Linux 6.1 (up to
/// `stx_dio_offset_align`), not its bytes: `libc::statx`'s padding may be
/// uninitialised, and this crate builds with libc versions that lack the
/// later fields, which stay zero.
///
/// # Panics
///
/// As [`dirent::encode`] for the name (empty,
/// holding NUL or `/`, or a record longer than 16 bits describe), and for
/// an errno outside 1 to 4095.
///
/// ```
/// use io_uring_getdents::plus::{encode_plus, MIN_RECORD_LEN};
/// let mut buf = Vec::new();
/// encode_plus(&mut buf, 1, 1, libc::DT_DIR, b"..", Err(libc::EOPNOTSUPP));
/// assert_eq!(buf.len(), MIN_RECORD_LEN);
/// ```
pub fn encode_plus(
    buf: &mut Vec<u8>,
    ino: u64,
    off: u64,
    d_type: u8,
    name: &[u8],
    stat: Result<&libc::statx, i32>,
) {
    let error = match stat {
        Ok(_) => 0,
        Err(errno) => {
            assert!(
                (1..=MAX_ERRNO).contains(&errno),
                "errno {errno} out of range"
            );
            -errno
        }
    };
    let start = buf.len();
    dirent::encode(buf, ino, off, d_type, name);
    let reclen = buf.len() - start + TAIL_LEN;
    let reclen_field = u16::try_from(reclen).expect("name too long for a readdirplus record");
    buf[start + 16..start + 18].copy_from_slice(&reclen_field.to_ne_bytes());
    buf.extend_from_slice(&error.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    let mut statx = [0u8; STATX_LEN];
    if let Ok(stx) = stat {
        write_statx(&mut statx, stx);
    }
    buf.extend_from_slice(&statx);
}

/// Writes the fields of `stx` at their offsets in `out`.
fn write_statx(out: &mut [u8; STATX_LEN], stx: &libc::statx) {
    macro_rules! put {
        ($($field:ident).+) => {{
            let value = stx.$($field).+;
            let at = offset_of!(libc::statx, $($field).+);
            out[at..at + size_of_val(&value)].copy_from_slice(&value.to_ne_bytes());
        }};
    }
    put!(stx_mask);
    put!(stx_blksize);
    put!(stx_attributes);
    put!(stx_nlink);
    put!(stx_uid);
    put!(stx_gid);
    put!(stx_mode);
    put!(stx_ino);
    put!(stx_size);
    put!(stx_blocks);
    put!(stx_attributes_mask);
    put!(stx_atime.tv_sec);
    put!(stx_atime.tv_nsec);
    put!(stx_btime.tv_sec);
    put!(stx_btime.tv_nsec);
    put!(stx_ctime.tv_sec);
    put!(stx_ctime.tv_nsec);
    put!(stx_mtime.tv_sec);
    put!(stx_mtime.tv_nsec);
    put!(stx_rdev_major);
    put!(stx_rdev_minor);
    put!(stx_dev_major);
    put!(stx_dev_minor);
    put!(stx_mnt_id);
    put!(stx_dio_mem_align);
    put!(stx_dio_offset_align);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statx whose every byte is `seed` plus its offset, so each field
    /// holds a value of its own.
    fn patterned_statx(seed: u8) -> libc::statx {
        let bytes: [u8; STATX_LEN] = std::array::from_fn(|i| seed.wrapping_add(i as u8));
        // SAFETY: STATX_LEN initialised bytes, the size of libc::statx, whose
        // fields are integers: any bytes are a valid value.
        unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<libc::statx>()) }
    }

    fn record(name: &[u8], stat: Result<&libc::statx, i32>) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_plus(&mut buf, 9, 100, libc::DT_REG, name, stat);
        buf
    }

    fn first_error(buf: &[u8]) -> ParseError {
        DirentPlusIter::new(buf)
            .find_map(Result::err)
            .expect("an error")
    }

    /// Offset of the status word of a record holding `name`.
    fn status_at(name: &[u8]) -> usize {
        name_end(name.len())
    }

    #[test]
    fn the_record_layout_is_the_kernels() {
        let stx = patterned_statx(3);
        let buf = record(b"abcde", Ok(&stx));
        // 19 + 5 + 1 = 25, padded to 32, then the tail.
        assert_eq!(buf.len(), 32 + TAIL_LEN);
        assert_eq!(u16::from_ne_bytes([buf[16], buf[17]]), 296);
        assert_eq!(&buf[19..25], b"abcde\0");
        assert_eq!(&buf[32..40], &[0; 8], "status 0 and reserved 0");
        // The classic statx fields (offsets 0 to 0x90) and the mount id and
        // direct-I/O alignments after them are the pattern's bytes.
        let ours = &buf[40..];
        // (Offsets from the kernel's include/uapi/linux/stat.h.)
        assert_eq!(ours[0..4], [3, 4, 5, 6], "stx_mask");
        assert_eq!(ours[0x20], 3 + 0x20, "stx_ino's first byte");
        assert_eq!(ours[0x78], 3 + 0x78, "stx_mtime.tv_nsec's first byte");
        assert_eq!(ours[0x9f], 3 + 0x9f, "stx_dio_offset_align's last byte");
        // The padding after stx_mode and after a timestamp's nanoseconds,
        // and the fields after stx_dio_offset_align, stay zero.
        assert_eq!(ours[0x1e..0x20], [0, 0]);
        assert_eq!(ours[0x7c..0x80], [0, 0, 0, 0]);
        assert!(ours[0xa0..].iter().all(|&b| b == 0));
    }

    #[test]
    fn parses_stat_and_error_records_in_sequence() {
        let stx = patterned_statx(40);
        let mut buf = record(b"one", Ok(&stx));
        encode_plus(
            &mut buf,
            10,
            200,
            libc::DT_DIR,
            b"..",
            Err(libc::EOPNOTSUPP),
        );
        encode_plus(
            &mut buf,
            11,
            300,
            libc::DT_LNK,
            &[b'x'; 255],
            Err(libc::ENOENT),
        );
        let entries: Vec<_> = DirentPlusIter::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].name_bytes(), b"one");
        assert_eq!(entries[0].file_type(), FileType::Regular);
        assert_eq!((entries[0].ino(), entries[0].offset()), (9, 100));
        let got = entries[0].stat().unwrap();
        assert_eq!(got.stx_ino, stx.stx_ino);
        assert_eq!(got.stx_mode, stx.stx_mode);
        assert_eq!(got.stx_mtime.tv_nsec, stx.stx_mtime.tv_nsec);
        assert_eq!(got.stx_dio_offset_align, stx.stx_dio_offset_align);
        assert!(entries[1].is_dot_or_dotdot());
        let e = entries[1].stat().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
        assert_eq!(entries[2].name_bytes().len(), 255);
        assert_eq!(entries[2].d_type(), libc::DT_LNK);
        let e = entries[2].stat().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(entries[2].dirent().offset(), 300);
    }

    #[test]
    fn debug_names_the_entry_and_its_inode_or_error() {
        let stx = patterned_statx(1);
        let buf = record(b"f", Ok(&stx));
        let shown = format!("{:?}", DirentPlusIter::new(&buf).next().unwrap().unwrap());
        assert!(
            shown.contains(&format!("stx_ino: {}", stx.stx_ino)),
            "{shown}"
        );
        let buf = record(b"g", Err(libc::EACCES));
        let shown = format!("{:?}", DirentPlusIter::new(&buf).next().unwrap().unwrap());
        assert!(
            shown.contains("\"g\"") && shown.contains("error"),
            "{shown}"
        );
    }

    /// The longest name a 16-bit d_reclen leaves room for with the tail.
    #[test]
    fn the_longest_name_a_record_can_describe_is_kept_whole() {
        let longest = u16::MAX as usize / 8 * 8 - TAIL_LEN - dirent::HEADER_LEN - 1;
        let name = vec![0xc3; longest];
        let buf = record(&name, Err(libc::EIO));
        assert_eq!(buf.len(), u16::MAX as usize / 8 * 8);
        let entry = DirentPlusIter::new(&buf).next().unwrap().unwrap();
        assert_eq!(entry.name_bytes(), &name[..]);
    }

    #[test]
    #[should_panic(expected = "name too long for a readdirplus record")]
    fn encode_refuses_a_name_no_record_can_hold() {
        let name = vec![b'x'; u16::MAX as usize - TAIL_LEN];
        encode_plus(&mut Vec::new(), 1, 1, libc::DT_REG, &name, Err(libc::EIO));
    }

    #[test]
    #[should_panic(expected = "errno 4096 out of range")]
    fn encode_refuses_an_errno_out_of_range() {
        encode_plus(&mut Vec::new(), 1, 1, libc::DT_REG, b"a", Err(4096));
    }

    #[test]
    fn a_plain_record_is_too_short() {
        let mut buf = Vec::new();
        dirent::encode(&mut buf, 1, 1, libc::DT_REG, b"plain");
        buf.resize(MIN_RECORD_LEN, 0);
        let err = first_error(&buf);
        assert_eq!(
            (err.kind(), err.position()),
            (ParseErrorKind::RecordTooShort, 0)
        );
    }

    #[test]
    fn zero_reclen_is_an_error_not_a_loop() {
        let mut buf = record(b"a", Err(libc::EIO));
        buf[16..18].copy_from_slice(&[0, 0]);
        assert_eq!(first_error(&buf).kind(), ParseErrorKind::RecordTooShort);
    }

    #[test]
    fn a_gap_between_name_and_tail_is_misplaced() {
        // A 3-byte name padded to 24, but d_reclen says the tail starts at
        // 32: 8 bytes would be skipped, or the statx read from the wrong place.
        let mut buf = record(b"abc", Err(libc::EIO));
        buf.splice(24..24, [0u8; 8]);
        buf[16..18].copy_from_slice(&((24 + 8 + TAIL_LEN) as u16).to_ne_bytes());
        let err = first_error(&buf);
        assert_eq!(err.kind(), ParseErrorKind::PlusTailMisplaced);
    }

    #[test]
    fn a_name_running_into_the_tail_is_unterminated() {
        let mut buf = record(b"abcd", Err(libc::EIO));
        for b in &mut buf[dirent::HEADER_LEN..status_at(b"abcd")] {
            *b = b'z';
        }
        assert_eq!(first_error(&buf).kind(), ParseErrorKind::UnterminatedName);
    }

    #[test]
    fn reclen_past_end_and_misaligned() {
        // Longer than the shortest record, so that one byte less is
        // still long enough.
        let mut buf = record(b"abcdefghij", Err(libc::EIO));
        let len = buf.len();
        buf[16..18].copy_from_slice(&((len + 8) as u16).to_ne_bytes());
        assert_eq!(first_error(&buf).kind(), ParseErrorKind::RecordPastEnd);
        buf[16..18].copy_from_slice(&((len - 1) as u16).to_ne_bytes());
        assert_eq!(first_error(&buf).kind(), ParseErrorKind::Misaligned);
    }

    #[test]
    fn statuses_that_are_not_an_errno_are_invalid() {
        let stx = patterned_statx(9);
        let at = status_at(b"name");
        for (error, reserved, with_stat) in [
            (1, 0, false),
            (-4096, 0, false),
            (i32::MIN, 0, false),
            (0, 1, true),
            (-libc::ENOENT, 0x8000_0000u32, false),
            // A failure whose statx is not zeroed.
            (-libc::ENOENT, 0, true),
        ] {
            let mut buf = record(b"name", Ok(&stx));
            if !with_stat {
                buf[at + 8..].fill(0);
            }
            buf[at..at + 4].copy_from_slice(&i32::to_ne_bytes(error));
            buf[at + 4..at + 8].copy_from_slice(&reserved.to_ne_bytes());
            let err = first_error(&buf);
            assert_eq!(
                err.kind(),
                ParseErrorKind::PlusInvalidStatus,
                "error {error}, reserved {reserved:#x}"
            );
        }
        // The limits themselves are errnos.
        for errno in [1, MAX_ERRNO] {
            let buf = record(b"name", Err(errno));
            let entry = DirentPlusIter::new(&buf).next().unwrap().unwrap();
            assert_eq!(entry.stat().unwrap_err().raw_os_error(), Some(errno));
        }
    }

    #[test]
    fn an_error_in_a_later_record_names_its_position_and_fuses() {
        let mut buf = record(b"ok", Err(libc::EIO));
        let second = buf.len();
        encode_plus(&mut buf, 1, 2, libc::DT_REG, b"bad", Err(libc::EIO));
        buf[second + status_at(b"bad") + 4] = 1;
        let mut it = DirentPlusIter::new(&buf);
        assert!(it.next().unwrap().is_ok());
        assert_eq!(it.position(), second);
        let err = it.next().unwrap().unwrap_err();
        assert_eq!(
            (err.kind(), err.position()),
            (ParseErrorKind::PlusInvalidStatus, second)
        );
        assert!(it.next().is_none(), "fused after an error");
        assert!(
            err.to_string().contains(&format!("at byte {second}")),
            "{err}"
        );
    }

    #[test]
    fn truncated_header_after_good_record() {
        let mut buf = record(b"ok", Err(libc::EIO));
        let end = buf.len();
        buf.extend_from_slice(&[1, 2, 3]);
        let err = first_error(&buf);
        assert_eq!(
            (err.kind(), err.position()),
            (ParseErrorKind::TruncatedHeader, end)
        );
    }
}
