//! The `std` engine: one thread on `std::fs`, for comparison.
//!
//! `std::fs` has no `openat`, so a directory is opened through its
//! parent's descriptor as `/proc/self/fd/N/name` (`O_NOFOLLOW` applies to
//! `name`): like the other engines it has no `PATH_MAX` limit and stays in
//! its tree. Entries come from `read_dir`, whose `metadata` stats relative
//! to the directory's descriptor. Needs `/proc`.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::{DirEntry, Metadata, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirEntryExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use io_uring_getdents::dirent::FileType;

use crate::engine::{Shared, Worker};
use crate::node::DirNode;
use crate::sys::Stat;
use crate::totals::Accumulator;
use crate::{Op, VisitorBuilder};

/// Opens `name` below `parent` through `/proc/self/fd`, or `name` as a
/// path without a parent.
pub(crate) fn open_proc(parent: Option<BorrowedFd<'_>>, name: &CStr) -> io::Result<OwnedFd> {
    let path = match parent {
        None => PathBuf::from(OsStr::from_bytes(name.to_bytes())),
        Some(fd) => {
            let mut bytes = format!("/proc/self/fd/{}/", fd.as_raw_fd()).into_bytes();
            bytes.extend_from_slice(name.to_bytes());
            PathBuf::from(OsString::from_vec(bytes))
        }
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)?;
    Ok(file.into())
}

/// The path that reads the directory behind `fd`.
pub(crate) fn proc_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The stat fields of a `std` metadata.
pub(crate) fn stat_of(meta: &Metadata) -> Stat {
    Stat {
        mode: meta.mode(),
        nlink: meta.nlink(),
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        blocks: meta.blocks(),
    }
}

/// The `DT_*` value of a `std` file type.
pub(crate) fn d_type_of(ft: std::fs::FileType) -> u8 {
    FileType::from(ft).d_type()
}

/// A name as the C string [`DirNode`] keeps (directory entries never hold
/// NUL).
pub(crate) fn c_name(name: &OsStr) -> CString {
    CString::new(name.as_bytes()).expect("directory entry names hold no NUL")
}

/// Walks below `root` (already counted) on this thread, depth first.
pub(crate) fn walk(
    shared: &Arc<Shared>,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let mut worker = Worker::new(shared, visitors.build());
    let mut stack = vec![root];
    let mut entries: Vec<DirEntry> = Vec::new();
    while let Some(dir) = stack.pop() {
        if shared.interrupted() {
            break;
        }
        worker.enter(&dir);
        let fd = match dir.open(open_proc, &shared.budget) {
            Ok(fd) => fd,
            Err(cause) => {
                worker.dir_error(Op::Open, cause);
                worker.leave(shared);
                continue;
            }
        };
        entries.clear();
        match std::fs::read_dir(proc_path(&fd)) {
            Ok(read) => {
                for entry in read {
                    match entry {
                        Ok(entry) => entries.push(entry),
                        Err(cause) => {
                            worker.dir_error(Op::Read, cause);
                            break;
                        }
                    }
                }
            }
            Err(cause) => worker.dir_error(Op::Read, cause),
        }
        if shared.inode_order(entries.len()) {
            entries.sort_unstable_by_key(|e| e.ino());
        }
        let mut children = 0;
        for (i, entry) in entries.drain(..).enumerate() {
            if i % 1024 == 1023 && shared.interrupted() {
                break;
            }
            let name = entry.file_name();
            let d_type = entry.file_type().map_or(libc::DT_UNKNOWN, d_type_of);
            let st = if shared.needs_stat(d_type) {
                match entry.metadata() {
                    Ok(meta) => Some(stat_of(&meta)),
                    Err(cause) => {
                        worker.entry_error(name.as_bytes(), Op::Stat, cause);
                        continue;
                    }
                }
            } else {
                None
            };
            if worker.entry(shared, name.as_bytes(), d_type, st.as_ref()) {
                stack.push(DirNode::child(&dir, &c_name(&name)));
                children += 1;
            }
        }
        // Single thread: no child is opened before this runs.
        dir.keep(fd, children, &shared.budget);
        worker.leave(shared);
    }
    worker.into_accumulator()
}
