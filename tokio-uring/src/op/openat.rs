//! `IORING_OP_OPENAT` of a directory.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use io_uring_getdents::io_uring::{cqueue, opcode, types};
use tokio_uring::{InFlightOneshot, OneshotOutputTransform, UnsubmittedOneshot};

use super::cqe_result;
use super::name::CName;
use crate::error::PathError;
use crate::fd::SharedFd;

/// What the kernel reads while the open is in flight.
pub(crate) struct OpenData {
    /// The parent directory, kept open; `None` for `AT_FDCWD`.
    _parent: Option<SharedFd>,
    /// Read by the kernel through the pointer in the SQE.
    _name: CName,
}

/// Takes ownership of the new descriptor, or names the path in the error.
pub(crate) struct OpenDone {
    path: Arc<Path>,
}

impl OneshotOutputTransform for OpenDone {
    type Output = io::Result<OwnedFd>;
    type StoredData = OpenData;

    fn transform_oneshot_output(self, _: OpenData, cqe: cqueue::Entry) -> io::Result<OwnedFd> {
        match cqe_result(&cqe) {
            // SAFETY: a successful OPENAT returns a new descriptor that
            // nothing else in the process owns; we take ownership once.
            Ok(raw) => Ok(unsafe { OwnedFd::from_raw_fd(raw as i32) }),
            Err(e) => Err(PathError::wrap("open directory", &*self.path, e)),
        }
    }
}

pub(crate) type InFlightOpen = InFlightOneshot<OpenData, OpenDone>;

/// Submits `openat(parent or AT_FDCWD, name, O_RDONLY | O_DIRECTORY |
/// O_CLOEXEC | extra_flags)`. `path` names the directory in an error.
pub(crate) fn open_dir(
    parent: Option<&SharedFd>,
    name: CName,
    extra_flags: i32,
    path: Arc<Path>,
) -> InFlightOpen {
    let dirfd = parent.map_or(libc::AT_FDCWD, SharedFd::raw);
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | extra_flags;
    // The name pointer targets memory owned by the stable data, which
    // tokio-uring keeps alive until the completion.
    let sqe = opcode::OpenAt::new(types::Fd(dirfd), name.as_ptr())
        .flags(flags)
        .build();
    UnsubmittedOneshot::new(
        OpenData {
            _parent: parent.cloned(),
            _name: name,
        },
        OpenDone { path },
        sqe,
    )
    .submit()
}
