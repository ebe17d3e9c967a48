//! The plain `getdents64(2)` system call: the reference that GETDENTS is
//! checked against, and the fallback on kernels without the opcode.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

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
