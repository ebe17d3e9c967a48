//! The single-threaded lower bound: only the system calls a size total
//! needs, nothing else.
//!
//! ```text
//! floor PATH...
//! ```
//!
//! Per directory: `openat` (relative to the parent's fd, `O_NOFOLLOW |
//! O_DIRECTORY`), `getdents64` into 1 MiB until it returns 0, `close`. Per
//! entry: one `statx` relative to the directory fd. Prints, per path, the
//! entry count and the apparent and allocated byte totals with hard links
//! counted once, the way `du -sb` and `du -sB1` count them, so the output
//! can be checked against du before its time is trusted.

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;
use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

const BUF_LEN: usize = 1 << 20;

#[derive(Default)]
struct Totals {
    entries: u64,
    apparent: u64,
    allocated: u64,
    errors: u64,
    /// (dev, ino) of files with more than one link, to count them once.
    seen: HashSet<(u32, u32, u64)>,
}

impl Totals {
    fn add(&mut self, stx: &libc::statx) {
        self.entries += 1;
        let is_dir = u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR;
        if !is_dir
            && stx.stx_nlink > 1
            && !self
                .seen
                .insert((stx.stx_dev_major, stx.stx_dev_minor, stx.stx_ino))
        {
            return;
        }
        self.apparent += stx.stx_size;
        self.allocated += stx.stx_blocks * 512;
    }
}

fn main() -> ExitCode {
    let paths: Vec<_> = std::env::args_os().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: floor PATH...");
        return ExitCode::from(2);
    }
    let mut failed = false;
    let mut buf = vec![0u8; BUF_LEN];
    for path in paths {
        let mut t = Totals::default();
        let Ok(cpath) = CString::new(path.as_bytes()) else {
            eprintln!(
                "floor: {}: path contains a NUL byte",
                path.to_string_lossy()
            );
            return ExitCode::from(2);
        };
        let shown = path.to_string_lossy();
        // SAFETY: AT_FDCWD is a valid dirfd value; `cpath` is a live C string.
        let cwd = unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) };
        match stat_at(cwd, &cpath) {
            Ok(stx) => {
                t.add(&stx);
                if u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR {
                    match open_dir(cwd, &cpath) {
                        Ok(fd) => walk(fd, &shown, &mut buf, &mut t),
                        Err(e) => {
                            eprintln!("floor: {shown}: {e}");
                            t.errors += 1;
                        }
                    }
                }
            }
            Err(e) => {
                eprintln!("floor: {shown}: {e}");
                t.errors += 1;
            }
        }
        failed |= t.errors > 0;
        println!(
            "{} entries, {} bytes, {} bytes allocated\t{shown}",
            t.entries, t.apparent, t.allocated
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Reads one directory completely, stats each entry, then descends: the
/// directory's fd stays open during the descent (children are opened
/// relative to it), so at most one fd per level is open.
fn walk(dir: OwnedFd, shown: &str, buf: &mut [u8], t: &mut Totals) {
    let mut subdirs: Vec<CString> = Vec::new();
    loop {
        let n = match getdents64(dir.as_fd(), buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                eprintln!("floor: {shown}: reading the directory: {e}");
                t.errors += 1;
                break;
            }
        };
        for entry in DirentIter::new(&buf[..n]) {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    eprintln!("floor: {shown}: {e}");
                    t.errors += 1;
                    break;
                }
            };
            if entry.is_dot_or_dotdot() {
                continue;
            }
            match stat_at(dir.as_fd(), entry.name()) {
                Ok(stx) => {
                    t.add(&stx);
                    if u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR {
                        subdirs.push(entry.name().to_owned());
                    }
                }
                Err(e) => {
                    eprintln!("floor: {shown}/{}: {e}", entry.name_os().to_string_lossy());
                    t.errors += 1;
                }
            }
        }
    }
    for name in subdirs {
        let child = format!("{shown}/{}", name.to_string_lossy());
        match open_dir(dir.as_fd(), &name) {
            Ok(fd) => walk(fd, &child, buf, t),
            Err(e) => {
                eprintln!("floor: {child}: {e}");
                t.errors += 1;
            }
        }
    }
}

fn open_dir(parent: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a NUL-terminated string alive for the call; the
    // parent fd is valid (BorrowedFd).
    let fd = unsafe {
        libc::openat(
            parent.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::statx> {
    let mut stx = MaybeUninit::<libc::statx>::uninit();
    // SAFETY: `name` is a live C string, `stx` points to writable memory of
    // the struct's size, and the dir fd is valid (BorrowedFd).
    let ret = unsafe {
        libc::statx(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_STATX_SYNC_AS_STAT,
            libc::STATX_TYPE
                | libc::STATX_SIZE
                | libc::STATX_BLOCKS
                | libc::STATX_NLINK
                | libc::STATX_INO,
            stx.as_mut_ptr(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statx succeeded, so the kernel filled the whole struct.
    Ok(unsafe { stx.assume_init() })
}
