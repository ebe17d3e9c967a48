//! Property tests: the parser never panics, never reads outside the buffer
//! (the slices it returns lie inside it), and always terminates, whatever
//! the bytes; and it round-trips well-formed records.

use io_uring_getdents::dirent::{encode, DirentIter, MIN_RECORD_LEN};
use proptest::prelude::*;

fn name_strategy() -> impl Strategy<Value = Vec<u8>> {
    // Every byte a name may hold: 1..=255 except '/'; lengths up to FUSE's
    // 1 024 bytes, beyond NAME_MAX.
    let byte = (1u8..=254).prop_map(|b| if b == b'/' { 255 } else { b });
    proptest::collection::vec(byte, 1..=1024)
}

fn check_bounds(buf: &[u8]) -> usize {
    let range = buf.as_ptr_range();
    let mut count = 0;
    for item in DirentIter::new(buf) {
        count += 1;
        // Each record is at least MIN_RECORD_LEN bytes, so this bounds the loop.
        assert!(count <= buf.len() / MIN_RECORD_LEN + 1);
        if let Ok(entry) = item {
            let name = entry.name().to_bytes_with_nul().as_ptr_range();
            assert!(range.start <= name.start && name.end <= range.end);
        }
    }
    count
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..600)) {
        check_bounds(&buf);
    }

    #[test]
    fn round_trip(records in proptest::collection::vec(
        (any::<u64>(), any::<u64>(), any::<u8>(), name_strategy()), 0..20)) {
        let mut buf = Vec::new();
        for (ino, off, d_type, name) in &records {
            encode(&mut buf, *ino, *off, *d_type, name);
        }
        let parsed: Vec<_> = DirentIter::new(&buf).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(parsed.len(), records.len());
        for (p, (ino, off, d_type, name)) in parsed.iter().zip(&records) {
            prop_assert_eq!(p.ino(), *ino);
            prop_assert_eq!(p.offset(), *off);
            prop_assert_eq!(p.d_type(), *d_type);
            prop_assert_eq!(p.name_bytes(), &name[..]);
        }
    }

    #[test]
    fn corrupted_valid_buffers_never_panic(
        names in proptest::collection::vec(name_strategy(), 1..8),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut buf = Vec::new();
        for (i, name) in names.iter().enumerate() {
            encode(&mut buf, i as u64, i as u64 + 1, 8, name);
        }
        for (at, value) in flips {
            let i = at.index(buf.len());
            buf[i] = value;
        }
        let end = cut.index(buf.len() + 1);
        check_bounds(&buf[..end]);
    }
}
