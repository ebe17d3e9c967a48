//! Deleting what the browser shows, by the walk's rules: each level
//! opened relative to its parent's descriptor with `O_NOFOLLOW |
//! O_DIRECTORY` from the root's descriptor (kept open since the start),
//! each checked to be the directory the walk saw (same device and inode),
//! files unlinked relative to their directory, a directory emptied
//! relative to descriptors before it is removed. A level swapped for a
//! symlink fails to open (`ELOOP`, `ENOTDIR`) and the deletion is refused.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use io_uring_getdents::dirent::{DirentIter, FileType};
use io_uring_getdents::syscall::{getdents64, open_dir_at, statx};

use crate::output;

/// What to delete in the directory reached by the levels.
pub enum Target<'a> {
    /// A file, symlink or other non-directory, with the inode the walk saw.
    Entry { name: &'a [u8], ino: u64 },
    /// A directory and everything in it, with the (device, inode) the walk
    /// saw (`None`: its stat failed then, so nothing to check against).
    Dir {
        name: &'a [u8],
        id: Option<(u64, u64)>,
    },
}

/// A directory level from the root down: its name and the (device,
/// inode) the walk saw.
pub type Level = (Vec<u8>, Option<(u64, u64)>);

/// Deletes `target` in the directory reached from `root` (whose path
/// `root_path` names it in messages) through `levels`. The error names
/// the path and says why.
pub fn delete(
    root: BorrowedFd<'_>,
    root_path: &Path,
    levels: &[Level],
    target: &Target<'_>,
) -> Result<(), String> {
    let mut path = root_path.to_owned();
    let mut parent: Option<OwnedFd> = None;
    for (name, id) in levels {
        path.push(std::ffi::OsStr::from_bytes(name));
        let at = parent.as_ref().map_or(root, AsFd::as_fd);
        let fd = open_checked(at, name, *id).map_err(|why| say(&path, &why))?;
        parent = Some(fd);
    }
    let dir = parent.as_ref().map_or(root, AsFd::as_fd);
    match *target {
        Target::Entry { name, ino } => {
            path.push(std::ffi::OsStr::from_bytes(name));
            let cname = cstring(name).map_err(|why| say(&path, &why))?;
            let stx = statx(Some(dir), &cname, 0, libc::STATX_TYPE | libc::STATX_INO)
                .map_err(|e| say(&path, &e.to_string()))?;
            if u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR || stx.stx_ino != ino {
                return Err(say(&path, "replaced since the scan: not deleted"));
            }
            unlink(dir, &cname, 0).map_err(|e| say(&path, &e.to_string()))
        }
        Target::Dir { name, id } => {
            path.push(std::ffi::OsStr::from_bytes(name));
            let fd = open_checked(dir, name, id).map_err(|why| say(&path, &why))?;
            remove_tree(dir, &path, name, fd)
        }
    }
}

fn say(path: &Path, why: &str) -> String {
    format!("{}: {why}", output::human_path(path))
}

fn cstring(name: &[u8]) -> Result<CString, String> {
    CString::new(name).map_err(|_| "a name with a NUL byte".to_owned())
}

/// Opens the directory `name` in `at` without following a symlink, and
/// checks it is the one the walk saw.
fn open_checked(
    at: BorrowedFd<'_>,
    name: &[u8],
    id: Option<(u64, u64)>,
) -> Result<OwnedFd, String> {
    let cname = cstring(name)?;
    let fd = open_dir_at(Some(at), &cname).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP | libc::ENOTDIR) => {
            "no longer a directory (a symlink or a file now?): not deleted".to_owned()
        }
        _ => e.to_string(),
    })?;
    if let Some(id) = id {
        if dir_id(fd.as_fd()).map_err(|e| e.to_string())? != id {
            return Err("another directory since the scan: not deleted".to_owned());
        }
    }
    Ok(fd)
}

/// The (device, inode) of an open directory, as the walk records them.
fn dir_id(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let stx = statx(Some(fd), c"", libc::AT_EMPTY_PATH, libc::STATX_INO)?;
    Ok((
        libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
        stx.stx_ino,
    ))
}

fn unlink(dir: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated and lives through the call; `dir`
    // is an open descriptor kept by the borrow.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A directory being emptied: its descriptor, its name in its parent, and
/// the subdirectories still to empty.
struct Emptying {
    fd: OwnedFd,
    name: CString,
    subdirs: Vec<CString>,
}

/// Removes the directory `name` (open as `fd`) in `parent` and all below
/// it, one level at a time, every step relative to a descriptor: each
/// directory's non-directories are unlinked as it is read, its
/// subdirectories opened with `O_NOFOLLOW` (one swapped for a symlink
/// meanwhile is unlinked as the symlink it is), emptied, then removed.
fn remove_tree(
    parent: BorrowedFd<'_>,
    path: &Path,
    name: &[u8],
    fd: OwnedFd,
) -> Result<(), String> {
    let mut at = path.to_owned();
    let name = cstring(name).map_err(|why| say(path, &why))?;
    let subdirs = clear(fd.as_fd(), &at)?;
    let mut stack = vec![Emptying { fd, name, subdirs }];
    while let Some(top) = stack.last_mut() {
        if let Some(sub) = top.subdirs.pop() {
            at.push(std::ffi::OsStr::from_bytes(sub.to_bytes()));
            match open_dir_at(Some(top.fd.as_fd()), &sub) {
                Ok(fd) => {
                    let subdirs = clear(fd.as_fd(), &at)?;
                    stack.push(Emptying {
                        fd,
                        name: sub,
                        subdirs,
                    });
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                    unlink(top.fd.as_fd(), &sub, 0).map_err(|e| say(&at, &e.to_string()))?;
                    at.pop();
                }
                Err(e) => return Err(say(&at, &e.to_string())),
            }
        } else {
            let done = stack.pop().expect("the loop saw it");
            let up = stack.last().map_or(parent, |l| l.fd.as_fd());
            unlink(up, &done.name, libc::AT_REMOVEDIR).map_err(|e| say(&at, &e.to_string()))?;
            at.pop();
        }
    }
    Ok(())
}

/// Unlinks every entry of `dir` that is not a directory; gives the names
/// of its subdirectories. The error names the path.
fn clear(dir: BorrowedFd<'_>, path: &Path) -> Result<Vec<CString>, String> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut names = Vec::new();
    let mut subdirs = Vec::new();
    loop {
        let n = getdents64(dir, &mut buf).map_err(|e| say(path, &e.to_string()))?;
        if n == 0 {
            break;
        }
        for entry in DirentIter::new(&buf[..n]) {
            let entry = entry.map_err(|e| say(path, &e.to_string()))?;
            if entry.is_dot_or_dotdot() {
                continue;
            }
            names.push((entry.name().to_owned(), entry.file_type()));
        }
    }
    for (name, kind) in names {
        let is_dir = match kind {
            FileType::Directory => true,
            FileType::Unknown => {
                let stx = statx(Some(dir), &name, 0, libc::STATX_TYPE).map_err(|e| {
                    say(
                        &path.join(std::ffi::OsStr::from_bytes(name.to_bytes())),
                        &e.to_string(),
                    )
                })?;
                u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR
            }
            _ => false,
        };
        if is_dir {
            subdirs.push(name);
        } else {
            unlink(dir, &name, 0).map_err(|e| {
                say(
                    &path.join(std::ffi::OsStr::from_bytes(name.to_bytes())),
                    &e.to_string(),
                )
            })?;
        }
    }
    Ok(subdirs)
}
