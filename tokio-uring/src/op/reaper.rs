//! The per-runtime task of this crate.
//!
//! It collects the results of opens whose futures were dropped in flight.
//! tokio-uring keeps a dropped operation's stable data until its
//! completion, but throws the completion away, so a dropped OPENAT would
//! leak the descriptor it creates. Instead, a dropped `OpenDirFuture`
//! hands its in-flight operation to this task, which polls it to the end
//! and drops the resulting descriptor, closing it.
//!
//! A thread may hold several tokio-uring runtimes (only one runs at a
//! time), so reapers are found by the id of the tokio runtime that is
//! running, never by thread alone: an open of one runtime must never be
//! handed to another runtime's task, whose driver does not know it.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};

use tokio::runtime::Id;

use super::openat::InFlightOpen;

#[derive(Default)]
pub(crate) struct Reaper {
    orphans: RefCell<Vec<InFlightOpen>>,
    waker: Cell<Option<Waker>>,
}

thread_local! {
    /// The reapers of the runtimes on this thread, by tokio runtime id.
    /// Weak: each spawned task owns its reaper, so it dies with its
    /// runtime's task set. Usually one entry, two when runtimes nest.
    static REAPERS: RefCell<Vec<(Id, Weak<Reaper>)>> = const { RefCell::new(Vec::new()) };
}

impl Reaper {
    /// The reaper of the runtime running now, spawning it on first use.
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime (as every submission does).
    pub(crate) fn current() -> Weak<Reaper> {
        let id = tokio::runtime::Handle::current().id();
        REAPERS.with(|reapers| {
            if let Some((_, reaper)) = reapers
                .borrow()
                .iter()
                .find(|(owner, reaper)| *owner == id && reaper.strong_count() > 0)
            {
                return reaper.clone();
            }
            let mut reapers = reapers.borrow_mut();
            reapers.retain(|(_, reaper)| reaper.strong_count() > 0);
            let reaper = Rc::new(Reaper::default());
            let weak = Rc::downgrade(&reaper);
            reapers.push((id, weak.clone()));
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

async fn run(reaper: Rc<Reaper>) {
    poll_fn(|cx| {
        reaper.waker.set(Some(cx.waker().clone()));
        // Completed opens yield an `OwnedFd` (or an error), dropped right
        // here: that closes the descriptor.
        reaper
            .orphans
            .borrow_mut()
            .retain_mut(|op| Pin::new(op).poll(cx).is_pending());
        Poll::<()>::Pending
    })
    .await
}
