//! Walks a tree with plain `getdents64(2)` into a buffer of a chosen size
//! and counts the calls: `cargo run -p testfs --example getdents_walk --
//! --buf 65536 PATH`. Run on a testfs mount and compare with the mount's
//! READDIR counter to see how the caller's buffer size sets the size of the
//! requests FUSE sends (testfs/bench does the sweep).
//!
//! Output, one line: `dirs D entries E getdents G buffer B` (entries leave
//! out `.` and `..`; G counts every call, the final empty one included).

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::ExitCode;

use io_uring_getdents::dirent::{DirentIter, FileType};
use io_uring_getdents::syscall::{getdents64, open_dir_at};

/// Opens `name` inside `dir` as a directory without following a symlink,
/// so the walk stays inside its tree. `Ok(None)` when it is not a
/// directory (for `DT_UNKNOWN` entries, which need this probe).
fn open_subdir(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Option<OwnedFd>> {
    match open_dir_at(Some(dir), name) {
        Ok(fd) => Ok(Some(fd)),
        Err(err) if matches!(err.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => Ok(None),
        Err(err) => Err(err),
    }
}

#[derive(Default)]
struct Counts {
    dirs: u64,
    entries: u64,
    calls: u64,
}

fn walk(root: &str, buf_size: usize) -> Result<Counts, String> {
    let root_dir = File::open(root).map_err(|e| format!("{root}: {e}"))?;
    let mut stack = vec![(OwnedFd::from(root_dir), root.to_string())];
    let mut buf = vec![0u8; buf_size];
    let mut counts = Counts::default();
    while let Some((dir, path)) = stack.pop() {
        counts.dirs += 1;
        loop {
            let n = getdents64(dir.as_fd(), &mut buf).map_err(|e| format!("{path}: {e}"))?;
            counts.calls += 1;
            if n == 0 {
                break;
            }
            for entry in DirentIter::new(&buf[..n]) {
                let entry = entry.map_err(|e| format!("{path}: {e}"))?;
                if entry.is_dot_or_dotdot() {
                    continue;
                }
                counts.entries += 1;
                if matches!(entry.file_type(), FileType::Directory | FileType::Unknown) {
                    let child_path = format!("{path}/{}", entry.name_os().to_string_lossy());
                    match open_subdir(dir.as_fd(), entry.name()) {
                        Ok(Some(child)) => stack.push((child, child_path)),
                        Ok(None) => {}
                        Err(e) => return Err(format!("{child_path}: {e}")),
                    }
                }
            }
        }
    }
    Ok(counts)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut buf_size = 32 * 1024;
    let mut root = None;
    while let Some(arg) = args.next() {
        if arg == "--buf" {
            match args.next().and_then(|v| v.parse::<usize>().ok()) {
                Some(size) if size >= 512 => buf_size = size,
                _ => {
                    eprintln!("getdents_walk: --buf needs a size in bytes, at least 512");
                    return ExitCode::from(2);
                }
            }
        } else if root.is_none() && !arg.starts_with('-') {
            root = Some(arg);
        } else {
            eprintln!("getdents_walk: unexpected argument {arg:?}\nusage: getdents_walk [--buf BYTES] PATH");
            return ExitCode::from(2);
        }
    }
    let Some(root) = root else {
        eprintln!("usage: getdents_walk [--buf BYTES] PATH");
        return ExitCode::from(2);
    };
    match walk(&root, buf_size) {
        Ok(c) => {
            println!(
                "dirs {} entries {} getdents {} buffer {buf_size}",
                c.dirs, c.entries, c.calls
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("getdents_walk: {err}");
            ExitCode::from(1)
        }
    }
}
