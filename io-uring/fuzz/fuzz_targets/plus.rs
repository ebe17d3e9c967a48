//! Feeds arbitrary bytes to the readdirplus parser: it must terminate,
//! never panic, and only hand out names that lie inside the buffer.
#![no_main]

use io_uring_getdents::plus::{DirentPlusIter, MIN_RECORD_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let range = data.as_ptr_range();
    let mut records = 0usize;
    for item in DirentPlusIter::new(data) {
        records += 1;
        assert!(records <= data.len() / MIN_RECORD_LEN + 1, "parser did not advance");
        if let Ok(entry) = item {
            let name = entry.name().to_bytes_with_nul().as_ptr_range();
            assert!(range.start <= name.start && name.end <= range.end);
            assert!(!entry.name_bytes().is_empty());
            // A successful lookup's statx is copied out of the record, a
            // failed one's errno is in range.
            if let Err(e) = entry.stat() {
                assert!(matches!(e.raw_os_error(), Some(1..=4095)));
            }
        }
    }
});
