//! What the tests of testfs share: the rule for a test that needs a
//! mount where FUSE cannot be used.

/// Returns from the test, printing "skipped: <why>", where testfs cannot
/// be mounted ([`testfs::cannot_mount`]): the test passes there.
macro_rules! require_fuse {
    () => {
        if let Some(why) = testfs::cannot_mount() {
            println!("skipped: {why}");
            return;
        }
    };
}

pub(crate) use require_fuse;
