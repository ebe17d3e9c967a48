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
use io_uring_getdents::syscall::{getdents64, open_dir_at, statx};
use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
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
        match stat_at(None, &cpath) {
            Ok(stx) => {
                t.add(&stx);
                if u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR {
                    match open_dir_at(None, &cpath) {
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
            match stat_at(Some(dir.as_fd()), entry.name()) {
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
        match open_dir_at(Some(dir.as_fd()), &name) {
            Ok(fd) => walk(fd, &child, buf, t),
            Err(e) => {
                eprintln!("floor: {child}: {e}");
                t.errors += 1;
            }
        }
    }
}

/// The fields the totals need, of `name` relative to `dir` (the working
/// directory if `None`), never following a symbolic link.
fn stat_at(dir: Option<BorrowedFd<'_>>, name: &CStr) -> io::Result<libc::statx> {
    statx(
        dir,
        name,
        libc::AT_STATX_SYNC_AS_STAT,
        libc::STATX_TYPE
            | libc::STATX_SIZE
            | libc::STATX_BLOCKS
            | libc::STATX_NLINK
            | libc::STATX_INO,
    )
}
