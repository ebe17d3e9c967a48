//! Deleting what the browser shows, never outside the tree it shows
//! (traverse/README.md says what that guarantees): every step relative to
//! a descriptor from the root's (the one the walk ran from), each level
//! and target checked to be what the walk saw (device and inode), the
//! recursive delete kept on its mount (`openat2` `RESOLVE_NO_XDEV`, mount
//! IDs compared) with a bounded number of descriptors (back up through
//! `..`, checked, as fts does), going on past errors as `rm -rf` does.

use std::ffi::{CStr, CString, OsStr};
use std::fmt::Display;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use io_uring_getdents::dirent::{DirentIter, FileType};
use io_uring_getdents::syscall::getdents64;
use rustix::fs::{self, AtFlags, Mode, OFlags, ResolveFlags, StatxFlags};
use rustix::io::Errno;

use crate::output;

/// What to delete in the directory reached by the levels, with the
/// (device, inode) the walk saw (`None`: it could not take them, and the
/// deletion is refused).
pub enum Target<'a> {
    /// A file, symlink or other non-directory.
    Entry {
        name: &'a [u8],
        id: Option<(u64, u64)>,
    },
    /// A directory and everything in it.
    Dir {
        name: &'a [u8],
        id: Option<(u64, u64)>,
    },
}

/// A directory level from the root down: its name and the (device,
/// inode) the walk saw.
pub type Level = (Vec<u8>, Option<(u64, u64)>);

/// How many errors a deletion keeps in full.
const KEPT_ERRORS: usize = 3;

/// What a deletion did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Entries deleted (directories included).
    pub entries: u64,
    /// Apparent and disk bytes freed (a hard-linked file's only when its
    /// last name went).
    pub bytes: u64,
    pub disk_bytes: u64,
    /// Entries met that are still there (a directory counts once; what
    /// is inside a directory not entered is not counted).
    pub left: u64,
    /// Errors met, and the first of them in full.
    pub errors: u64,
    pub first_errors: Vec<String>,
}

impl Outcome {
    /// `path` is left, for the reason `why`.
    fn fail(&mut self, path: &Path, why: impl Display) {
        self.left += 1;
        self.errors += 1;
        if self.first_errors.len() < KEPT_ERRORS {
            self.first_errors.push(say(path, why));
        }
    }

    fn deleted(&mut self, stx: &fs::Statx) {
        self.entries += 1;
        if stx.stx_nlink <= 1 || u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR {
            self.bytes += stx.stx_size;
            self.disk_bytes += stx.stx_blocks * 512;
        }
    }
}

/// Deletes `target` in the directory reached from `root` (the descriptor
/// the walk ran from, whose path `root_path` names it in messages)
/// through `levels`. An error (naming the path and saying why) when it
/// was refused and nothing was deleted; else what was deleted and left.
pub fn delete(
    root: BorrowedFd<'_>,
    root_path: &Path,
    levels: &[Level],
    target: &Target<'_>,
) -> Result<Outcome, String> {
    let (parent, mut path) = open_levels(root, root_path, levels)?;
    let dir = parent.as_ref().map_or(root, AsFd::as_fd);
    let (Target::Entry { name, id } | Target::Dir { name, id }) = *target;
    path.push(OsStr::from_bytes(name));
    let mut out = Outcome::default();
    match *target {
        Target::Entry { .. } => {
            let id = id.ok_or_else(|| say(&path, UNKNOWN))?;
            let cname = cstring(name).map_err(|why| say(&path, why))?;
            let stx = statx(dir, &cname, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| say(&path, e))?;
            if u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR {
                return Err(say(
                    &path,
                    "a directory now (or a mount left out): not deleted",
                ));
            }
            if identity(&stx) != id {
                return Err(say(&path, "replaced since the scan: not deleted"));
            }
            fs::unlinkat(dir, &*cname, AtFlags::empty()).map_err(|e| say(&path, e))?;
            out.deleted(&stx);
        }
        Target::Dir { .. } => {
            let (fd, stx) = open_checked(dir, name, id, true).map_err(|why| say(&path, why))?;
            let name = cstring(name).map_err(|why| say(&path, why))?;
            remove_tree(dir, fd, stx, name, &mut path, &mut out);
        }
    }
    Ok(out)
}

/// Opens the directory reached from `root` through `levels`, each
/// checked to be the one the walk saw (`None`: the root itself); gives its
/// path too. The error names the path and says why.
pub fn open_levels(
    root: BorrowedFd<'_>,
    root_path: &Path,
    levels: &[Level],
) -> Result<(Option<OwnedFd>, PathBuf), String> {
    let mut path = root_path.to_owned();
    let mut parent: Option<OwnedFd> = None;
    for (name, id) in levels {
        path.push(OsStr::from_bytes(name));
        let at = parent.as_ref().map_or(root, AsFd::as_fd);
        let (fd, _) = open_checked(at, name, *id, false).map_err(|why| say(&path, why))?;
        parent = Some(fd);
    }
    Ok((parent, path))
}

const UNKNOWN: &str = "its identity could not be taken during the scan: not deleted";

fn say(path: &Path, why: impl Display) -> String {
    format!("{}: {why}", output::human_path(path))
}

fn cstring(name: &[u8]) -> Result<CString, String> {
    CString::new(name).map_err(|_| "a name with a NUL byte".to_owned())
}

fn statx(dir: BorrowedFd<'_>, name: &CStr, flags: AtFlags) -> rustix::io::Result<fs::Statx> {
    let mask = StatxFlags::TYPE
        | StatxFlags::INO
        | StatxFlags::NLINK
        | StatxFlags::SIZE
        | StatxFlags::BLOCKS
        | StatxFlags::MNT_ID;
    fs::statx(dir, name, flags, mask)
}

/// The (device, inode) of a statx, as the walk records them.
fn identity(stx: &fs::Statx) -> (u64, u64) {
    (
        fs::makedev(stx.stx_dev_major, stx.stx_dev_minor),
        stx.stx_ino,
    )
}

/// The statx of an open file itself.
fn fstatx(fd: BorrowedFd<'_>) -> rustix::io::Result<fs::Statx> {
    statx(fd, c"", AtFlags::EMPTY_PATH)
}

/// Whether two directories are on the same mount: by mount ID where the
/// kernel gives it (5.8 and later), else by device.
fn same_mount(a: &fs::Statx, b: &fs::Statx) -> bool {
    let has_id =
        |s: &fs::Statx| StatxFlags::from_bits_retain(s.stx_mask).contains(StatxFlags::MNT_ID);
    if has_id(a) && has_id(b) {
        a.stx_mnt_id == b.stx_mnt_id
    } else {
        identity(a).0 == identity(b).0
    }
}

/// Why a directory was not entered.
enum NotEntered {
    NotADir,
    Mount,
    Gone,
    Other(Errno),
}

impl Display for NotEntered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotEntered::NotADir => f.write_str("no longer a directory (a symlink or a file now?)"),
            NotEntered::Mount => f.write_str("another mount: not entered, left as it is"),
            NotEntered::Gone => f.write_str("no longer there"),
            NotEntered::Other(e) => e.fmt(f),
        }
    }
}

/// Opens the directory `name` in `at`, never through a symlink; with
/// `same_mount`, never on another mount than `at`'s.
fn open_dir(
    at: BorrowedFd<'_>,
    name: &CStr,
    same_mount_as: Option<&fs::Statx>,
) -> Result<(OwnedFd, fs::Statx), NotEntered> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let opened = if same_mount_as.is_some() {
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_XDEV | ResolveFlags::NO_SYMLINKS;
        match fs::openat2(at, name, flags, Mode::empty(), how) {
            Err(Errno::NOSYS) => fs::openat(at, name, flags, Mode::empty()),
            other => other,
        }
    } else {
        fs::openat(at, name, flags, Mode::empty())
    };
    let fd = opened.map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => NotEntered::NotADir,
        Errno::XDEV => NotEntered::Mount,
        Errno::NOENT => NotEntered::Gone,
        e => NotEntered::Other(e),
    })?;
    let stx = fstatx(fd.as_fd()).map_err(NotEntered::Other)?;
    if same_mount_as.is_some_and(|m| !same_mount(m, &stx)) {
        return Err(NotEntered::Mount);
    }
    Ok((fd, stx))
}

/// Opens the directory `name` in `at` (with `one_mount`, on `at`'s mount
/// only), and checks it is the one the walk saw.
fn open_checked(
    at: BorrowedFd<'_>,
    name: &[u8],
    id: Option<(u64, u64)>,
    one_mount: bool,
) -> Result<(OwnedFd, fs::Statx), String> {
    let id = id.ok_or(UNKNOWN)?;
    let cname = cstring(name)?;
    let mount = if one_mount {
        Some(fstatx(at).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let (fd, stx) =
        open_dir(at, &cname, mount.as_ref()).map_err(|e| format!("{e}: not deleted"))?;
    if identity(&stx) != id {
        return Err("another directory since the scan: not deleted".to_owned());
    }
    Ok((fd, stx))
}

/// A directory being emptied: its name in its parent, its statx, the
/// subdirectories still to empty, and whether anything in it is left.
struct Emptying {
    name: CString,
    stx: fs::Statx,
    subdirs: Vec<CString>,
    kept: bool,
}

/// Removes the directory `name` (open as `fd`, `stx` its statx) in `top`
/// and all below it on its mount, holding one descriptor at a time:
/// each directory's non-directories are unlinked as it is read, its
/// subdirectories entered (`O_NOFOLLOW`: one swapped for a symlink
/// meanwhile is unlinked as the symlink it is), emptied, left through
/// `..` (checked to be the parent by device and inode), then removed.
fn remove_tree(
    top: BorrowedFd<'_>,
    fd: OwnedFd,
    stx: fs::Statx,
    name: CString,
    path: &mut PathBuf,
    out: &mut Outcome,
) {
    let mount = stx;
    let mut kept = false;
    let subdirs = clear(fd.as_fd(), path, out, &mut kept);
    let mut cur = fd;
    let mut stack = vec![Emptying {
        name,
        stx,
        subdirs,
        kept,
    }];
    while let Some(here) = stack.last_mut() {
        if let Some(sub) = here.subdirs.pop() {
            path.push(OsStr::from_bytes(sub.to_bytes()));
            match open_dir(cur.as_fd(), &sub, Some(&mount)) {
                Ok((fd, stx)) => {
                    let mut kept = false;
                    let subdirs = clear(fd.as_fd(), path, out, &mut kept);
                    stack.push(Emptying {
                        name: sub,
                        stx,
                        subdirs,
                        kept,
                    });
                    cur = fd;
                    continue;
                }
                Err(NotEntered::NotADir) => {
                    unlink(cur.as_fd(), &sub, path, out, &mut here.kept);
                }
                Err(NotEntered::Gone) => {}
                Err(why) => {
                    out.fail(path, why);
                    here.kept = true;
                }
            }
            path.pop();
            continue;
        }
        let done = stack.pop().expect("the loop saw it");
        let parent = match stack.last() {
            None => None,
            Some(up) => match open_parent(cur.as_fd(), &up.stx) {
                Ok(fd) => Some(fd),
                Err(why) => {
                    // Moved away meanwhile: what is above is not reached
                    // again from here.
                    out.fail(path, why);
                    out.left += stack.len() as u64;
                    return;
                }
            },
        };
        drop(cur);
        let up = parent.as_ref().map_or(top, AsFd::as_fd);
        // A directory with something left in it stays, and so does its
        // parent.
        let removed = !done.kept
            && match fs::unlinkat(up, &*done.name, AtFlags::REMOVEDIR) {
                Ok(()) => {
                    out.deleted(&done.stx);
                    true
                }
                Err(Errno::NOENT) => true,
                Err(e) => {
                    out.fail(path, e);
                    false
                }
            };
        if done.kept {
            out.left += 1;
        }
        if let Some(s) = stack.last_mut().filter(|_| !removed) {
            s.kept = true;
        }
        path.pop();
        match parent {
            Some(fd) => cur = fd,
            None => return,
        }
    }
}

/// Opens `..` of `dir`, which must be `want` (device and inode).
fn open_parent(dir: BorrowedFd<'_>, want: &fs::Statx) -> Result<OwnedFd, String> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = fs::openat(dir, c"..", flags, Mode::empty()).map_err(|e| e.to_string())?;
    let stx = fstatx(fd.as_fd()).map_err(|e| e.to_string())?;
    if identity(&stx) != identity(want) {
        return Err("moved out of its parent during the delete: stopped there".to_owned());
    }
    Ok(fd)
}

/// Unlinks the non-directory `name` of `dir` (`path` names it), counting
/// it in `out`; sets `kept` when it stays.
fn unlink(dir: BorrowedFd<'_>, name: &CStr, path: &Path, out: &mut Outcome, kept: &mut bool) {
    let stx = match statx(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stx) => stx,
        Err(Errno::NOENT) => return,
        Err(e) => {
            out.fail(path, e);
            *kept = true;
            return;
        }
    };
    match fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) => out.deleted(&stx),
        Err(Errno::NOENT) => {}
        Err(e) => {
            out.fail(path, e);
            *kept = true;
        }
    }
}

/// Unlinks every entry of `dir` that is not a directory; gives the names
/// of its subdirectories. Errors go to `out` (and set `kept`).
fn clear(dir: BorrowedFd<'_>, path: &Path, out: &mut Outcome, kept: &mut bool) -> Vec<CString> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut names = Vec::new();
    let mut subdirs = Vec::new();
    'read: loop {
        let n = match getdents64(dir, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                out.fail(path, e);
                *kept = true;
                break;
            }
        };
        for entry in DirentIter::new(&buf[..n]) {
            match entry {
                Ok(entry) if entry.is_dot_or_dotdot() => {}
                Ok(entry) => names.push((entry.name().to_owned(), entry.file_type())),
                Err(e) => {
                    out.fail(path, e);
                    *kept = true;
                    break 'read;
                }
            }
        }
    }
    for (name, kind) in names {
        let at = path.join(OsStr::from_bytes(name.to_bytes()));
        let is_dir = match kind {
            FileType::Directory => true,
            FileType::Unknown => match statx(dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stx) => u32::from(stx.stx_mode) & libc::S_IFMT == libc::S_IFDIR,
                Err(Errno::NOENT) => continue,
                Err(e) => {
                    out.fail(&at, e);
                    *kept = true;
                    continue;
                }
            },
            _ => false,
        };
        if is_dir {
            subdirs.push(name);
        } else {
            unlink(dir, &name, &at, out, kept);
        }
    }
    subdirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn open(path: &Path) -> OwnedFd {
        fs::open(path, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap()
    }

    /// A file row is deleted only when both its device and its inode are
    /// the walk's: an inode number alone may belong to a file elsewhere.
    #[test]
    fn a_file_needs_its_device_and_inode() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"12345").unwrap();
        let meta = std::fs::symlink_metadata(dir.path().join("f")).unwrap();
        let fd = open(dir.path());
        for id in [
            None,
            Some((meta.dev() + 1, meta.ino())),
            Some((meta.dev(), meta.ino() + 1)),
        ] {
            let target = Target::Entry { name: b"f", id };
            let why = delete(fd.as_fd(), dir.path(), &[], &target).unwrap_err();
            assert!(why.contains("not deleted"), "{why}");
            assert!(dir.path().join("f").exists());
        }
        let id = Some((meta.dev(), meta.ino()));
        let target = Target::Entry { name: b"f", id };
        let done = delete(fd.as_fd(), dir.path(), &[], &target).unwrap();
        assert!(!dir.path().join("f").exists());
        assert_eq!((done.entries, done.bytes, done.left), (1, 5, 0));
    }

    /// A directory, or a level above the target, whose identity the walk
    /// could not take is refused, never deleted by its name alone.
    #[test]
    fn a_directory_of_unknown_identity_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let fd = open(dir.path());
        let target = Target::Dir {
            name: b"a",
            id: None,
        };
        let why = delete(fd.as_fd(), dir.path(), &[], &target).unwrap_err();
        assert!(why.contains("identity"), "{why}");
        let meta = std::fs::metadata(dir.path().join("a/b")).unwrap();
        let target = Target::Dir {
            name: b"b",
            id: Some((meta.dev(), meta.ino())),
        };
        let levels = [(b"a".to_vec(), None)];
        let why = delete(fd.as_fd(), dir.path(), &levels, &target).unwrap_err();
        assert!(why.contains("identity"), "{why}");
        assert!(dir.path().join("a/b").exists());
    }

    /// What a whole deletion counts equals what `std::fs` saw before it.
    #[test]
    fn a_tree_is_deleted_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        std::fs::write(t.join("a/b/f"), vec![0; 3000]).unwrap();
        std::fs::write(t.join("g"), vec![0; 10]).unwrap();
        std::os::unix::fs::symlink("g", t.join("a/link")).unwrap();
        let mut want = (0, 0);
        for p in ["", "a", "a/b", "a/b/f", "g", "a/link"] {
            want.0 += 1;
            want.1 += std::fs::symlink_metadata(t.join(p)).unwrap().size();
        }
        let meta = std::fs::metadata(&t).unwrap();
        let fd = open(dir.path());
        let target = Target::Dir {
            name: b"t",
            id: Some((meta.dev(), meta.ino())),
        };
        let done = delete(fd.as_fd(), dir.path(), &[], &target).unwrap();
        assert!(!t.exists());
        assert_eq!((done.entries, done.bytes), want);
        assert_eq!((done.left, done.errors), (0, 0));
    }
}
