//! The calls of the walk in order that follow symbolic links where asked
//! (the crate's others never do), and a directory's identity.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `statx` of `name` relative to `dir` (or the working directory),
/// following a final symbolic link when `follow` is set.
pub(super) fn statx(
    dir: Option<BorrowedFd<'_>>,
    name: &CStr,
    follow: bool,
    mask: u32,
) -> io::Result<libc::statx> {
    if !follow {
        return io_uring_getdents::syscall::statx(dir, name, 0, mask);
    }
    let dirfd = dir.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    let mut out = std::mem::MaybeUninit::<libc::statx>::uninit();
    // SAFETY: `name` is NUL-terminated and lives through the call; `out`
    // is writable memory of the size the kernel fills; `dirfd` is
    // AT_FDCWD or a descriptor kept open by the borrow.
    let ret = unsafe { libc::statx(dirfd, name.as_ptr(), 0, mask, out.as_mut_ptr()) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful statx wrote the whole struct.
    Ok(unsafe { out.assume_init() })
}

/// Opens the directory `name` relative to `dir`, following a symbolic
/// link only when `follow` is set.
pub(super) fn open_dir(
    dir: Option<BorrowedFd<'_>>,
    name: &CStr,
    follow: bool,
) -> io::Result<OwnedFd> {
    if !follow {
        return io_uring_getdents::syscall::open_dir_at(dir, name);
    }
    let dirfd = dir.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: `name` is NUL-terminated and outlives the call; `dirfd` is
    // AT_FDCWD or a descriptor kept open by the borrow.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A directory's device and inode, through its descriptor.
pub(super) fn id(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let stx =
        io_uring_getdents::syscall::statx(Some(fd), c"", libc::AT_EMPTY_PATH, libc::STATX_INO)?;
    let dev = libc::makedev(stx.stx_dev_major, stx.stx_dev_minor);
    Ok((dev, stx.stx_ino))
}
