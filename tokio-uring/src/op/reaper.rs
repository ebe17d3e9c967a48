//! The per-runtime task of this crate.
//!
//! It has two jobs:
//! - Collect the results of opens whose futures were dropped in flight.
//!   tokio-uring keeps a dropped operation's stable data until its
//!   completion, but throws the completion away, so a dropped OPENAT would
//!   leak the descriptor it creates. Instead, a dropped `OpenDirFuture`
//!   hands its in-flight operation to this task, which polls it to the end
//!   and drops the resulting `Dir`, closing the descriptor.
//! - Tell [`kernel_box`](super::kernel_box) when the runtime shuts down:
//!   the runtime drops this task with its others, before its driver.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};

use super::kernel_box;
use super::openat::InFlightOpen;

#[derive(Default)]
pub(crate) struct Reaper {
    orphans: RefCell<Vec<InFlightOpen>>,
    waker: Cell<Option<Waker>>,
}

thread_local! {
    /// The reaper of the runtime running on this thread, if any. Weak: the
    /// spawned task owns it, so it dies with the runtime's task set.
    static CURRENT: RefCell<Weak<Reaper>> = const { RefCell::new(Weak::new()) };
}

impl Reaper {
    /// The reaper of the current runtime, spawning it on first use. Must
    /// be called inside a tokio-uring runtime (as every submission is).
    pub(crate) fn current() -> Weak<Reaper> {
        CURRENT.with(|current| {
            if current.borrow().strong_count() > 0 {
                return current.borrow().clone();
            }
            kernel_box::runtime_started();
            let reaper = Rc::new(Reaper::default());
            let weak = Rc::downgrade(&reaper);
            *current.borrow_mut() = weak.clone();
            drop(tokio_uring::spawn(run(reaper)));
            weak
        })
    }

    /// Takes over an in-flight open whose future is being dropped.
    pub(crate) fn adopt(&self, op: InFlightOpen) {
        self.orphans.borrow_mut().push(op);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        kernel_box::runtime_shutting_down();
    }
}

async fn run(reaper: Rc<Reaper>) {
    poll_fn(|cx| {
        reaper.waker.set(Some(cx.waker().clone()));
        // Completed opens yield a `Dir` (or an error), dropped right here:
        // that closes the descriptor.
        reaper
            .orphans
            .borrow_mut()
            .retain_mut(|op| Pin::new(op).poll(cx).is_pending());
        Poll::<()>::Pending
    })
    .await
}
