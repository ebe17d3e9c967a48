//! Stopping at SIGINT with operations in flight: cancel what the kernel
//! still queues, and let a thread of its own wait for the rest, so that
//! the walk's summary does not wait for a slow filesystem.

use io_uring_getdents::io_uring::{opcode, types};

use super::{Io, Walker};

/// The `user_data` of the request that cancels the others at SIGINT.
pub(super) const CANCEL_TAG: u64 = 1 << 62;

impl Walker<'_> {
    /// Asks the kernel to cancel every operation in flight (the walk was
    /// interrupted): those still queued in io-wq end at once, the ones
    /// running as soon as their filesystem lets them. The stats linked
    /// after a running one still run, one after the other (a hard link
    /// survives its predecessor's failure), so the walk does not wait for
    /// them: see [`abandon`](Self::abandon). A kernel without
    /// `IORING_ASYNC_CANCEL_ANY` (before 5.19) refuses the request.
    pub(super) fn cancel_all(&mut self) {
        if self.io.in_flight == 0 || self.io.ring.is_none() {
            return;
        }
        let sqe = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(CANCEL_TAG);
        // SAFETY: a cancel request points to no memory of ours.
        unsafe { self.push(std::slice::from_ref(&sqe)) };
    }

    /// Stops waiting for the operations in flight (the walk was
    /// interrupted): the ring, and every buffer and directory they may
    /// still write into or use ([`Io`]), go to a thread of their own that
    /// waits for their completions and only then frees them. On a slow
    /// filesystem that can take seconds (a chain of 16 stats at 200 ms
    /// each), which the walk's summary need not wait for. The walker goes
    /// on without a ring.
    pub(super) fn abandon(&mut self) {
        if self.io.in_flight == 0 || self.io.ring.is_none() {
            return;
        }
        self.unfocus();
        let leftovers = std::mem::replace(&mut self.io, Io::new(None, Box::default()));
        self.live = 0;
        // If the thread cannot start, the closure and `leftovers` with it
        // are dropped here, and their drop waits for the completions.
        let _ = std::thread::Builder::new()
            .name("traverse-reaper".into())
            .spawn(move || drop(leftovers));
    }
}
