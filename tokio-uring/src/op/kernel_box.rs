//! Memory the kernel writes into during an operation, kept safe across the
//! shutdown of the runtime.
//!
//! tokio-uring keeps a dropped operation's stable data until the
//! completion arrives, with one exception: when the runtime itself is
//! dropped, its driver (0.5, `Driver::drop`) replaces the stable data of
//! every operation whose future is already gone with a placeholder, which
//! frees it, and only then cancels those operations and waits for them.
//! An operation already running in an io-wq worker (a `statx` waiting on a
//! slow file system, a GETDENTS reading an ext4 block) cannot be cancelled
//! and writes into the freed heap block; glibc later aborts. This happened
//! in the test VM (a `Dir` dropped with its read-ahead in flight at the end
//! of a test) and is reproduced on the host by tests/shutdown.rs.
//!
//! A [`KernelBox`] is dropped normally except while this thread's runtime
//! is shutting down: then it moves into a per-thread quarantine instead of
//! being freed. The signal is the per-runtime [`Reaper`](super::reaper)
//! task, which the runtime drops together with its other tasks, before
//! the driver. The quarantine is emptied when the next runtime on this
//! thread submits its first operation (the previous driver has finished
//! dropping by then, having waited for every completion) or when the
//! thread exits.

use std::any::Any;
use std::cell::{Cell, RefCell};

thread_local! {
    /// The runtime on this thread is being dropped.
    static SHUTTING_DOWN: Cell<bool> = const { Cell::new(false) };
    static QUARANTINE: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Called when this thread's runtime starts dropping its tasks.
pub(crate) fn runtime_shutting_down() {
    let _ = SHUTTING_DOWN.try_with(|flag| flag.set(true));
}

/// Called when a runtime on this thread starts submitting: a previous
/// runtime's driver is gone, so its quarantined memory can be freed.
pub(crate) fn runtime_started() {
    let _ = SHUTTING_DOWN.try_with(|flag| flag.set(false));
    let freed = QUARANTINE.try_with(|q| std::mem::take(&mut *q.borrow_mut()));
    drop(freed);
}

/// How many blocks wait in this thread's quarantine.
#[cfg(test)]
pub(crate) fn quarantined() -> usize {
    QUARANTINE.with(|q| q.borrow().len())
}

/// A heap block the kernel may write into while an operation runs. It
/// lives in the operation's stable data; see the module documentation for
/// why its `Drop` is special.
pub(crate) struct KernelBox<T: ?Sized + 'static>(Option<Box<T>>);

impl<T: ?Sized + 'static> KernelBox<T> {
    pub(crate) fn new(block: Box<T>) -> KernelBox<T> {
        KernelBox(Some(block))
    }

    /// The block's address, for the SQE. The block does not move when the
    /// `KernelBox` does.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut T {
        match &mut self.0 {
            Some(block) => &mut **block,
            None => unreachable!("a KernelBox holds its block until into_inner or drop"),
        }
    }

    /// The block back, once the completion has arrived.
    pub(crate) fn into_inner(mut self) -> Box<T> {
        match self.0.take() {
            Some(block) => block,
            None => unreachable!("a KernelBox holds its block until into_inner or drop"),
        }
    }
}

impl<T: ?Sized + 'static> std::ops::Deref for KernelBox<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.0 {
            Some(block) => block,
            None => unreachable!("a KernelBox holds its block until into_inner or drop"),
        }
    }
}

impl<T: ?Sized + 'static> Drop for KernelBox<T> {
    fn drop(&mut self) {
        let Some(block) = self.0.take() else { return };
        if !SHUTTING_DOWN.try_with(Cell::get).unwrap_or(true) {
            return;
        }
        // The kernel may still write here: keep the block allocated. Boxed
        // again because `dyn Any` needs a sized value.
        let mut pending = Some(block);
        let _ = QUARANTINE.try_with(|q| {
            if let Some(block) = pending.take() {
                q.borrow_mut().push(Box::new(block));
            }
        });
        // Still here if the thread is exiting and its quarantine is gone:
        // leaking is the only safe choice left.
        std::mem::forget(pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drop_one() {
        let block: Box<[u8]> = vec![7u8; 300].into_boxed_slice();
        drop(KernelBox::new(block));
    }

    #[test]
    fn quarantined_only_between_a_runtime_shutdown_and_the_next_start() {
        tokio_uring::start(async {
            super::super::reaper::Reaper::current();
            drop_one();
            assert_eq!(quarantined(), 0, "freed while the runtime runs");
        });
        // The runtime dropped its reaper: blocks dropped now are kept.
        drop_one();
        drop_one();
        assert_eq!(quarantined(), 2);
        tokio_uring::start(async {
            super::super::reaper::Reaper::current();
            assert_eq!(quarantined(), 0, "freed when the next runtime starts");
            drop_one();
            assert_eq!(quarantined(), 0);
        });
    }
}
