//! Property tests of the readdirplus parser: it never panics, never hands
//! out a name outside the buffer, and always terminates, whatever the
//! bytes; it round-trips well-formed records; and each way of breaking one
//! record of a valid buffer is reported with its own error kind, at that
//! record's first byte, after the intact records before it.

use io_uring_getdents::dirent::{ParseErrorKind, HEADER_LEN};
use io_uring_getdents::plus::{encode_plus, DirentPlusIter, MIN_RECORD_LEN, STATX_LEN, TAIL_LEN};
use proptest::prelude::*;

fn name_strategy() -> impl Strategy<Value = Vec<u8>> {
    // Every byte a name may hold: 1..=255 except '/'; up to FUSE's 1 024.
    let byte = (1u8..=254).prop_map(|b| if b == b'/' { 255 } else { b });
    proptest::collection::vec(byte, 1..=1024)
}

/// A record's statx, as bytes in the kernel's layout, or an errno.
fn stat_strategy() -> impl Strategy<Value = Result<Vec<u8>, i32>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), STATX_LEN).prop_map(Ok),
        (1..=4095i32).prop_map(Err),
    ]
}

/// The byte ranges of `struct statx` (include/uapi/linux/stat.h) that
/// `encode_plus` writes: every field up to `stx_dio_offset_align` but the
/// padding after `stx_mode` and after each timestamp's nanoseconds.
fn written(offset: usize) -> bool {
    offset < 0xa0
        && !(0x1e..0x20).contains(&offset)
        && !matches!(offset, 0x40..0x80 if offset % 16 >= 12)
}

fn statx_of(bytes: &[u8]) -> libc::statx {
    assert_eq!(bytes.len(), STATX_LEN);
    assert_eq!(std::mem::size_of::<libc::statx>(), STATX_LEN);
    // SAFETY: STATX_LEN initialised bytes, the size of libc::statx (checked
    // above), whose fields are integers: any bytes are a valid value.
    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<libc::statx>()) }
}

type Spec = (u64, u64, u8, Vec<u8>, Result<Vec<u8>, i32>);

fn encode_all(records: &[Spec]) -> (Vec<u8>, Vec<usize>) {
    let mut buf = Vec::new();
    let mut starts = Vec::new();
    for (ino, off, d_type, name, stat) in records {
        starts.push(buf.len());
        let stx = stat.as_ref().map(|bytes| statx_of(bytes)).map_err(|&e| e);
        encode_plus(
            &mut buf,
            *ino,
            *off,
            *d_type,
            name,
            stx.as_ref().map_err(|&e| e),
        );
    }
    (buf, starts)
}

fn check_bounds(buf: &[u8]) {
    let range = buf.as_ptr_range();
    let mut count = 0;
    for item in DirentPlusIter::new(buf) {
        count += 1;
        // Each record is at least MIN_RECORD_LEN bytes, so this bounds the loop.
        assert!(count <= buf.len() / MIN_RECORD_LEN + 1);
        if let Ok(entry) = item {
            let name = entry.name().to_bytes_with_nul().as_ptr_range();
            assert!(range.start <= name.start && name.end <= range.end);
            assert!(!entry.name_bytes().is_empty());
            let _ = entry.stat();
        }
    }
}

/// Ways to break one record.
#[derive(Clone, Copy, Debug)]
enum Break {
    /// d_reclen below the smallest readdirplus record.
    TooShort(u16),
    /// d_reclen plus 1 to 7.
    Misaligned(u16),
    /// d_reclen past the end of the buffer, by 8 to 64 bytes.
    PastEnd(u16),
    /// d_reclen 8 more, another record following: the tail is not where
    /// the name ends.
    Longer,
    /// d_reclen shorter by a multiple of 8 (still above the minimum): the
    /// name field ends before the name's NUL.
    Shorter(u16),
    /// The name's NUL and padding overwritten.
    NoNul,
    /// The first byte of the name NUL, or a byte of it '/'.
    Empty,
    Slash(prop::sample::Index),
    /// A status that is not 0 or -errno.
    BadError(i32),
    /// A nonzero reserved word.
    Reserved(u32),
    /// A failure whose statx is not zeroed.
    StatWithError(prop::sample::Index),
    /// The buffer cut inside the header (not at its start: that is the end
    /// of a valid buffer), or after it inside the record.
    CutHeader(u16),
    CutRecord(prop::sample::Index),
}

fn break_strategy() -> impl Strategy<Value = Break> {
    prop_oneof![
        (0..MIN_RECORD_LEN as u16).prop_map(Break::TooShort),
        (1..8u16).prop_map(Break::Misaligned),
        (1..=8u16).prop_map(Break::PastEnd),
        Just(Break::Longer),
        (1..=64u16).prop_map(Break::Shorter),
        Just(Break::NoNul),
        Just(Break::Empty),
        any::<prop::sample::Index>().prop_map(Break::Slash),
        prop_oneof![1..=i32::MAX, i32::MIN..=-4096].prop_map(Break::BadError),
        (1..=u32::MAX).prop_map(Break::Reserved),
        any::<prop::sample::Index>().prop_map(Break::StatWithError),
        (1..HEADER_LEN as u16).prop_map(Break::CutHeader),
        any::<prop::sample::Index>().prop_map(Break::CutRecord),
    ]
}

/// Breaks the record at `start` (of `reclen` bytes, holding `name`) in
/// `buf`, and returns the kind the parser must report, or `None` where this
/// break does not apply to this record.
fn apply(
    buf: &mut Vec<u8>,
    start: usize,
    reclen: usize,
    name: &[u8],
    how: Break,
) -> Option<ParseErrorKind> {
    let set_reclen = |buf: &mut Vec<u8>, len: usize| {
        buf[start + 16..start + 18].copy_from_slice(&u16::try_from(len).unwrap().to_ne_bytes());
    };
    let status = start + reclen - TAIL_LEN;
    let is_last = start + reclen == buf.len();
    Some(match how {
        Break::TooShort(len) => {
            set_reclen(buf, len.into());
            ParseErrorKind::RecordTooShort
        }
        Break::Misaligned(by) => {
            set_reclen(buf, reclen + usize::from(by));
            ParseErrorKind::Misaligned
        }
        Break::PastEnd(eighths) => {
            let len = buf.len() - start + 8 * usize::from(eighths);
            if len > usize::from(u16::MAX) {
                return None;
            }
            set_reclen(buf, len);
            ParseErrorKind::RecordPastEnd
        }
        Break::Longer => {
            if is_last {
                return None;
            }
            set_reclen(buf, reclen + 8);
            ParseErrorKind::PlusTailMisplaced
        }
        Break::Shorter(eighths) => {
            let len = reclen.checked_sub(8 * usize::from(eighths))?;
            if len < MIN_RECORD_LEN {
                return None;
            }
            set_reclen(buf, len);
            ParseErrorKind::UnterminatedName
        }
        Break::NoNul => {
            buf[start + HEADER_LEN + name.len()..status].fill(b'n');
            ParseErrorKind::UnterminatedName
        }
        Break::Empty => {
            buf[start + HEADER_LEN] = 0;
            ParseErrorKind::InvalidName
        }
        Break::Slash(at) => {
            buf[start + HEADER_LEN + at.index(name.len())] = b'/';
            ParseErrorKind::InvalidName
        }
        Break::BadError(error) => {
            buf[status..status + 4].copy_from_slice(&error.to_ne_bytes());
            ParseErrorKind::PlusInvalidStatus
        }
        Break::Reserved(value) => {
            buf[status + 4..status + 8].copy_from_slice(&value.to_ne_bytes());
            ParseErrorKind::PlusInvalidStatus
        }
        Break::StatWithError(at) => {
            buf[status..status + 4].copy_from_slice(&(-libc::ENOENT).to_ne_bytes());
            buf[status + 8 + at.index(STATX_LEN)] = 1;
            ParseErrorKind::PlusInvalidStatus
        }
        Break::CutHeader(keep) => {
            buf.truncate(start + usize::from(keep));
            ParseErrorKind::TruncatedHeader
        }
        Break::CutRecord(at) => {
            buf.truncate(start + HEADER_LEN + at.index(reclen - HEADER_LEN));
            ParseErrorKind::RecordPastEnd
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..2000)) {
        check_bounds(&buf);
    }

    /// Arbitrary bytes behind valid headers, so that the tail checks, not
    /// the length checks, see most of them.
    #[test]
    fn arbitrary_records_never_panic(
        records in proptest::collection::vec(
            (1..=64usize, proptest::collection::vec(any::<u8>(), 0..400)), 1..6),
    ) {
        let mut buf = Vec::new();
        for (eighths, body) in records {
            let reclen = MIN_RECORD_LEN - 8 + 8 * eighths;
            let start = buf.len();
            buf.extend_from_slice(&[7; 16]);
            buf.extend_from_slice(&(reclen as u16).to_ne_bytes());
            buf.push(libc::DT_REG);
            buf.extend_from_slice(&body);
            buf.resize(start + reclen, 0);
        }
        check_bounds(&buf);
    }

    #[test]
    fn round_trip(records in proptest::collection::vec(
        (any::<u64>(), any::<u64>(), any::<u8>(), name_strategy(), stat_strategy()), 0..12)) {
        let (buf, starts) = encode_all(&records);
        let parsed: Vec<_> = DirentPlusIter::new(&buf).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(parsed.len(), records.len());
        let mut again = Vec::new();
        for ((p, (ino, off, d_type, name, stat)), start) in parsed.iter().zip(&records).zip(&starts) {
            prop_assert_eq!(p.ino(), *ino);
            prop_assert_eq!(p.offset(), *off);
            prop_assert_eq!(p.d_type(), *d_type);
            prop_assert_eq!(p.name_bytes(), &name[..]);
            let tail = start + (HEADER_LEN + name.len() + 1).next_multiple_of(8);
            let statx = &buf[tail + 8..tail + TAIL_LEN];
            match (p.stat(), stat) {
                (Ok(got), Ok(bytes)) => {
                    // Every written byte where the kernel's layout puts it,
                    // nothing else.
                    for (i, (&ours, &want)) in statx.iter().zip(bytes).enumerate() {
                        prop_assert_eq!(ours, if written(i) { want } else { 0 }, "statx byte {:#x}", i);
                    }
                    let want = statx_of(bytes);
                    prop_assert_eq!(got.stx_ino, want.stx_ino);
                    prop_assert_eq!(got.stx_mode, want.stx_mode);
                    prop_assert_eq!(got.stx_size, want.stx_size);
                    prop_assert_eq!(got.stx_mtime.tv_sec, want.stx_mtime.tv_sec);
                    prop_assert_eq!(got.stx_dev_minor, want.stx_dev_minor);
                    encode_plus(&mut again, p.ino(), p.offset(), p.d_type(), p.name_bytes(), Ok(&got));
                }
                (Err(got), Err(errno)) => {
                    prop_assert_eq!(got.raw_os_error(), Some(*errno));
                    prop_assert_eq!(&buf[tail..tail + 4], &(-errno).to_ne_bytes());
                    prop_assert!(statx.iter().all(|&b| b == 0));
                    encode_plus(&mut again, p.ino(), p.offset(), p.d_type(), p.name_bytes(), Err(*errno));
                }
                (got, want) => prop_assert!(false, "parsed {:?}, encoded {:?}", got, want.as_ref().map(|_| ())),
            }
        }
        // What the parser hands out encodes to the same bytes.
        prop_assert_eq!(again, buf);
    }

    #[test]
    fn each_malformed_record_is_reported_where_it_starts(
        records in proptest::collection::vec(
            (any::<u64>(), any::<u64>(), any::<u8>(), name_strategy(), stat_strategy()), 1..6),
        which in any::<prop::sample::Index>(),
        how in break_strategy(),
    ) {
        let (mut buf, starts) = encode_all(&records);
        let k = which.index(records.len());
        let start = starts[k];
        let reclen = starts.get(k + 1).copied().unwrap_or(buf.len()) - start;
        let Some(kind) = apply(&mut buf, start, reclen, &records[k].3, how) else {
            return Ok(());
        };
        let mut iter = DirentPlusIter::new(&buf);
        for (i, (ino, off, _, name, _)) in records[..k].iter().enumerate() {
            let entry = iter.next().unwrap().unwrap_or_else(|e| panic!("intact record {i}: {e}"));
            prop_assert_eq!((entry.ino(), entry.offset()), (*ino, *off));
            prop_assert_eq!(entry.name_bytes(), &name[..]);
        }
        let err = iter.next().unwrap().unwrap_err();
        prop_assert_eq!((err.kind(), err.position()), (kind, start), "{:?}", how);
        prop_assert!(iter.next().is_none(), "fused after an error");
    }

    #[test]
    fn corrupted_valid_buffers_never_panic(
        records in proptest::collection::vec(
            (any::<u64>(), any::<u64>(), any::<u8>(), name_strategy(), stat_strategy()), 1..6),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let (mut buf, _) = encode_all(&records);
        for (at, value) in flips {
            let i = at.index(buf.len());
            buf[i] = value;
        }
        let end = cut.index(buf.len() + 1);
        check_bounds(&buf[..end]);
    }
}
