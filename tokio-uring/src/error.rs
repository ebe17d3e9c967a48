//! Errors that name the path they concern.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// An I/O error together with the operation and the path it failed on.
///
/// Every error this crate returns for a file-system operation is an
/// [`io::Error`] of the original [`kind`](io::Error::kind) whose inner error
/// is a `PathError`, so the message names the path
/// (`cannot open directory /x/y: No such file or directory (os error 2)`)
/// and the original error stays reachable.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::{fs::Dir, PathError};
///
/// tokio_uring::start(async {
///     let err = Dir::open("/does/not/exist").await.unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
///     let detail = err.get_ref().and_then(|e| e.downcast_ref::<PathError>()).unwrap();
///     assert_eq!(detail.path(), std::path::Path::new("/does/not/exist"));
///     assert_eq!(detail.raw_os_error(), Some(libc::ENOENT));
///     // What `main` prints when it returns the error reads as a sentence.
///     assert!(format!("{err:?}").contains("cannot open directory /does/not/exist: No such file"));
/// });
/// ```
pub struct PathError {
    op: &'static str,
    path: PathBuf,
    source: io::Error,
}

impl PathError {
    /// Wraps `source` into an `io::Error` of the same kind that names `path`.
    pub(crate) fn wrap(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> io::Error {
        let kind = source.kind();
        io::Error::new(
            kind,
            PathError {
                op,
                path: path.into(),
                source,
            },
        )
    }

    /// The path the operation was applied to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What was attempted, e.g. `"open directory"`.
    pub fn operation(&self) -> &'static str {
        self.op
    }

    /// The underlying error.
    pub fn io_error(&self) -> &io::Error {
        &self.source
    }

    /// The `errno` value, if the cause was a system call.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot {} {}: {}",
            self.op,
            self.path.display(),
            self.source
        )
    }
}

/// The same text as `Display`: an `io::Error` returned from `main` is
/// printed with `Debug`, and that should read like a message, not like a
/// struct.
impl fmt::Debug for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
