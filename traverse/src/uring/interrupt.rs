//! Stopping at SIGINT with operations in flight: cancel what the kernel
//! still queues, and let a thread of its own wait for the rest, so that
//! the walk's summary does not wait for a slow filesystem.

use io_uring_getdents::io_uring::{opcode, types, IoUring};

use super::{retry, Active, StatxBuf, Walker};

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
        if self.in_flight == 0 || self.ring.is_none() {
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
    /// still write into or use, go to a thread of their own that waits for
    /// their completions and only then frees them ([`Leftovers`]). On a
    /// slow filesystem that can take seconds (a chain of 16 stats at
    /// 200 ms each), which the walk's summary need not wait for.
    pub(super) fn abandon(&mut self) {
        if self.in_flight == 0 {
            return;
        }
        let Some(ring) = self.ring.take() else {
            return;
        };
        self.unfocus();
        let leftovers = Leftovers {
            ring,
            in_flight: std::mem::take(&mut self.in_flight),
            bufs: std::mem::take(&mut self.bufs),
            active: std::mem::take(&mut self.active),
        };
        self.live = 0;
        // If the thread cannot start, the closure and `leftovers` with it
        // are dropped here, and their drop waits for the completions.
        let _ = std::thread::Builder::new()
            .name("traverse-reaper".into())
            .spawn(move || drop(leftovers));
    }
}

/// A ring whose operations were still in flight when the walk was
/// interrupted, with everything they may write into or use (statx
/// results, GETDENTS buffers, the directories and their descriptors):
/// dropping it waits for every completion first, then frees them.
struct Leftovers {
    ring: IoUring,
    in_flight: usize,
    bufs: Box<[StatxBuf]>,
    active: Vec<Option<Active>>,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        while self.in_flight > 0 {
            if let Err(e) = self.ring.submit_and_wait(1) {
                if !retry(&e) {
                    // The kernel may still write into them: leaked, never
                    // freed.
                    std::mem::forget(std::mem::take(&mut self.bufs));
                    std::mem::forget(std::mem::take(&mut self.active));
                    return;
                }
            }
            self.in_flight -= self.ring.completion().count();
        }
    }
}
