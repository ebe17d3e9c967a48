//! The directory stream: the `Dir` type, how it is opened, what it tells
//! of itself, stats relative to it, its close. Its reads are in
//! `dir/read.rs`, the parsing of their records in `dir/records.rs`, the
//! `Stream` and the read position in `dir/stream.rs`.

use std::future::{poll_fn, Future};
use std::io;
use std::mem;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures_core::Stream;
use io_uring_getdents::dirent::{Dirent, DirentIter, ParseError};
use io_uring_getdents::plus::DirentPlusIter;
use tokio::task::JoinHandle;

use super::builder::{Config, EntryMetadata};
use super::fallback::{fill, with_metadata, Fill};
use super::{
    Backend, ChildName, DirBuilder, DirEntry, DirHandle, FileId, OpenDirFuture, StatxFuture,
};
use crate::error::PathError;
use crate::fd::SharedFd;
use crate::op::close::close;
use crate::op::getdents::{getdents, InFlightRead};
use crate::pool;

mod read;
mod records;
mod stream;

use read::Read;

/// An open directory, read as a stream of [`DirEntry`] with io_uring.
///
/// `.` and `..` are skipped. Each `Dir` has at most one read in flight and
/// reuses its buffer; while you consume one batch of entries, the next one
/// is already being read.
///
/// # Cancellation
///
/// Dropping a [`next`](Dir::next) future loses nothing: the read it
/// started belongs to the `Dir`, and the next call picks it up. Dropping
/// the `Dir` with a read in flight is safe: the buffer and a reference to
/// the descriptor live in the operation's stable data (or the blocking
/// task's closure), freed only after the kernel is done; the descriptor is
/// then closed. See the crate documentation and DESIGN.md.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::Dir;
///
/// tokio_uring::start(async {
///     let mut dir = Dir::open(".").await?;
///     while let Some(entry) = dir.next().await {
///         let entry = entry?;
///         println!("entry: {}", entry.file_name().display());
///     }
///     dir.close().await?;
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
pub struct Dir {
    /// The descriptor, path and settings, shared with handles.
    at: DirHandle,
    /// Records of the last read, copied out of the kernel buffer so that
    /// the buffer can be reused at once; entries share this copy.
    batch: Option<Arc<[u8]>>,
    /// Parse position in `batch`.
    pos: usize,
    /// The read buffer while no read is in flight; allocated on first use.
    buf: Option<Box<[u8]>>,
    read: Read,
    /// Where the next read starts: 0, a seek target, or the `d_off` of the
    /// last record read.
    next_offset: u64,
    /// Fallback only: move the descriptor's position to `next_offset`
    /// before the next read (after a seek).
    reposition: bool,
    /// A seek happened while a read was in flight: ignore its result.
    discard: bool,
}

impl Dir {
    /// Opens `path` with default settings; see [`DirBuilder::open`].
    ///
    /// # Errors
    ///
    /// See [`DirBuilder::open`]: `NotFound`, `NotADirectory`,
    /// `PermissionDenied`, too many open files, each naming the path.
    ///
    /// # Example
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let dir = tokio_uring_getdents::fs::Dir::open("/tmp").await?;
    ///     dir.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> OpenDirFuture {
        DirBuilder::new().open(path)
    }

    /// Opens the subdirectory `name` of `parent` relative to its
    /// descriptor, with the parent's settings; see
    /// [`DirBuilder::open_at`]. The returned future does not borrow
    /// `parent`, which can go on being read meanwhile.
    ///
    /// # Errors
    ///
    /// See [`DirBuilder::open_at`]; a symbolic link gives `ENOTDIR`.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, FileType};
    ///
    /// tokio_uring::start(async {
    ///     let mut usr = Dir::open("/usr").await?;
    ///     while let Some(entry) = usr.next().await {
    ///         let entry = entry?;
    ///         if entry.file_type() == FileType::Directory {
    ///             let child = Dir::open_at(&usr, &entry).await?;
    ///             println!("{}", child.path().display());
    ///         }
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn open_at<'a>(parent: &Dir, name: impl Into<ChildName<'a>>) -> OpenDirFuture {
        parent.at.open_at(name)
    }

    /// A builder for other buffer sizes or backends.
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{BackendChoice, Dir};
    /// tokio_uring::start(async {
    ///     let dir = Dir::builder().buffer_size(1 << 20).backend(BackendChoice::Fallback).open(".").await?;
    ///     dir.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn builder() -> DirBuilder {
        DirBuilder::new()
    }

    pub(super) fn from_parts(fd: OwnedFd, path: Arc<Path>, config: Config) -> Dir {
        Dir {
            at: DirHandle::new(SharedFd::new(fd), path, config),
            batch: None,
            pos: 0,
            buf: None,
            read: Read::Idle,
            next_offset: 0,
            reposition: false,
            discard: false,
        }
    }

    pub(super) fn handle_ref(&self) -> &DirHandle {
        &self.at
    }

    /// A handle for `statx` and `open_at` relative to this directory that
    /// does not borrow it, for use while the `Dir` is being read (by a
    /// stream combinator, say); see [`DirHandle`]. It keeps the descriptor
    /// open as long as it lives.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, FileType};
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open(env!("CARGO_MANIFEST_DIR")).await?;
    ///     let at = dir.handle();
    ///     let mut children = Vec::new();
    ///     while let Some(entry) = dir.next().await {
    ///         let entry = entry?;
    ///         if entry.file_type() == FileType::Directory {
    ///             children.push(at.open_at(&entry).await?);
    ///         }
    ///     }
    ///     assert!(children.iter().any(|c| c.path().ends_with("src")));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn handle(&self) -> DirHandle {
        self.at.clone()
    }

    /// The path this `Dir` was opened with (for `open_at`, the parent's
    /// path joined with the name). Used in error messages.
    pub fn path(&self) -> &Path {
        self.at.path()
    }

    /// The device and inode of the open directory: one `statx(2)` on the
    /// descriptor, made directly rather than through io_uring (it needs
    /// no I/O: `AT_STATX_DONT_SYNC` lets network and FUSE file systems
    /// answer from the inode they have), so a caller can check cheaply
    /// that a directory opened again by path is the one it opened first.
    ///
    /// # Errors
    ///
    /// The errno of `statx`, naming the directory (rare: the descriptor is
    /// open).
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// tokio_uring::start(async {
    ///     let first = Dir::builder().nofollow(true).open("/").await?;
    ///     let id = first.file_id()?;
    ///     first.close().await?;
    ///     // Later, with the descriptor closed: open again and compare.
    ///     let again = Dir::builder().nofollow(true).open("/").await?;
    ///     if again.file_id()? != id {
    ///         return Err(std::io::Error::other("/ was replaced while we walked it"));
    ///     }
    ///     again.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn file_id(&self) -> io::Result<FileId> {
        self.at.file_id()
    }

    /// The backend reading this directory.
    pub fn backend(&self) -> Backend {
        self.at.backend()
    }

    /// The read buffer's size in bytes.
    pub fn buffer_size(&self) -> usize {
        self.at.config().buffer_size
    }

    /// True when the entries' metadata
    /// ([`DirBuilder::entry_metadata`]) comes with the reads, from
    /// GETDENTS in readdirplus mode; false when it comes from a `statx(2)`
    /// per entry, or was not asked for.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Backend, Dir, STATX_SIZE};
    ///
    /// tokio_uring::start(async {
    ///     let dir = Dir::builder().entry_metadata(STATX_SIZE).open(".").await?;
    ///     if dir.readdirplus() {
    ///         assert!(matches!(dir.backend(), Backend::Getdents { .. }));
    ///     }
    ///     assert!(!Dir::open(".").await?.readdirplus(), "not asked for");
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn readdirplus(&self) -> bool {
        matches!(self.at.config().metadata, EntryMetadata::Plus(_))
    }

    /// Metadata of the entry `name` of this directory through io_uring
    /// `STATX`, relative to the directory's descriptor and without
    /// following a symbolic link (`AT_SYMLINK_NOFOLLOW`). `mask` takes
    /// `libc::STATX_*` bits, e.g. `STATX_BASIC_STATS`. Passing a
    /// [`&DirEntry`](DirEntry) copies no name.
    ///
    /// The returned future does not borrow `self`: several can be in
    /// flight while the directory is being read.
    ///
    /// # Errors
    ///
    /// `NotFound` when the entry is gone, `PermissionDenied`, or another
    /// errno, naming the directory's path joined with `name`;
    /// `InvalidInput` when `name` is not one path component.
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open("/etc").await?;
    ///     let mut total = 0;
    ///     while let Some(entry) = dir.next().await {
    ///         let meta = dir.statx(&entry?, libc::STATX_SIZE).await?;
    ///         total += meta.size();
    ///     }
    ///     println!("{total} bytes");
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn statx<'a>(&self, name: impl Into<ChildName<'a>>, mask: u32) -> StatxFuture {
        self.at.statx(name, mask)
    }

    /// Metadata of the directory itself (`statx` with `AT_EMPTY_PATH` on
    /// its descriptor).
    ///
    /// # Errors
    ///
    /// The errno of `statx`, naming the directory (rare: the descriptor is
    /// open).
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let dir = tokio_uring_getdents::fs::Dir::open("/").await?;
    ///     let meta = dir.metadata(libc::STATX_BASIC_STATS).await?;
    ///     assert!(meta.is_dir());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn metadata(&self, mask: u32) -> StatxFuture {
        self.at.metadata(mask)
    }

    /// Closes the directory with io_uring `CLOSE`, after waiting for its
    /// read in flight, if any.
    ///
    /// If a dropped [`statx`](Dir::statx) or [`open_at`](Dir::open_at) on
    /// this directory is still in flight, or a [`DirHandle`] of it lives,
    /// that holds the descriptor; then this returns at once and the
    /// descriptor is closed when the last of them is gone.
    ///
    /// # Errors
    ///
    /// The errno of `close`, naming the directory.
    ///
    /// # Example
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let dir = tokio_uring_getdents::fs::Dir::open(".").await?;
    ///     dir.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn close(mut self) -> io::Result<()> {
        match mem::replace(&mut self.read, Read::End) {
            Read::Ring(op) => drop(op.await),
            Read::Thread(task) => drop(task.await),
            Read::Idle | Read::End | Read::Failed(_) => {}
        }
        let (fd, path) = (self.at.shared_fd().clone(), self.at.shared_path());
        drop(self);
        match fd.into_owned() {
            Some(fd) => {
                let mut op = close(fd, path);
                poll_fn(|cx| op.poll_op(cx)).await
            }
            None => Ok(()),
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // A read in flight keeps its buffer (stable data or closure); only
        // a buffer at rest goes back to the stock.
        self.release_buffer();
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.at.shared_fd().borrow()
    }
}

impl std::fmt::Debug for Dir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dir")
            .field("path", &self.at.path())
            .field("fd", &self.at.shared_fd().raw())
            .field("backend", &self.at.backend())
            .field("buffer_size", &self.buffer_size())
            .finish_non_exhaustive()
    }
}
