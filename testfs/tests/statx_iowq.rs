//! io_uring STATX of the root of a testfs mount must not run in the task
//! that submits it. FUSE's `->getattr()` asks the server once the
//! attributes have expired, which with `ttl 0` is always, and the root of a
//! FUSE mount has no `->d_revalidate`: a kernel that called `->getattr()`
//! inline for every dentry without revalidation (the first version of the
//! series' STATX patch) made `io_uring_enter` wait for the server, and a
//! server using io_uring on its own mount would deadlock. The patched
//! kernel only reads attributes inline on filesystems that say their
//! `->getattr()` never waits (tmpfs, ext4), so here the request goes to an
//! io-wq worker. Without the patch (the host kernel) STATX always does.
//!
//! How it is seen: the server answers after half a second, so a request
//! that ran inline has its completion posted before `io_uring_enter`
//! returns, and one handed to io-wq cannot have it yet. Tests that cannot
//! mount here print "skipped: <why>".

mod common;

use std::ffi::CString;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use common::require_fuse;
use io_uring_getdents::io_uring::{opcode, types, IoUring};
use testfs::{Mount, Options};

/// The server's delay: long enough that no worker can have its reply
/// before the submitting call returns.
const DELAY: Duration = Duration::from_millis(500);

/// The io-wq workers of this process (threads named `iou-wrk-*`).
fn iowq_workers() -> usize {
    fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|task| {
            let comm = task.as_ref().unwrap().path().join("comm");
            fs::read_to_string(comm).is_ok_and(|c| c.starts_with("iou-wrk-"))
        })
        .count()
}

#[test]
fn statx_of_a_fuse_root_with_expired_attributes_goes_to_io_wq() {
    require_fuse!();
    let source = tempfile::tempdir().unwrap();
    fs::write(source.path().join("file"), b"x").unwrap();
    let at = tempfile::tempdir().unwrap();
    let options = Options::new().delay(DELAY).ttl(Duration::ZERO);
    let mount = Mount::new(source.path(), at.path(), &options).unwrap();
    let root = mount.mountpoint().to_path_buf();
    let want = fs::metadata(&root).unwrap();
    let root_fd = fs::File::open(&root).unwrap();
    let path = CString::new(root.as_os_str().as_bytes()).unwrap();
    let empty = CString::new("").unwrap();

    let mut ring = IoUring::new(4).unwrap();
    // By path (the lookup crosses into the mount), and as the walker stats
    // a directory it opened: its fd with "" and AT_EMPTY_PATH.
    let cases = [
        (libc::AT_FDCWD, path.as_ptr(), 0, "by path"),
        (
            root_fd.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            "by fd with AT_EMPTY_PATH",
        ),
    ];
    for (dirfd, name, flags, what) in cases {
        let before = mount.stats().getattr;
        // SAFETY: all-zero bytes are a valid statx (integers only).
        let mut stx: libc::statx = unsafe { std::mem::zeroed() };
        let sqe = opcode::Statx::new(
            types::Fd(dirfd),
            name,
            &mut stx as *mut libc::statx as *mut types::statx,
        )
        .flags(flags | libc::AT_SYMLINK_NOFOLLOW)
        .mask(libc::STATX_BASIC_STATS)
        .build()
        .user_data(1);
        // SAFETY: the name and the statx buffer outlive the request: it is
        // waited for below, before either is dropped.
        unsafe { ring.submission().push(&sqe).unwrap() };
        assert_eq!(ring.submit().unwrap(), 1);
        assert!(
            ring.completion().is_empty(),
            "STATX {what} of a FUSE root completed inside io_uring_enter: \
             the submitting task waited for the server"
        );
        ring.submit_and_wait(1).unwrap();
        let cqe = ring.completion().next().unwrap();
        assert_eq!(cqe.result(), 0, "STATX {what}");
        assert_eq!(stx.stx_ino, want.ino(), "STATX {what}");
        assert!(
            mount.stats().getattr > before,
            "STATX {what} did not reach the server: the test would prove nothing"
        );
    }
    assert!(iowq_workers() > 0, "no io-wq worker: where did STATX run?");
    drop(root_fd);
    mount.unmount().unwrap();
}
