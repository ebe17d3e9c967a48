//! Whether this process can run io_uring: what a program checks before
//! `tokio_uring::start` (which panics when the ring cannot be set up), and
//! what every operation of this crate checks before it submits (a ring
//! that cannot be entered never completes anything, so the operation
//! would wait forever).

use std::io;

use io_uring_getdents::detect::{self, RingError};

/// `Ok` when this process can set up an io_uring and enter it (a `NOP`
/// round trip on a small ring of its own, once per process), so a
/// tokio-uring runtime starts and its operations complete. Otherwise the
/// error names the system call that failed (`io_uring_setup` or
/// `io_uring_enter`) with its kind (`PermissionDenied` for `EPERM`,
/// `Unsupported` for `ENOSYS`): a kernel without io_uring, the
/// `kernel.io_uring_disabled` sysctl, or a seccomp filter of a container
/// sandbox. The program then takes a path without io_uring.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::{fs::Dir, io_uring_usable};
///
/// let names: Vec<std::ffi::OsString> = match io_uring_usable() {
///     Ok(()) => tokio_uring::start(async {
///         let mut dir = Dir::open(".").await?;
///         let mut names = Vec::new();
///         while let Some(entry) = dir.next().await {
///             names.push(entry?.file_name().to_owned());
///         }
///         Ok::<_, std::io::Error>(names)
///     })?,
///     Err(why) => {
///         eprintln!("listing with std::fs: {why}");
///         std::fs::read_dir(".")?
///             .map(|entry| entry.map(|e| e.file_name()))
///             .collect::<std::io::Result<_>>()?
///     }
/// };
/// # let _ = names;
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn io_uring_usable() -> io::Result<()> {
    detect::io_uring_usable().map_err(RingError::to_io_error)
}

/// Fails when the ring can be set up but not entered, before an operation
/// is submitted that would never complete. A failed setup of the check's
/// own ring says nothing here: the running runtime's ring exists.
pub(crate) fn enterable() -> io::Result<()> {
    match detect::io_uring_usable() {
        Err(why) if matches!(why, RingError::Enter(_)) => Err(why.to_io_error()),
        _ => Ok(()),
    }
}
