//! The futures of opens and `statx` calls.

use std::future::Future;
use std::io;
use std::mem;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Weak;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use super::builder::Config;
use super::{Dir, Metadata};
use crate::error::PathError;
use crate::op::name::CName;
use crate::op::openat::InFlightOpen;
use crate::op::reaper::Reaper;
use crate::op::statx::{statx, StatxData, StatxDone};
use crate::op::{polled_after_completion, Oneshot};

/// The future of [`Dir::open`], [`Dir::open_at`] and the builder's opens.
///
/// Dropping it while the open is in flight is safe and leaks nothing: the
/// operation is handed to a task that waits for it and closes the new
/// descriptor.
#[must_use = "futures do nothing unless awaited"]
pub struct OpenDirFuture {
    state: Open,
    /// The runtime's task that takes over the open if this is dropped.
    reaper: Weak<Reaper>,
}

enum Open {
    /// Not submitted: the arguments or the settings were invalid.
    Failed(Option<io::Error>),
    Running {
        op: InFlightOpen,
        /// For the `Dir` and its error messages.
        path: Arc<Path>,
        config: Config,
    },
    Finished,
}

impl OpenDirFuture {
    pub(super) fn new(
        submitted: io::Result<(InFlightOpen, Arc<Path>, Config)>,
        path: &Path,
    ) -> OpenDirFuture {
        match submitted {
            Ok((op, path, config)) => OpenDirFuture {
                state: Open::Running { op, path, config },
                reaper: Reaper::current(),
            },
            Err(e) => OpenDirFuture {
                state: Open::Failed(Some(name_path(e, path))),
                reaper: Weak::new(),
            },
        }
    }
}

/// Errors from argument checks get the path too (those from the kernel
/// already have it).
fn name_path(e: io::Error, path: &Path) -> io::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<PathError>()) {
        e
    } else {
        PathError::wrap("open directory", path, e)
    }
}

impl Future for OpenDirFuture {
    type Output = io::Result<Dir>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<Dir>> {
        let this = self.get_mut();
        let opened = match &mut this.state {
            Open::Failed(err) => Err(err.take().unwrap_or_else(polled_after_completion)),
            Open::Running { op, .. } => ready!(Pin::new(op).poll(cx)),
            Open::Finished => Err(polled_after_completion()),
        };
        // tokio-uring's operation panics if polled again: replace it now.
        let state = mem::replace(&mut this.state, Open::Finished);
        Poll::Ready(match (opened, state) {
            (Ok(fd), Open::Running { path, config, .. }) => Ok(Dir::from_parts(fd, path, config)),
            (Ok(_), _) => Err(polled_after_completion()),
            (Err(e), _) => Err(e),
        })
    }
}

impl Drop for OpenDirFuture {
    fn drop(&mut self) {
        if let Open::Running { op, .. } = mem::replace(&mut self.state, Open::Finished) {
            if let Some(reaper) = self.reaper.upgrade() {
                reaper.adopt(op);
            }
            // Otherwise the runtime is gone and has already waited for the
            // operation (its result is lost).
        }
    }
}

/// The future of [`Dir::statx`], [`Dir::metadata`] and [`statx`](super::statx).
///
/// Dropping it in flight is safe: the name and the result buffer stay
/// with tokio-uring until the completion.
#[must_use = "futures do nothing unless awaited"]
pub struct StatxFuture {
    op: Oneshot<StatxData, StatxDone>,
}

impl StatxFuture {
    pub(super) fn new(op: Oneshot<StatxData, StatxDone>) -> StatxFuture {
        StatxFuture { op }
    }

    pub(crate) fn for_path(path: &Path, mask: u32) -> StatxFuture {
        let op = match crate::usable::enterable().and_then(|()| CName::from_path(path)) {
            Ok(name) => statx(None, name, mask),
            Err(e) => Oneshot::Failed(Some(PathError::wrap("stat", PathBuf::from(path), e))),
        };
        StatxFuture { op }
    }
}

impl Future for StatxFuture {
    type Output = io::Result<Metadata>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<Metadata>> {
        let stx = ready!(self.get_mut().op.poll_op(cx))?;
        Poll::Ready(Ok(Metadata::from_statx(&stx)))
    }
}

impl std::fmt::Debug for OpenDirFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenDirFuture").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for StatxFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatxFuture").finish_non_exhaustive()
    }
}
