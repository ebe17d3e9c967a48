//! Chains of directories tens of thousands deep: the walk's memory grows
//! with the depth, not its square, and the bridge's thread survives the
//! end of such a walk.

mod common;

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::Mutex;

use io_uring_getdents::syscall::open_dir_at;
use tokio_uring_getdents::fs::{BackendChoice, Dir};
use tokio_uring_getdents::walk::WalkBuilder;

/// The tests measure the process's peak memory: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A chain `root/a/a/.../a` of `depth` directories, built and removed
/// with descriptors (its paths are far beyond `PATH_MAX`).
struct Chain {
    root: tempfile::TempDir,
    depth: usize,
}

impl Chain {
    fn new(depth: usize) -> Chain {
        let root = tempfile::tempdir().unwrap();
        let mut fd = open_dir_at(None, &cstr(root.path())).unwrap();
        for _ in 0..depth {
            // SAFETY: a NUL-terminated name and a descriptor open for the call.
            let made = unsafe { libc::mkdirat(fd.as_raw_fd(), c"a".as_ptr(), 0o755) };
            assert_eq!(made, 0, "mkdirat: {}", std::io::Error::last_os_error());
            fd = open_dir_at(Some(fd.as_fd()), c"a").unwrap();
        }
        Chain { root, depth }
    }
}

impl Drop for Chain {
    /// Down to the bottom, then up through `..`, removing on the way: no
    /// recursion, two descriptors.
    fn drop(&mut self) {
        let Ok(mut fd) = open_dir_at(None, &cstr(self.root.path())) else {
            return;
        };
        for _ in 0..self.depth {
            match open_dir_at(Some(fd.as_fd()), c"a") {
                Ok(child) => fd = child,
                Err(_) => break,
            }
        }
        // One `..` and one removal per level.
        for _ in 0..self.depth {
            // SAFETY: as above; `..` of a directory opened by descriptor.
            let up = unsafe { libc::openat(fd.as_raw_fd(), c"..".as_ptr(), libc::O_DIRECTORY) };
            if up < 0 {
                return;
            }
            // SAFETY: a new descriptor nothing else owns.
            fd = unsafe { OwnedFd::from_raw_fd(up) };
            // SAFETY: as above.
            if unsafe { libc::unlinkat(fd.as_raw_fd(), c"a".as_ptr(), libc::AT_REMOVEDIR) } != 0 {
                return;
            }
        }
    }
}

fn cstr(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap()
}

/// The process's peak resident memory so far, in KiB (`VmHWM`).
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn memory_grows_with_the_depth_not_its_square() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const DEPTH: usize = 10_000;
    let chain = Chain::new(DEPTH);
    for choice in common::backends() {
        let before = peak_kib();
        let deepest = tokio_uring::start(async {
            let builder = WalkBuilder::new(chain.root.path()).dir_builder(common::builder(choice));
            let mut walk = builder.build();
            let mut deepest = 0;
            while let Some(entry) = walk.next().await {
                deepest = deepest.max(entry.unwrap().depth());
            }
            deepest
        });
        let grown = peak_kib().saturating_sub(before);
        assert_eq!(deepest, DEPTH, "{choice:?}");
        // A whole path per level would be DEPTH² × 2 bytes, 200 MB; a
        // name and a node per level are a few hundred bytes each.
        assert!(grown < 64 * 1024, "{choice:?}: peak grew by {grown} KiB");
    }
}

#[test]
fn the_bridge_survives_a_70_000_level_chain() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The test VM (where GETDENTS is required) emulates its CPU: 70 000
    // thread hops there take longer than its per-binary time limit. The
    // unit tests of `walk::node` and `walk::entry` drop 200 000-level
    // chains on a 256 KiB stack, there too.
    if common::getdents_required() {
        eprintln!("skipped: a 70 000-level chain is too slow under the test VM's emulation");
        return;
    }
    const DEPTH: usize = 70_000;
    let chain = Chain::new(DEPTH);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (count, deepest) = runtime.block_on(async {
        // The fallback: the overflow was in dropping the chain of
        // parents, the same on both backends, and GETDENTS opens build each
        // directory's whole path (time growing with the square of the
        // depth, too slow for the test VM at this depth).
        let mut walk = WalkBuilder::new(chain.root.path())
            .dir_builder(Dir::builder().backend(BackendChoice::Fallback))
            .spawn()
            .unwrap();
        let (mut count, mut deepest) = (0, 0);
        while let Some(entry) = walk.next().await {
            count += 1;
            deepest = deepest.max(entry.unwrap().depth());
        }
        (count, deepest)
    });
    // The root and one directory per level; the walk ended normally (a
    // stack overflow on the walk's thread aborts the whole process).
    assert_eq!((count, deepest), (DEPTH + 1, DEPTH));
}
