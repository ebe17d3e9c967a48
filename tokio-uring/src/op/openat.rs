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
use crate::fs::{Config, Dir};

/// What the kernel reads while the open is in flight.
pub(crate) struct OpenData {
    /// The parent directory, kept open; `None` for `AT_FDCWD`.
    _parent: Option<SharedFd>,
    /// Read by the kernel through the pointer in the SQE.
    _name: CName,
}

/// Builds the `Dir` from the new descriptor.
pub(crate) struct OpenDone {
    path: Arc<Path>,
    config: Config,
}

impl OneshotOutputTransform for OpenDone {
    type Output = io::Result<Dir>;
    type StoredData = OpenData;

    fn transform_oneshot_output(self, _: OpenData, cqe: cqueue::Entry) -> io::Result<Dir> {
        match cqe_result(&cqe) {
            Ok(raw) => {
                // SAFETY: a successful OPENAT returns a new descriptor that
                // nothing else in the process owns; we take ownership once.
                let fd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
                Ok(Dir::from_parts(fd, self.path, self.config))
            }
            Err(e) => Err(PathError::wrap("open directory", &*self.path, e)),
        }
    }
}

pub(crate) type InFlightOpen = InFlightOneshot<OpenData, OpenDone>;

/// Submits `openat(parent or AT_FDCWD, name, O_RDONLY | O_DIRECTORY |
/// O_CLOEXEC | extra_flags)`.
pub(crate) fn open_dir(
    parent: Option<&SharedFd>,
    name: CName,
    extra_flags: i32,
    path: Arc<Path>,
    config: Config,
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
        OpenDone { path, config },
        sqe,
    )
    .submit()
}
