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
    depth: Option<usize>,
    ancestor: Option<PathBuf>,
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
                depth: None,
                ancestor: None,
            },
        )
    }

    /// As [`wrap`](Self::wrap), for an error met at `depth` of a walk.
    pub(crate) fn wrap_at(
        op: &'static str,
        path: impl Into<PathBuf>,
        source: io::Error,
        depth: usize,
    ) -> io::Error {
        let mut err = PathError::wrap(op, path, source);
        PathError::set_depth(&mut err, depth);
        err
    }

    /// A walk's loop: `path` leads back to `ancestor`, a directory the walk
    /// is already inside. The kind is that of `ELOOP`.
    pub(crate) fn walk_loop(path: PathBuf, ancestor: PathBuf, depth: usize) -> io::Error {
        let source = io::Error::new(
            io::Error::from_raw_os_error(libc::ELOOP).kind(),
            format!("a loop back to {}", ancestor.display()),
        );
        let kind = source.kind();
        io::Error::new(
            kind,
            PathError {
                op: "walk into",
                path,
                source,
                depth: Some(depth),
                ancestor: Some(ancestor),
            },
        )
    }

    /// Records the walk's depth in `err` if it holds a `PathError` without
    /// one.
    pub(crate) fn set_depth(err: &mut io::Error, depth: usize) {
        if let Some(inner) = err.get_mut().and_then(|e| e.downcast_mut::<PathError>()) {
            inner.depth.get_or_insert(depth);
        }
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

    /// For an error a walk yields, the depth it was met at (walkdir's
    /// `Error::depth`): a directory's open or read fails at the
    /// directory's depth, an entry's stat at the entry's. `None` for the
    /// errors of a single directory operation.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::{walk::WalkBuilder, PathError};
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new("/does/not/exist").build();
    ///     let err = walk.next().await.unwrap().unwrap_err();
    ///     let detail = PathError::of(&err).unwrap();
    ///     assert_eq!(detail.depth(), Some(0));
    /// });
    /// ```
    pub fn depth(&self) -> Option<usize> {
        self.depth
    }

    /// For a loop a walk found (following symbolic links, or a bind mount
    /// of a directory into itself), the directory the walk was already
    /// inside that [`path`](Self::path) leads back to (walkdir's
    /// `Error::loop_ancestor`); the path itself is not walked.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::{walk::WalkBuilder, PathError};
    ///
    /// let tmp = std::env::temp_dir().join(format!("loop-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(tmp.join("a"))?;
    /// std::os::unix::fs::symlink("..", tmp.join("a/up"))?;
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(&tmp).follow_links(true).build();
    ///     let mut ancestors = Vec::new();
    ///     while let Some(item) = walk.next().await {
    ///         if let Err(e) = item {
    ///             ancestors.extend(PathError::of(&e).and_then(|d| d.loop_ancestor()).map(|p| p.to_owned()));
    ///         }
    ///     }
    ///     assert_eq!(ancestors, [tmp.clone()]);
    /// });
    /// std::fs::remove_dir_all(&tmp)?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn loop_ancestor(&self) -> Option<&Path> {
        self.ancestor.as_deref()
    }

    /// The `PathError` inside an error this crate returned, if any.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::{fs::Dir, PathError};
    ///
    /// tokio_uring::start(async {
    ///     let err = Dir::open("/does/not/exist").await.unwrap_err();
    ///     assert_eq!(PathError::of(&err).unwrap().operation(), "open directory");
    /// });
    /// ```
    pub fn of(err: &io::Error) -> Option<&PathError> {
        err.get_ref().and_then(|e| e.downcast_ref::<PathError>())
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
