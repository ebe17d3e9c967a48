//! Errors as values: what failed, on which path, and why.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What the walker was doing when an error happened.
///
/// More operations may come, so matches need a wildcard arm.
///
/// ```
/// assert_eq!(traverse::Op::Read.to_string(), "cannot read directory");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// A stat of an entry (`statx`).
    Stat,
    /// Opening a directory.
    Open,
    /// Reading a directory's entries.
    Read,
    /// Not descending into a directory that is one of its own ancestors
    /// (a bind mount of it below itself), as `find` reports it.
    Loop,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Stat => "cannot stat",
            Op::Open => "cannot open directory",
            Op::Read => "cannot read directory",
            Op::Loop => "File system loop detected",
        })
    }
}

/// An entry or directory that could not be read. The walk goes on; each
/// error is counted in [`Totals::errors`](crate::Totals::errors) and handed
/// to the [`Visitor`](crate::Visitor).
///
/// # Example
///
/// ```
/// use traverse::{Error, Op};
/// let err = Error::new("/root/x", Op::Open, std::io::Error::from_raw_os_error(libc::EACCES));
/// assert_eq!(err.path(), std::path::Path::new("/root/x"));
/// assert!(err.to_string().starts_with("/root/x: cannot open directory: "));
/// ```
#[derive(Debug)]
pub struct Error {
    path: PathBuf,
    op: Op,
    cause: io::Error,
    depth: Option<usize>,
    /// With [`Op::Loop`]: the ancestor the directory is.
    ancestor: Option<PathBuf>,
}

impl Error {
    /// An error on `path`.
    pub fn new(path: impl Into<PathBuf>, op: Op, cause: io::Error) -> Error {
        Error {
            path: path.into(),
            op,
            cause,
            depth: None,
            ancestor: None,
        }
    }

    /// An [`Op::Loop`] error: the directory `path` is its ancestor
    /// `ancestor` again.
    pub(crate) fn in_loop(path: impl Into<PathBuf>, ancestor: PathBuf) -> Error {
        let cause = io::Error::other(format!(
            "the same directory as {} (not descended into)",
            ancestor.display()
        ));
        Error {
            ancestor: Some(ancestor),
            ..Error::new(path, Op::Loop, cause)
        }
    }

    /// With [`Op::Loop`]: the ancestor of [`path`](Self::path) that it is
    /// the same directory as (same device and inode), as walkdir's
    /// `loop_ancestor`; `None` for every other error.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::os::unix::fs::symlink(".", dir.path().join("self"))?;
    /// let walk = traverse::WalkBuilder::new().follow_links(true).build();
    /// let mut found = None;
    /// walk.run_with(dir.path(), |event| {
    ///     if let traverse::Event::Error(e) = event {
    ///         found = e.loop_ancestor().map(|a| (e.path().to_owned(), a.to_owned()));
    ///     }
    /// });
    /// assert_eq!(found, Some((dir.path().join("self"), dir.path().to_owned())));
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn loop_ancestor(&self) -> Option<&Path> {
        self.ancestor.as_deref()
    }

    /// The error, met at `depth` of a walk.
    ///
    /// ```
    /// use traverse::{Error, Op};
    /// let err = Error::new("/x", Op::Stat, std::io::Error::from_raw_os_error(libc::ENOENT));
    /// assert_eq!(err.with_depth(3).depth(), Some(3));
    /// ```
    #[must_use = "the error with its depth is returned, not changed in place"]
    pub fn with_depth(self, depth: usize) -> Error {
        Error {
            depth: Some(depth),
            ..self
        }
    }

    /// The depth of the walk the error was met at (walkdir's
    /// `Error::depth`): a directory's open or read fails at the directory's
    /// depth (the root is 0), an entry's stat at the entry's; `None` for an
    /// error made with [`new`](Self::new) alone.
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let mut depths = Vec::new();
    /// WalkBuilder::new().build().run_with("/nonexistent/x".as_ref(), |event| {
    ///     if let Event::Error(e) = event {
    ///         depths.push(e.depth());
    ///     }
    /// });
    /// assert_eq!(depths, [Some(0)]);
    /// ```
    pub fn depth(&self) -> Option<usize> {
        self.depth
    }

    /// The path that failed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What was being done.
    pub fn op(&self) -> Op {
        self.op
    }

    /// The system's answer.
    pub fn cause(&self) -> &io::Error {
        &self.cause
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.path.display(), self.op, self.cause)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}
