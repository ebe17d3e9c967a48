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
//! A [`KernelBox`] remembers the tokio runtime whose operation it belongs
//! to (tokio-uring runs each of its runtimes on a tokio runtime of its
//! own). Memory of a dropped operation is freed only on that runtime's
//! thread while that runtime runs: when tokio-uring hands over the
//! completion, or when a future whose operation already completed is
//! dropped. The driver's drop happens after the runtime stopped running
//! (outside any runtime, or inside another one's `block_on`), so a drop
//! anywhere else moves the block into a per-thread quarantine instead of
//! freeing it. Keyed to the runtime, not the thread: with two runtimes on
//! one thread, the other one running says nothing about the kernel being
//! done with this one's memory. The check is conservative: a completed
//! operation dropped outside its runtime is quarantined too, which only
//! delays freeing it.
//!
//! The quarantine is emptied when a runtime on this thread submits its
//! next operation of this kind (a runtime whose driver quarantined blocks
//! has finished dropping by then, having waited for every completion; only
//! the thread running that drop could submit in between, and it is busy
//! dropping) or when the thread exits.

use std::any::Any;
use std::cell::RefCell;

use tokio::runtime::{Handle, Id};

thread_local! {
    static QUARANTINE: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Frees the quarantined blocks, if any.
fn release_quarantine() {
    let freed = QUARANTINE.try_with(|q| {
        let mut q = q.borrow_mut();
        (!q.is_empty()).then(|| std::mem::take(&mut *q))
    });
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
pub(crate) struct KernelBox<T: ?Sized + 'static> {
    block: Option<Box<T>>,
    /// The tokio runtime of the tokio-uring runtime the operation is
    /// submitted to.
    owner: Id,
}

impl<T: ?Sized + 'static> KernelBox<T> {
    /// Wraps `block` for an operation of the runtime running now.
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    pub(crate) fn new(block: Box<T>) -> KernelBox<T> {
        release_quarantine();
        KernelBox {
            block: Some(block),
            owner: Handle::current().id(),
        }
    }

    /// The block's address, for the SQE. The block does not move when the
    /// `KernelBox` does.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut T {
        match &mut self.block {
            Some(block) => &mut **block,
            None => unreachable!("a KernelBox holds its block until into_inner or drop"),
        }
    }

    /// The block back, once the completion has arrived.
    pub(crate) fn into_inner(mut self) -> Box<T> {
        match self.block.take() {
            Some(block) => block,
            None => unreachable!("a KernelBox holds its block until into_inner or drop"),
        }
    }
}

impl<T: ?Sized + 'static> std::ops::Deref for KernelBox<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.block {
            Some(block) => block,
            None => unreachable!("a KernelBox holds its block until into_inner or drop"),
        }
    }
}

impl<T: ?Sized + 'static> Drop for KernelBox<T> {
    fn drop(&mut self) {
        let Some(block) = self.block.take() else {
            return;
        };
        if Handle::try_current().is_ok_and(|running| running.id() == self.owner) {
            // The owning runtime runs, so its driver is not being dropped:
            // this drop comes after the completion. Free the block.
            drop(block);
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
    use tokio_uring::Runtime;

    use super::*;

    fn drop_one(owner: Id) {
        drop(KernelBox {
            block: Some(vec![7u8; 300].into_boxed_slice()),
            owner,
        });
    }

    #[test]
    fn freed_only_while_the_owning_runtime_runs() {
        let first = Runtime::new(&tokio_uring::builder()).unwrap();
        let owner = first.block_on(async {
            let owner = KernelBox::new(Box::new(0u8)).owner;
            drop_one(owner);
            assert_eq!(quarantined(), 0, "freed while the runtime runs");
            owner
        });
        // Outside the runtime (where its driver drops): blocks are kept.
        drop_one(owner);
        drop(first);
        drop_one(owner);
        assert_eq!(quarantined(), 2);
        tokio_uring::start(async {
            drop(KernelBox::new(Box::new(0u8)));
            assert_eq!(quarantined(), 0, "freed when a runtime submits again");
        });
    }

    #[test]
    fn keyed_to_the_runtime_not_the_thread() {
        let a = Runtime::new(&tokio_uring::builder()).unwrap();
        let owner_a = a.block_on(async { KernelBox::new(Box::new(0u8)).owner });
        let b = Runtime::new(&tokio_uring::builder()).unwrap();
        let owner_b = b.block_on(async { KernelBox::new(Box::new(0u8)).owner });
        assert_ne!(owner_a, owner_b);
        // Two runtimes get two reapers too, for their dropped opens.
        let reaper_a = a.block_on(async { super::super::reaper::Reaper::current() });
        let reaper_b = b.block_on(async { super::super::reaper::Reaper::current() });
        assert!(!reaper_a.ptr_eq(&reaper_b));
        drop(b);
        a.block_on(async {
            drop_one(owner_a);
            assert_eq!(quarantined(), 0, "runtime A runs");
            // Runtime B's memory, dropped while A runs (as when B is
            // dropped inside A's block_on): kept.
            drop_one(owner_b);
            assert_eq!(quarantined(), 1, "runtime B is not running");
        });
        drop(a);
    }
}
