//! Plain system calls: `getdents64(2)`, the reference that GETDENTS is
//! checked against and the fallback on kernels without the opcode, and the
//! two calls a walk makes beside it, an `openat(2)` that never leaves the
//! tree and a `statx(2)` that does not follow symbolic links.

use std::borrow::Cow;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Reads directory records from the directory's current position into
/// `buf` and returns how many bytes were written (0 at the end).
///
/// Parse the filled part with [`DirentIter`](crate::dirent::DirentIter).
/// glibc has no wrapper on older versions, so this calls the system call
/// directly.
///
/// # Errors
///
/// The system call's errno: `EINVAL` when `buf` is too small for the next
/// record, `ENOTDIR` when `fd` is not a directory, `ENOENT` when the
/// directory was removed.
///
/// # Example
///
/// ```
/// use std::os::fd::AsFd;
/// let dir = std::fs::File::open(env!("CARGO_MANIFEST_DIR"))?;
/// let mut buf = vec![0u8; 32 * 1024];
/// let n = io_uring_getdents::syscall::getdents64(dir.as_fd(), &mut buf)?;
/// assert!(n > 0);
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn getdents64(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // The kernel takes an unsigned int count; larger buffers gain nothing.
    let len = buf.len().min(i32::MAX as usize);
    // SAFETY: the kernel writes at most `len` bytes into `buf`, which is a
    // live, exclusively borrowed slice of at least that length; `fd` is a
    // valid descriptor for the duration of the call (BorrowedFd).
    let ret = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            len as libc::c_uint,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Moves a directory's read position to `offset`: 0 or the `d_off` of an
/// entry already read (the only values a directory accepts).
///
/// # Example
///
/// ```
/// use std::os::fd::AsFd;
/// let dir = std::fs::File::open("/")?;
/// io_uring_getdents::syscall::seek_dir(dir.as_fd(), 0)?;
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn seek_dir(fd: BorrowedFd<'_>, offset: u64) -> io::Result<()> {
    // SAFETY: lseek touches no memory of ours; `fd` is valid (BorrowedFd).
    let ret = unsafe { libc::lseek(fd.as_raw_fd(), offset as libc::off_t, libc::SEEK_SET) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Opens the directory `name` relative to `dir` (the working directory if
/// `None`) with `O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC`: a
/// symbolic link is refused, never followed, so a walk that opens each
/// child relative to its parent stays in its tree.
///
/// Only the last component of `name` is held to this; pass one component
/// (no `/`) for a walk.
///
/// # Errors
///
/// The system call's errno: `ENOTDIR` for a file or a symbolic link (Linux
/// reports a link that way under `O_DIRECTORY`, not as `ELOOP`), `ENOENT`,
/// `EACCES`, `EMFILE`.
///
/// `name` is a C string, or any string or path (copied with a NUL added;
/// one holding a NUL byte gives `InvalidInput`).
///
/// # Example
///
/// ```
/// use io_uring_getdents::syscall::open_dir_at;
/// let root = open_dir_at(None, c"/")?;
/// let etc = open_dir_at(Some(std::os::fd::AsFd::as_fd(&root)), "etc")?;
/// let usr = open_dir_at(None, std::path::Path::new("/usr"))?;
/// # drop((etc, usr));
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn open_dir_at<N: DirName + ?Sized>(
    dir: Option<BorrowedFd<'_>>,
    name: &N,
) -> io::Result<OwnedFd> {
    let name = name.to_c_name()?;
    let dirfd = dir.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `name` is a NUL-terminated string that lives through the
    // call; `dirfd` is AT_FDCWD or a descriptor kept open by the borrow.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful openat returns a new descriptor that nothing
    // else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What [`open_dir_at`] takes as a name: `CStr` and `CString` as they are,
/// `str`, `String`, `OsStr`, `OsString`, `Path` and `PathBuf` copied into a
/// C string.
///
/// ```
/// use io_uring_getdents::syscall::DirName;
/// assert_eq!(&*"etc".to_c_name()?, c"etc");
/// assert!("a\0b".to_c_name().is_err());
/// # Ok::<_, std::io::Error>(())
/// ```
pub trait DirName {
    /// The name as a NUL-terminated string.
    ///
    /// # Errors
    ///
    /// `InvalidInput` when the name holds a NUL byte.
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>>;
}

fn c_name(bytes: &[u8]) -> io::Result<Cow<'static, CStr>> {
    CString::new(bytes)
        .map(Cow::Owned)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte"))
}

impl DirName for CStr {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        Ok(Cow::Borrowed(self))
    }
}

impl DirName for CString {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        Ok(Cow::Borrowed(self.as_c_str()))
    }
}

impl DirName for str {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        c_name(self.as_bytes())
    }
}

impl DirName for String {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        c_name(self.as_bytes())
    }
}

impl DirName for OsStr {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        c_name(self.as_bytes())
    }
}

impl DirName for OsString {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        c_name(self.as_bytes())
    }
}

impl DirName for Path {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        c_name(self.as_os_str().as_bytes())
    }
}

impl DirName for PathBuf {
    fn to_c_name(&self) -> io::Result<Cow<'_, CStr>> {
        c_name(self.as_os_str().as_bytes())
    }
}

/// `statx(2)` of `name` relative to `dir` (the working directory if
/// `None`), never following a final symbolic link (`AT_SYMLINK_NOFOLLOW`
/// is always added to `flags`). An empty `name` with `AT_EMPTY_PATH` in
/// `flags` asks about `dir` itself. `mask` takes `libc::STATX_*` bits.
///
/// # Errors
///
/// The system call's errno: `ENOENT`, `EACCES`, `ENOTDIR` (a prefix is not
/// a directory), `EBADF`.
///
/// # Example
///
/// ```
/// use io_uring_getdents::syscall::statx;
/// let stx = statx(None, c"/", 0, libc::STATX_TYPE | libc::STATX_INO)?;
/// assert_eq!(u32::from(stx.stx_mode) & libc::S_IFMT, libc::S_IFDIR);
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn statx(
    dir: Option<BorrowedFd<'_>>,
    name: &CStr,
    flags: libc::c_int,
    mask: u32,
) -> io::Result<libc::statx> {
    let dirfd = dir.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    let mut out = std::mem::MaybeUninit::<libc::statx>::uninit();
    // SAFETY: `name` is NUL-terminated and lives through the call; `out` is
    // writable memory of the size the kernel fills; `dirfd` is AT_FDCWD or
    // a descriptor kept open by the borrow.
    let ret = unsafe {
        libc::statx(
            dirfd,
            name.as_ptr(),
            flags | libc::AT_SYMLINK_NOFOLLOW,
            mask,
            out.as_mut_ptr(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful statx wrote the whole struct.
    Ok(unsafe { out.assume_init() })
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn open_dir_at_refuses_a_symbolic_link_and_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("f"), b"").unwrap();
        std::os::unix::fs::symlink("d", tmp.path().join("l")).unwrap();
        let top = std::fs::File::open(tmp.path()).unwrap();
        let d = open_dir_at(Some(top.as_fd()), c"d").unwrap();
        let stx = statx(Some(d.as_fd()), c"", libc::AT_EMPTY_PATH, libc::STATX_INO).unwrap();
        let meta = std::fs::metadata(tmp.path().join("d")).unwrap();
        assert_eq!(stx.stx_ino, meta.ino());
        assert_eq!(
            libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            meta.dev()
        );
        for name in [c"l", c"f"] {
            let err = open_dir_at(Some(top.as_fd()), name).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR), "{name:?}");
        }
    }

    #[test]
    fn statx_does_not_follow_a_final_symbolic_link() {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/", tmp.path().join("l")).unwrap();
        let top = std::fs::File::open(tmp.path()).unwrap();
        let stx = statx(Some(top.as_fd()), c"l", 0, libc::STATX_TYPE).unwrap();
        assert_eq!(u32::from(stx.stx_mode) & libc::S_IFMT, libc::S_IFLNK);
        let err = statx(Some(top.as_fd()), c"missing", 0, libc::STATX_TYPE).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
