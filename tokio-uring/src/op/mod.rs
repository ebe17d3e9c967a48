//! Crate-private io_uring operations, each built on tokio-uring's
//! `UnsubmittedOneshot`: the stable data owns everything the kernel reads or
//! writes (buffers, names, the descriptor), and tokio-uring keeps it alive
//! until the completion arrives, even when the future is dropped.
//!
//! This layer knows only what the kernel touches and returns what the
//! kernel gives (an `OwnedFd`, a boxed `statx`, a filled buffer); the
//! public types of `fs` are built on top of it and never the other way.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use io_uring_getdents::io_uring::cqueue;
use tokio_uring::{InFlightOneshot, OneshotOutputTransform};

pub(crate) mod close;
pub(crate) mod getdents;
pub(crate) mod kernel_box;
pub(crate) mod name;
pub(crate) mod openat;
pub(crate) mod reaper;
pub(crate) mod statx;

/// The result of a completion as `io::Result`.
pub(crate) fn cqe_result(cqe: &cqueue::Entry) -> io::Result<u32> {
    let res = cqe.result();
    if res < 0 {
        Err(io::Error::from_raw_os_error(-res))
    } else {
        Ok(res as u32)
    }
}

/// A oneshot operation as a future that can also carry an error found
/// before submission, and that answers instead of panicking when polled
/// after it finished (tokio-uring's `InFlightOneshot` panics then).
pub(crate) enum Oneshot<D: 'static, T: OneshotOutputTransform<StoredData = D>> {
    /// Not submitted: the arguments were invalid.
    Failed(Option<io::Error>),
    Running(InFlightOneshot<D, T>),
    Finished,
}

impl<D, T, R> Oneshot<D, T>
where
    D: Unpin + 'static,
    T: OneshotOutputTransform<StoredData = D, Output = io::Result<R>> + Unpin,
{
    pub(crate) fn poll_op(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        match self {
            Oneshot::Failed(err) => {
                let err = err.take().unwrap_or_else(polled_after_completion);
                *self = Oneshot::Finished;
                Poll::Ready(Err(err))
            }
            Oneshot::Running(op) => {
                let out = ready!(Pin::new(op).poll(cx));
                *self = Oneshot::Finished;
                Poll::Ready(out)
            }
            Oneshot::Finished => Poll::Ready(Err(polled_after_completion())),
        }
    }
}

/// The error of a future polled again after it returned its result.
pub(crate) fn polled_after_completion() -> io::Error {
    io::Error::other("future polled again after it completed")
}
