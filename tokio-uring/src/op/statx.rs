//! `IORING_OP_STATX` relative to a directory descriptor, without following
//! a final symbolic link.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use io_uring_getdents::io_uring::{cqueue, opcode, types};
use tokio_uring::{OneshotOutputTransform, UnsubmittedOneshot};

use super::kernel_box::KernelBox;
use super::name::CName;
use super::{cqe_result, Oneshot};
use crate::error::PathError;
use crate::fd::SharedFd;

/// What the kernel reads and writes while the call is in flight.
pub(crate) struct StatxData {
    /// Keeps the directory open; `None` for paths relative to the working
    /// directory.
    _dir: Option<SharedFd>,
    name: CName,
    /// The kernel writes the result here; boxed so its address survives
    /// moves of the stable data.
    out: KernelBox<libc::statx>,
}

/// Hands back the result block, or an error naming the path.
pub(crate) struct StatxDone {
    /// The directory's path, for error messages.
    dir_path: Option<Arc<Path>>,
}

impl OneshotOutputTransform for StatxDone {
    type Output = io::Result<Box<libc::statx>>;
    type StoredData = StatxData;

    fn transform_oneshot_output(self, data: StatxData, cqe: cqueue::Entry) -> Self::Output {
        match cqe_result(&cqe) {
            Ok(_) => Ok(data.out.into_inner()),
            Err(e) => {
                let path: PathBuf = match (&self.dir_path, &data.name) {
                    (Some(dir), CName::Empty) => dir.to_path_buf(),
                    (Some(dir), name) => dir.join(name.as_os_str()),
                    (None, name) => PathBuf::from(name.as_os_str()),
                };
                Err(PathError::wrap("stat", path, e))
            }
        }
    }
}

/// Submits `statx(dir or AT_FDCWD, name, AT_SYMLINK_NOFOLLOW | extra, mask)`.
pub(crate) fn statx(
    dir: Option<(&SharedFd, Arc<Path>)>,
    name: CName,
    mask: u32,
) -> Oneshot<StatxData, StatxDone> {
    let mut flags = libc::AT_SYMLINK_NOFOLLOW;
    if matches!(name, CName::Empty) {
        flags |= libc::AT_EMPTY_PATH;
    }
    let (fd, dir_path) = match dir {
        Some((fd, path)) => (Some(fd.clone()), Some(path)),
        None => (None, None),
    };
    let raw = fd.as_ref().map_or(libc::AT_FDCWD, SharedFd::raw);
    // SAFETY: `libc::statx` is a plain C struct of integers (and integer
    // arrays), for which all-zero bytes are a valid value.
    let mut out: KernelBox<libc::statx> = KernelBox::new(Box::new(unsafe { std::mem::zeroed() }));
    // The pointers target heap blocks owned by the stable data (the boxed
    // statx, the name's string or batch), which tokio-uring keeps alive
    // until the completion; moving the stable data does not move them.
    let sqe = opcode::Statx::new(
        types::Fd(raw),
        name.as_ptr(),
        out.as_mut_ptr().cast::<types::statx>(),
    )
    .flags(flags)
    .mask(mask)
    .build();
    Oneshot::Running(
        UnsubmittedOneshot::new(
            StatxData {
                _dir: fd,
                name,
                out,
            },
            StatxDone { dir_path },
            sqe,
        )
        .submit(),
    )
}
