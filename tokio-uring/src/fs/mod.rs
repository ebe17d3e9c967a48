//! Directories and metadata through io_uring.

use std::path::Path;

// dir.rs: Dir (opening, statx, close), with dir/stream.rs (Stream, next,
// seek), dir/read.rs (the reads) and dir/records.rs (their records); builder.rs: how
// a Dir is opened (settings, backends); batch.rs: statx of many entries
// in one blocking call, readlinkat, the parent's statx; futures.rs: the open and statx
// futures; handle.rs: DirHandle; fallback.rs: the getdents64 read on the blocking pool;
// entry.rs, name.rs, metadata.rs: the values handed to callers.
mod batch;
mod builder;
mod dir;
mod entry;
mod fallback;
mod futures;
mod handle;
mod metadata;
mod name;

pub use batch::{WithMetadata, CHUNK as STATX_MANY_CHUNK};
pub use builder::{Backend, BackendChoice, DirBuilder, DEFAULT_BUFFER_SIZE, MIN_BUFFER_SIZE};
pub use dir::Dir;
pub use entry::DirEntry;
pub use futures::{OpenDirFuture, StatxFuture};
pub use handle::DirHandle;
pub use io_uring_getdents::dirent::FileType;
pub use metadata::{
    FileId, Metadata, STATX_ATIME, STATX_BASIC_STATS, STATX_BLOCKS, STATX_BTIME, STATX_CTIME,
    STATX_GID, STATX_INO, STATX_MNT_ID, STATX_MODE, STATX_MTIME, STATX_NLINK, STATX_SIZE,
    STATX_TYPE, STATX_UID,
};
pub use name::ChildName;

/// Metadata of `path` (relative to the working directory) through io_uring
/// `STATX`, without following a final symbolic link. `mask` takes
/// `libc::STATX_*` bits.
///
/// # Errors
///
/// `NotFound`, `PermissionDenied`, `NotADirectory` (a prefix is not a
/// directory) or another errno, naming `path`; `InvalidInput` when the
/// path holds a NUL byte; an error naming `io_uring_enter` when the
/// process may not enter its ring (a seccomp filter), as
/// [`DirBuilder::open`].
///
/// # Panics
///
/// Outside a tokio-uring runtime.
///
/// # Example
///
/// ```
/// tokio_uring::start(async {
///     let meta = tokio_uring_getdents::fs::statx("/usr", libc::STATX_BASIC_STATS).await?;
///     assert!(meta.is_dir());
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn statx(path: impl AsRef<Path>, mask: u32) -> StatxFuture {
    StatxFuture::for_path(path.as_ref(), mask)
}
