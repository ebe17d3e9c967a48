//! How a `Dir` is opened: the backend, the buffer size, whether a root that
//! is a symbolic link is refused.

use std::io;
use std::path::Path;
use std::sync::Arc;

use io_uring_getdents::detect::{self, Support};

use super::{ChildName, Dir, DirHandle, OpenDirFuture};
use crate::error::PathError;
use crate::op::name::CName;
use crate::op::openat::open_dir;

/// Default size of a `Dir`'s read buffer. See DESIGN.md for the
/// measurement behind it.
pub const DEFAULT_BUFFER_SIZE: usize = 32 * 1024;

/// Smallest buffer a `Dir` uses: room for the largest record a Linux file
/// system gives (FUSE allows names of 1 024 bytes, a 1 048-byte record;
/// `NAME_MAX`, 255, is only the local file systems' limit), so that a read
/// always makes progress.
pub const MIN_BUFFER_SIZE: usize = 2048;

/// Which mechanism reads a directory.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::{Backend, Dir};
///
/// tokio_uring::start(async {
///     let dir = Dir::open(".").await?;
///     match dir.backend() {
///         Backend::Getdents { opcode } => println!("IORING_OP_GETDENTS (opcode {opcode})"),
///         Backend::Fallback => println!("getdents64 on tokio's blocking pool"),
///         _ => println!("a backend this program does not know"),
///     }
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// `IORING_OP_GETDENTS` submissions, chained by `d_off`.
    Getdents {
        /// The opcode number detection confirmed.
        opcode: u8,
    },
    /// `getdents64(2)` on tokio's blocking thread pool, off the runtime
    /// thread.
    Fallback,
}

/// The backend a [`DirBuilder`] asks for.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::{BackendChoice, Dir};
///
/// tokio_uring::start(async {
///     let dir = Dir::builder().backend(BackendChoice::Fallback).open(".").await?;
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendChoice {
    /// GETDENTS where [`detect::cached`] confirms it, the fallback
    /// elsewhere.
    #[default]
    Auto,
    /// GETDENTS, or an `Unsupported` error from `open` when the kernel
    /// lacks it.
    Getdents,
    /// Always the `getdents64` fallback.
    Fallback,
}

impl BackendChoice {
    fn resolve(self) -> Result<Backend, String> {
        match self {
            BackendChoice::Fallback => Ok(Backend::Fallback),
            BackendChoice::Auto => Ok(detect::cached()
                .opcode()
                .map_or(Backend::Fallback, |opcode| Backend::Getdents { opcode })),
            BackendChoice::Getdents => match detect::cached() {
                Support::Available { opcode } => Ok(Backend::Getdents { opcode: *opcode }),
                other => Err(format!("IORING_OP_GETDENTS was requested: {other}")),
            },
        }
    }
}

/// Settings a `Dir` is opened with; children opened with
/// [`Dir::open_at`] inherit them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    pub(super) backend: Backend,
    pub(super) buffer_size: usize,
}

/// Opens directories with chosen settings.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::{BackendChoice, Dir};
///
/// tokio_uring::start(async {
///     let builder = Dir::builder().buffer_size(64 * 1024).backend(BackendChoice::Auto);
///     let mut dir = builder.open("/usr").await?;
///     while let Some(entry) = dir.next().await {
///         println!("{:?}", entry?.file_name());
///     }
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DirBuilder {
    buffer_size: usize,
    backend: BackendChoice,
    nofollow: bool,
}

impl Default for DirBuilder {
    fn default() -> DirBuilder {
        DirBuilder::new()
    }
}

impl DirBuilder {
    /// [`DEFAULT_BUFFER_SIZE`] and [`BackendChoice::Auto`].
    pub fn new() -> DirBuilder {
        DirBuilder {
            buffer_size: DEFAULT_BUFFER_SIZE,
            backend: BackendChoice::Auto,
            nofollow: false,
        }
    }

    /// Bytes per read. Clamped to [`MIN_BUFFER_SIZE`]..=`i32::MAX`. The
    /// buffer is allocated on the first read and reused by every later one.
    pub fn buffer_size(mut self, bytes: usize) -> DirBuilder {
        self.buffer_size = bytes.clamp(MIN_BUFFER_SIZE, i32::MAX as usize);
        self
    }

    /// The backend to read with.
    pub fn backend(mut self, choice: BackendChoice) -> DirBuilder {
        self.backend = choice;
        self
    }

    /// With `true`, [`open`](DirBuilder::open) refuses a path whose last
    /// component is a symbolic link (`O_NOFOLLOW`) instead of following it:
    /// the open fails with `NotADirectory` (`ENOTDIR`; Linux reports a link
    /// that way under `O_DIRECTORY`). Earlier components are still
    /// resolved as usual. Off by default, as for `std::fs::read_dir`;
    /// [`open_at`](DirBuilder::open_at) always refuses links.
    ///
    /// A walker that must not leave the tree it was given opens its root
    /// this way, and checks a root it opens again later with
    /// [`Dir::file_id`].
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// let tmp = std::env::temp_dir().join(format!("nofollow-doc-{}", std::process::id()));
    /// std::fs::create_dir(&tmp)?;
    /// std::os::unix::fs::symlink("/", tmp.join("link"))?;
    /// tokio_uring::start(async {
    ///     let err = Dir::builder().nofollow(true).open(tmp.join("link")).await.unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::NotADirectory);
    ///     // Without it, the link is followed.
    ///     Dir::open(tmp.join("link")).await?.close().await
    /// })?;
    /// std::fs::remove_dir_all(&tmp)?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn nofollow(mut self, refuse_links: bool) -> DirBuilder {
        self.nofollow = refuse_links;
        self
    }

    /// The settings a child opened with [`Dir::open_at`] inherits from
    /// its parent: the same buffer size and backend.
    pub(super) fn inheriting(config: Config) -> DirBuilder {
        DirBuilder {
            buffer_size: config.buffer_size,
            backend: match config.backend {
                Backend::Getdents { .. } => BackendChoice::Getdents,
                Backend::Fallback => BackendChoice::Fallback,
            },
            nofollow: true,
        }
    }

    pub(super) fn config(&self, path: &Path) -> io::Result<Config> {
        crate::usable::enterable().map_err(|e| PathError::wrap("open directory", path, e))?;
        let backend = self.backend.resolve().map_err(|msg| {
            PathError::wrap(
                "open directory",
                path,
                io::Error::new(io::ErrorKind::Unsupported, msg),
            )
        })?;
        Ok(Config {
            backend,
            buffer_size: self.buffer_size,
        })
    }

    /// Opens `path` (relative to the working directory; symbolic links are
    /// followed, as `std::fs::read_dir` does, unless
    /// [`nofollow`](DirBuilder::nofollow) is set) with io_uring `OPENAT`.
    ///
    /// # Errors
    ///
    /// The returned future fails with an error naming `path`, of kind
    /// `NotFound` (`ENOENT`), `NotADirectory` (`ENOTDIR`),
    /// `PermissionDenied` (`EACCES`), or another kind for other errno values
    /// (`EMFILE`: too many open files); `InvalidInput` when the path holds a
    /// NUL byte; `Unsupported` when [`BackendChoice::Getdents`] was asked
    /// for on a kernel without it; `NotADirectory` for a symbolic link
    /// with [`nofollow`](DirBuilder::nofollow). When the process may set
    /// up a ring but not enter it (a seccomp filter that refuses
    /// `io_uring_enter`), the error names `io_uring_enter`, of the kind
    /// its errno gives (`PermissionDenied`, `Unsupported`), at once: no
    /// operation is submitted that would never complete.
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    pub fn open(&self, path: impl AsRef<Path>) -> OpenDirFuture {
        let path = path.as_ref();
        let flags = if self.nofollow { libc::O_NOFOLLOW } else { 0 };
        let submitted = self.config(path).and_then(|config| {
            let name = CName::from_path(path)?;
            let path: Arc<Path> = Arc::from(path);
            Ok((open_dir(None, name, flags, Arc::clone(&path)), path, config))
        });
        OpenDirFuture::new(submitted, path)
    }

    /// Opens the entry `name` of `parent` relative to the parent's
    /// descriptor, without following a symbolic link (`O_NOFOLLOW |
    /// O_DIRECTORY`): there is no `PATH_MAX` limit and no way out of the
    /// tree.
    ///
    /// # Errors
    ///
    /// As [`open`](DirBuilder::open), naming the parent's path joined with
    /// `name`; a symbolic link or a file gives `ENOTDIR` (kind
    /// `NotADirectory`: with `O_DIRECTORY` Linux reports a symbolic link
    /// that way, not as `ELOOP`); `InvalidInput` when `name` is
    /// not one path component.
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    pub fn open_at<'a>(&self, parent: &Dir, name: impl Into<ChildName<'a>>) -> OpenDirFuture {
        self.open_at_handle(parent.handle_ref(), name)
    }

    pub(super) fn open_at_handle<'a>(
        &self,
        parent: &DirHandle,
        name: impl Into<ChildName<'a>>,
    ) -> OpenDirFuture {
        let name = name.into();
        let path = parent.path().join(name.as_os_str());
        let submitted = self.config(&path).and_then(|config| {
            let cname = name.to_cname()?;
            let path: Arc<Path> = Arc::from(path.as_path());
            let op = open_dir(
                Some(parent.shared_fd()),
                cname,
                libc::O_NOFOLLOW,
                Arc::clone(&path),
            );
            Ok((op, path, config))
        });
        OpenDirFuture::new(submitted, &path)
    }
}
