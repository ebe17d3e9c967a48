//! A cheap handle for operations relative to an open directory.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;

use io_uring_getdents::syscall::statx as statx_now;

use super::builder::Config;
use super::{Backend, ChildName, DirBuilder, FileId, OpenDirFuture, StatxFuture};
use crate::error::PathError;
use crate::fd::SharedFd;
use crate::op::name::CName;
use crate::op::statx::statx;
use crate::op::Oneshot;

/// The open directory of a [`Dir`](super::Dir), for `statx` and `open_at`
/// relative to it, without borrowing the `Dir`.
///
/// A `Dir` that is being read is borrowed mutably (by `next`, or by stream
/// combinators that own it), so its own [`statx`](super::Dir::statx)
/// cannot be called from inside such a loop. A handle, from
/// [`Dir::handle`](super::Dir::handle), can: it shares the descriptor
/// (cloning one costs two reference-count increments) and has the same
/// operations. It keeps the descriptor open; the descriptor closes when
/// the `Dir`, every handle and every operation on it are gone.
///
/// # Example
///
/// ```
/// use futures_util::StreamExt;
/// use tokio_uring_getdents::fs::{Dir, STATX_SIZE};
///
/// tokio_uring::start(async {
///     let dir = Dir::open(env!("CARGO_MANIFEST_DIR")).await?;
///     let at = dir.handle();
///     // The stream owns `dir`; the handle stats each entry.
///     let sizes: Vec<u64> = dir
///         .then(|entry| {
///             let at = at.clone();
///             async move { Ok::<_, std::io::Error>(at.statx(&entry?, STATX_SIZE).await?.size()) }
///         })
///         .collect::<Vec<_>>()
///         .await
///         .into_iter()
///         .collect::<Result<_, _>>()?;
///     assert!(!sizes.is_empty());
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct DirHandle {
    fd: SharedFd,
    path: Arc<Path>,
    config: Config,
}

impl DirHandle {
    pub(super) fn new(fd: SharedFd, path: Arc<Path>, config: Config) -> DirHandle {
        DirHandle { fd, path, config }
    }

    pub(crate) fn shared_fd(&self) -> &SharedFd {
        &self.fd
    }

    pub(super) fn shared_path(&self) -> Arc<Path> {
        Arc::clone(&self.path)
    }

    pub(super) fn config(&self) -> Config {
        self.config
    }

    /// The directory's path, as its `Dir` reports it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The backend children opened through this handle use.
    pub fn backend(&self) -> Backend {
        self.config.backend
    }

    /// As [`Dir::statx`](super::Dir::statx).
    ///
    /// # Errors
    ///
    /// As [`Dir::statx`](super::Dir::statx).
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    pub fn statx<'a>(&self, name: impl Into<ChildName<'a>>, mask: u32) -> StatxFuture {
        let name = name.into();
        let op = match name.to_cname() {
            Ok(cname) => statx(Some((&self.fd, Arc::clone(&self.path))), cname, mask),
            Err(e) => Oneshot::Failed(Some(PathError::wrap(
                "stat",
                self.path.join(name.as_os_str()),
                e,
            ))),
        };
        StatxFuture::new(op)
    }

    /// As [`Dir::metadata`](super::Dir::metadata).
    ///
    /// # Errors
    ///
    /// As [`Dir::metadata`](super::Dir::metadata).
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    pub fn metadata(&self, mask: u32) -> StatxFuture {
        StatxFuture::new(statx(
            Some((&self.fd, Arc::clone(&self.path))),
            CName::Empty,
            mask,
        ))
    }

    /// As [`Dir::file_id`](super::Dir::file_id).
    ///
    /// # Errors
    ///
    /// As [`Dir::file_id`](super::Dir::file_id).
    pub fn file_id(&self) -> io::Result<FileId> {
        let flags = libc::AT_EMPTY_PATH | libc::AT_STATX_DONT_SYNC;
        statx_now(Some(self.fd.borrow()), c"", flags, libc::STATX_INO)
            .map(|stx| FileId::from_statx(&stx))
            .map_err(|e| PathError::wrap("stat", &*self.path, e))
    }

    /// As [`Dir::open_at`](super::Dir::open_at): the child `name`, opened
    /// relative to this directory with `O_NOFOLLOW | O_DIRECTORY` and the
    /// directory's settings.
    ///
    /// # Errors
    ///
    /// As [`DirBuilder::open_at`].
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    pub fn open_at<'a>(&self, name: impl Into<ChildName<'a>>) -> OpenDirFuture {
        DirBuilder::inheriting(self.config).open_at_handle(self, name)
    }
}

/// The directory's descriptor, for system calls relative to it (such as
/// `io_uring_getdents::syscall::open_dir_at`).
impl AsFd for DirHandle {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.borrow()
    }
}

impl std::fmt::Debug for DirHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirHandle")
            .field("path", &self.path)
            .field("fd", &self.fd.raw())
            .finish_non_exhaustive()
    }
}
