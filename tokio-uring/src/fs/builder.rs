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
/// `NAME_MAX`, 255, is only the local file systems' limit; 1 312 bytes with
/// readdirplus), so that a read always makes progress.
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
    pub(super) metadata: EntryMetadata,
}

/// How a `Dir`'s entries get their metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryMetadata {
    /// Not asked for.
    None,
    /// GETDENTS in readdirplus mode brings each entry's `statx` for this
    /// mask with the read.
    Plus(u32),
    /// A `statx(2)` per entry for this mask, on the blocking thread that
    /// read the records (fallback) or right after the GETDENTS.
    Statx(u32),
}

impl EntryMetadata {
    /// The mask asked for, however it is served.
    pub(crate) fn mask(self) -> Option<u32> {
        match self {
            EntryMetadata::None => None,
            EntryMetadata::Plus(mask) | EntryMetadata::Statx(mask) => Some(mask),
        }
    }
}

/// `STATX__RESERVED`: a mask with this bit makes `statx(2)` fail with
/// `EINVAL`, and a readdirplus read as a whole.
const STATX_RESERVED: u32 = 0x8000_0000;

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
    /// The mask of [`entry_metadata`](DirBuilder::entry_metadata).
    metadata: Option<u32>,
    /// Ask for entry metadata only where readdirplus brings it (the walk
    /// stats entries its own way elsewhere).
    metadata_only_plus: bool,
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
            metadata: None,
            metadata_only_plus: false,
        }
    }

    /// Bytes per read. Clamped to [`MIN_BUFFER_SIZE`]..=`i32::MAX`. The
    /// buffer is allocated on the first read and reused by every later one.
    #[must_use = "a setter returns the changed builder, which does nothing until it opens a directory"]
    pub fn buffer_size(mut self, bytes: usize) -> DirBuilder {
        self.buffer_size = bytes.clamp(MIN_BUFFER_SIZE, i32::MAX as usize);
        self
    }

    /// The backend to read with.
    #[must_use = "a setter returns the changed builder, which does nothing until it opens a directory"]
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
    #[must_use = "a setter returns the changed builder, which does nothing until it opens a directory"]
    pub fn nofollow(mut self, refuse_links: bool) -> DirBuilder {
        self.nofollow = refuse_links;
        self
    }

    /// Each entry comes with its metadata, the `statx` of its name with
    /// `mask` (`fs::STATX_*` bits), relative to the directory, without
    /// following a symbolic link or triggering an automount
    /// (`AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT`):
    /// [`DirEntry::metadata`](super::DirEntry::metadata) gives it.
    ///
    /// Where the kernel has readdirplus (GETDENTS with
    /// `IORING_GETDENTS_PLUS`, [`detect::plus_cached`]), every read
    /// brings the metadata of its entries: no call per entry. Elsewhere
    /// the same results come from a `statx(2)` per entry, made on
    /// tokio's blocking pool in the job that read the records (the
    /// `getdents64` fallback), or in one job per read right after it
    /// (GETDENTS without readdirplus). [`Dir::readdirplus`] says which.
    ///
    /// An entry whose `statx` fails (`NotFound` when it was removed
    /// between the read and the lookup, `PermissionDenied` for every
    /// entry of a directory without search permission) is still
    /// yielded, with that error as its metadata. `.` and `..` are not
    /// yielded, as always: the directory's own metadata is
    /// [`Dir::metadata`], its parent's [`Dir::parent_metadata`].
    ///
    /// Readdirplus records are 264 bytes longer than plain ones, so a read
    /// of the same buffer brings fewer entries: a 32 KiB buffer about 100
    /// against about 1 000 names of 10 bytes.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, STATX_SIZE};
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::builder()
    ///         .entry_metadata(STATX_SIZE)
    ///         .open(env!("CARGO_MANIFEST_DIR"))
    ///         .await?;
    ///     let mut bytes = 0;
    ///     while let Some(entry) = dir.next().await {
    ///         let entry = entry?;
    ///         // Some: asked for; an Err if the entry went away meanwhile.
    ///         if let Some(meta) = entry.metadata() {
    ///             bytes += meta?.size();
    ///         }
    ///     }
    ///     println!("{bytes} bytes (readdirplus: {})", dir.readdirplus());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until it opens a directory"]
    pub fn entry_metadata(mut self, mask: u32) -> DirBuilder {
        self.metadata = Some(mask);
        self.metadata_only_plus = false;
        self
    }

    /// Whether [`nofollow`](DirBuilder::nofollow) is set.
    pub(crate) fn refuses_links(&self) -> bool {
        self.nofollow
    }

    /// [`entry_metadata`](DirBuilder::entry_metadata) where readdirplus
    /// brings it, nothing elsewhere.
    #[must_use = "a setter returns the changed builder, which does nothing until it opens a directory"]
    pub(crate) fn entry_metadata_if_plus(mut self, mask: u32) -> DirBuilder {
        self.metadata = Some(mask);
        self.metadata_only_plus = true;
        self
    }

    /// The settings a child opened with [`Dir::open_at`] inherits from
    /// its parent: the same buffer size, backend and entry metadata.
    pub(super) fn inheriting(config: Config) -> DirBuilder {
        DirBuilder {
            buffer_size: config.buffer_size,
            backend: match config.backend {
                Backend::Getdents { .. } => BackendChoice::Getdents,
                Backend::Fallback => BackendChoice::Fallback,
            },
            nofollow: true,
            metadata: config.metadata.mask(),
            // The parent's choice was made on the same kernel: a child
            // resolves it the same way.
            metadata_only_plus: matches!(config.metadata, EntryMetadata::Plus(_)),
        }
    }

    pub(super) fn config(&self, path: &Path) -> io::Result<Config> {
        let refuse =
            |kind, msg: String| PathError::wrap("open directory", path, io::Error::new(kind, msg));
        crate::usable::enterable().map_err(|e| PathError::wrap("open directory", path, e))?;
        let backend = self
            .backend
            .resolve()
            .map_err(|msg| refuse(io::ErrorKind::Unsupported, msg))?;
        let metadata = match (self.metadata, backend) {
            (None, _) => EntryMetadata::None,
            (Some(mask), _) if mask & STATX_RESERVED != 0 => {
                // Refused here, so that no backend differs: readdirplus
                // would fail every read, statx(2) every entry.
                let msg = format!("statx mask {mask:#x} has the reserved bit 31 set");
                return Err(refuse(io::ErrorKind::InvalidInput, msg));
            }
            (Some(mask), Backend::Getdents { opcode })
                if detect::plus_cached().opcode() == Some(opcode) =>
            {
                EntryMetadata::Plus(mask)
            }
            (Some(_), _) if self.metadata_only_plus => EntryMetadata::None,
            (Some(mask), _) => EntryMetadata::Statx(mask),
        };
        Ok(Config {
            backend,
            buffer_size: self.buffer_size,
            metadata,
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
