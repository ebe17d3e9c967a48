//! `IORING_OP_GETDENTS` into a buffer owned by the operation.

use std::io;

use io_uring_getdents::cqe::dir_eof;
use io_uring_getdents::io_uring::{cqueue, types};
use io_uring_getdents::opcode::GetDents;
use tokio_uring::{InFlightOneshot, OneshotOutputTransform, UnsubmittedOneshot};

use super::cqe_result;
use super::kernel_box::KernelBox;
use crate::fd::SharedFd;

/// What the kernel may touch while the read is in flight.
pub(crate) struct ReadData {
    /// Keeps the directory open until the completion.
    _fd: SharedFd,
    /// The kernel writes records here; moved back to the `Dir` on
    /// completion, freed by tokio-uring after the completion otherwise.
    buf: KernelBox<[u8]>,
}

/// Hands back the byte count, the buffer, and whether the kernel says the
/// directory is at its end (`IORING_CQE_F_DIR_EOF`: no read after this one
/// is needed; never said by kernels without the flag).
pub(crate) struct ReadDone;

impl OneshotOutputTransform for ReadDone {
    type Output = (io::Result<usize>, Box<[u8]>, bool);
    type StoredData = ReadData;

    fn transform_oneshot_output(self, data: ReadData, cqe: cqueue::Entry) -> Self::Output {
        let res = cqe_result(&cqe).map(|n| n as usize);
        (res, data.buf.into_inner(), dir_eof(cqe.flags()))
    }
}

pub(crate) type InFlightRead = InFlightOneshot<ReadData, ReadDone>;

/// Submits a read of `buf.len()` bytes of records from directory position
/// `offset`; with `plus`, readdirplus records with the `statx` of this
/// mask (only where detection confirmed the mode).
pub(crate) fn getdents(
    fd: &SharedFd,
    buf: Box<[u8]>,
    offset: u64,
    opcode: u8,
    plus: Option<u32>,
) -> InFlightRead {
    // Tied to the running runtime: freed only while it runs (see
    // `KernelBox`).
    let mut buf = KernelBox::new(buf);
    let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    // The pointer stays valid after `buf` moves into the stable data: a
    // boxed slice's heap block does not move with its owner, and the block
    // is freed only after the completion (tokio-uring's contract for
    // `stable_data`, which `KernelBox` upholds at runtime shutdown too).
    let mut read = GetDents::new(types::Fd(fd.raw()), buf.as_mut_ptr().cast::<u8>(), len)
        .offset(offset)
        .opcode(opcode);
    if let Some(mask) = plus {
        // Each entry's statx goes into the same buffer, after its name:
        // the kernel writes nothing outside the buffer kept alive above.
        read = read.plus(mask);
    }
    let sqe = read.build();
    UnsubmittedOneshot::new(
        ReadData {
            _fd: fd.clone(),
            buf,
        },
        ReadDone,
        sqe,
    )
    .submit()
}
