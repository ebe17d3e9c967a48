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
//! A [`KernelBox`] remembers the runtime whose operation it belongs to,
//! through that runtime's [`Reaper`](super::reaper) task, which the runtime
//! drops together with its other tasks, before the driver. It is dropped
//! normally while that reaper lives; once the reaper is gone, the runtime
//! is shutting down and the block moves into a per-thread quarantine
//! instead of being freed. Keyed to the runtime, not the thread: with two
//! runtimes on one thread, the other one being alive says nothing about
//! the kernel being done with this one's memory. The quarantine is emptied
//! when a runtime on this thread creates its reaper (every runtime whose
//! reaper died before has finished dropping its driver by then, having
//! waited for every completion) or when the thread exits.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Weak;

use super::reaper::Reaper;

thread_local! {
    static QUARANTINE: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Frees the quarantined blocks; called when a runtime creates its reaper.
pub(crate) fn release_quarantine() {
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
pub(crate) struct KernelBox<T: ?Sized + 'static> {
    block: Option<Box<T>>,
    /// The reaper of the runtime the operation is submitted to.
    owner: Weak<Reaper>,
}

impl<T: ?Sized + 'static> KernelBox<T> {
    /// Wraps `block` for an operation of the runtime running now.
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    pub(crate) fn new(block: Box<T>) -> KernelBox<T> {
        KernelBox {
            block: Some(block),
            owner: Reaper::current(),
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
        if self.owner.strong_count() > 0 {
            // The owning runtime runs, so this drop comes after the
            // completion (or before the submission): free the block.
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

    fn drop_one(owner: &Weak<Reaper>) {
        drop(KernelBox {
            block: Some(vec![7u8; 300].into_boxed_slice()),
            owner: owner.clone(),
        });
    }

    #[test]
    fn quarantined_once_the_owning_runtime_shuts_down() {
        let first = tokio_uring::start(async {
            let owner = Reaper::current();
            drop_one(&owner);
            assert_eq!(quarantined(), 0, "freed while the runtime runs");
            owner
        });
        // The runtime dropped its reaper: blocks dropped now are kept.
        drop_one(&first);
        drop_one(&first);
        assert_eq!(quarantined(), 2);
        tokio_uring::start(async {
            let owner = Reaper::current();
            assert_eq!(quarantined(), 0, "freed when the next runtime starts");
            drop_one(&owner);
            assert_eq!(quarantined(), 0);
        });
    }

    #[test]
    fn keyed_to_the_runtime_not_the_thread() {
        let a = Runtime::new(&tokio_uring::builder()).unwrap();
        let owner_a = a.block_on(async { Reaper::current() });
        let b = Runtime::new(&tokio_uring::builder()).unwrap();
        let owner_b = b.block_on(async { Reaper::current() });
        assert!(
            !owner_a.ptr_eq(&owner_b),
            "a second runtime on the thread got the first one's reaper"
        );
        assert!(a.block_on(async { Reaper::current() }).ptr_eq(&owner_a));
        drop(b);
        drop_one(&owner_a);
        assert_eq!(quarantined(), 0, "runtime A still runs");
        drop_one(&owner_b);
        assert_eq!(quarantined(), 1, "runtime B is shutting down");
        drop(a);
    }
}
