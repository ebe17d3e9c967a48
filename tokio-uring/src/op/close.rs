//! `IORING_OP_CLOSE` of a descriptor nobody else holds.

use std::io;
use std::os::fd::{IntoRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use io_uring_getdents::io_uring::{cqueue, opcode, types};
use tokio_uring::{OneshotOutputTransform, UnsubmittedOneshot};

use super::{cqe_result, Oneshot};
use crate::error::PathError;

/// Names the directory in an error.
pub(crate) struct CloseDone {
    path: Arc<Path>,
}

impl OneshotOutputTransform for CloseDone {
    type Output = io::Result<()>;
    type StoredData = ();

    fn transform_oneshot_output(self, _: (), cqe: cqueue::Entry) -> io::Result<()> {
        cqe_result(&cqe)
            .map(drop)
            .map_err(|e| PathError::wrap("close directory", &*self.path, e))
    }
}

/// Submits the close. Ownership passes to the kernel: the descriptor is
/// closed even if the returned future is dropped.
pub(crate) fn close(fd: OwnedFd, path: Arc<Path>) -> Oneshot<(), CloseDone> {
    let sqe = opcode::Close::new(types::Fd(fd.into_raw_fd())).build();
    Oneshot::Running(UnsubmittedOneshot::new((), CloseDone { path }, sqe).submit())
}
