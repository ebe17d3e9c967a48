//! The `std` engine: one thread on `std::fs`, for comparison.
//!
//! `std::fs` has no `openat`, so a directory is opened through its
//! parent's descriptor as `/proc/self/fd/N/name` (`O_NOFOLLOW` applies to
//! `name`): like the other engines it has no `PATH_MAX` limit and stays in
//! its tree. Entries come from `read_dir`, whose `metadata` stats relative
//! to the directory's descriptor (with `-x`, a directory is stat'ed with
//! `statx` instead, for its mount id). Needs `/proc`.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::{DirEntry, Metadata, OpenOptions, ReadDir};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirEntryExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use io_uring_getdents::dirent::FileType;

use crate::engine::{window_full, Shared, Worker};
use crate::error::Op;
use crate::node::{Cursor, DirNode, ListingPlace};
use crate::sys::Stat;
use crate::totals::Accumulator;
use crate::visit::VisitorBuilder;

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
        .open(path)
        .map_err(|e| without_proc(parent, e))?;
    Ok(file.into())
}

/// `e`, or, when it came from a missing `/proc/self/fd` (`/proc` not
/// mounted, as in some containers), an error that names `/proc`: the
/// cause is not the directory being opened.
fn without_proc(parent: Option<BorrowedFd<'_>>, e: io::Error) -> io::Error {
    if parent.is_some()
        && e.kind() == io::ErrorKind::NotFound
        && !std::path::Path::new("/proc/self/fd").is_dir()
    {
        io::Error::new(
            io::ErrorKind::NotFound,
            "/proc/self/fd: No such file or directory (the std and tokio engines \
             open directories through /proc, which is not mounted; use --engine threads)",
        )
    } else {
        e
    }
}

/// The path that reads the directory behind `fd`.
pub(crate) fn proc_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The stat of a listed entry: `std`'s metadata, or with `-x` for a
/// directory a `statx` relative to `dir`, which also gives the mount id
/// (`-x` stops at bind mounts, which share the device of their source).
pub(crate) fn stat_entry(
    shared: &Shared,
    dir: BorrowedFd<'_>,
    name: &OsStr,
    d_type: u8,
    meta: impl FnOnce() -> io::Result<Metadata>,
) -> io::Result<Stat> {
    if stat_by_statx(shared, d_type) {
        crate::sys::statx(Some(dir), &c_name(name), shared.config.statx_mask())
    } else {
        meta().map(|m| Stat::from_metadata(&m))
    }
}

/// Whether an entry of type `d_type` is stated with `statx`: with `-x`,
/// a directory (or an entry of unknown type) needs the mount id, which
/// only `statx` gives.
pub(crate) fn stat_by_statx(shared: &Shared, d_type: u8) -> bool {
    shared.config.one_file_system && matches!(d_type, libc::DT_DIR | libc::DT_UNKNOWN)
}

/// A name as the C string [`DirNode`] keeps (directory entries never hold
/// NUL).
pub(crate) fn c_name(name: &OsStr) -> CString {
    CString::new(name.as_bytes()).expect("directory entry names hold no NUL")
}

/// Reads entries of `read` with their names into `entries` until a window
/// is full ([`window_full`]); true when the directory ended, its reading
/// failed (reported) or the walk was interrupted.
fn read_window(
    worker: &mut Worker<'_>,
    shared: &Shared,
    read: &mut ReadDir,
    entries: &mut Vec<(DirEntry, OsString, ListingPlace)>,
    seq: &mut u32,
) -> bool {
    let mut name_bytes = 0;
    while !window_full(entries.len(), name_bytes) {
        if shared.interrupted() {
            return true;
        }
        match read.next() {
            None => return true,
            Some(Ok(entry)) => {
                let name = entry.file_name();
                name_bytes += name.len();
                let place = ListingPlace::next(seq, entry.ino());
                entries.push((entry, name, place));
            }
            Some(Err(cause)) => {
                worker.dir_error(Op::Read, cause);
                return true;
            }
        }
    }
    false
}

/// Walks below `root` (already counted) on this thread, depth first.
pub(crate) fn walk(
    shared: &Arc<Shared>,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let mut worker = Worker::new(shared, visitors.build());
    let mut cursor = Cursor::default();
    let mut stack = vec![root];
    let mut entries: Vec<(DirEntry, OsString, ListingPlace)> = Vec::new();
    while let Some(dir) = stack.pop() {
        if shared.interrupted() {
            break;
        }
        worker.enter(&dir);
        let fd = match dir.open(open_proc, &shared.budget, &mut cursor) {
            Ok(fd) => fd,
            Err(cause) => {
                worker.dir_error(Op::Open, cause);
                worker.end_dir(shared);
                continue;
            }
        };
        entries.clear();
        let mut listing = match std::fs::read_dir(proc_path(&fd)) {
            Ok(read) => Some(read),
            Err(cause) => {
                worker.dir_error(Op::Read, cause);
                None
            }
        };
        let (mut children, mut seq) = (0, 0u32);
        // A window at a time, so that a directory that never ends keeps one
        // in memory at most.
        while let Some(read) = listing.as_mut() {
            if read_window(&mut worker, shared, read, &mut entries, &mut seq) {
                listing = None;
                dir.listing_read(shared.listing_rule(u64::from(seq), fd.as_fd()));
            }
            if shared.inode_order(entries.len()) {
                entries.sort_unstable_by_key(|(e, _, _)| e.ino());
            }
            for (entry, name, place) in entries.drain(..) {
                // Every entry: one stat may take a long round trip.
                if shared.interrupted() {
                    break;
                }
                let d_type = entry
                    .file_type()
                    .map_or(libc::DT_UNKNOWN, |ft| FileType::from(ft).d_type());
                if shared.skips((&dir, fd.as_fd()), name.as_bytes(), entry.ino(), d_type) {
                    continue;
                }
                let st = if shared.needs_stat(d_type) {
                    match stat_entry(shared, fd.as_fd(), &name, d_type, || entry.metadata()) {
                        Ok(st) => Some(st),
                        Err(cause) => {
                            worker.stat_failed(shared, name.as_bytes(), d_type, cause);
                            continue;
                        }
                    }
                } else {
                    None
                };
                worker.at(place);
                if worker.entry(shared, name.as_bytes(), d_type, st.as_ref()) {
                    stack.push(DirNode::child_with_stat(
                        &dir,
                        &c_name(&name),
                        st.as_ref(),
                        place,
                    ));
                    children += 1;
                }
            }
        }
        // Single thread: no child is opened before this runs.
        dir.keep(fd, children, &shared.budget);
        worker.end_dir(shared);
    }
    worker.into_accumulator()
}
