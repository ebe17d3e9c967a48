//! A walk on a thread of its own, for callers on another runtime.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures_core::Stream;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::{WalkBuilder, WalkEntry};
use crate::error::PathError;

/// Entries per message: a channel send and a wake-up cost about as much
/// as a few hundred entries, so they travel in batches. A batch leaves as
/// soon as the walk has nothing more ready, so the first entries are not
/// held back.
const BATCH: usize = 256;
/// Batches in the channel before the walk waits for the receiver.
const DEPTH: usize = 4;

type Batch = Vec<io::Result<WalkEntry>>;

/// The entries of a walk that runs on a thread of its own (from
/// [`WalkBuilder::spawn`]). `Send`, and a [`Stream`] on any executor: it
/// needs no tokio-uring runtime.
///
/// Dropping it stops the walk: the thread sees the channel closed at its
/// next batch, drops the walk (closing its descriptors) and ends.
#[derive(Debug)]
pub struct WalkReceiver {
    rx: mpsc::Receiver<Batch>,
    batch: std::vec::IntoIter<io::Result<WalkEntry>>,
}

impl WalkReceiver {
    /// The next entry, or `None` at the end.
    pub async fn next(&mut self) -> Option<io::Result<WalkEntry>> {
        StreamExt::next(self).await
    }
}

impl Stream for WalkReceiver {
    type Item = io::Result<WalkEntry>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(item) = self.batch.next() {
                return Poll::Ready(Some(item));
            }
            match ready!(self.rx.poll_recv(cx)) {
                Some(batch) => self.batch = batch.into_iter(),
                None => return Poll::Ready(None),
            }
        }
    }
}

pub(super) fn spawn(builder: WalkBuilder) -> io::Result<WalkReceiver> {
    let (tx, rx) = mpsc::channel::<Batch>(DEPTH);
    let root = builder.root.clone();
    let named = root.display().to_string();
    std::thread::Builder::new()
        .name("tokio-uring-walk".into())
        .spawn(move || {
            // Without a ring to set up and enter, tokio-uring's start would
            // panic, or its operations never complete: one error item.
            if let Err(e) = crate::io_uring_usable() {
                let _ = tx.blocking_send(vec![Err(PathError::wrap("walk", &*root, e))]);
                return;
            }
            let sender = tx.clone();
            let run = catch_unwind(AssertUnwindSafe(move || {
                tokio_uring::start(async move {
                    let mut batches = builder.build().ready_chunks(BATCH);
                    while let Some(batch) = batches.next().await {
                        if sender.send(batch).await.is_err() {
                            // The receiver is gone. The runtime ends
                            // right after this, so let what is in flight
                            // finish first, or its descriptors would stay
                            // open.
                            batches.into_inner().close().await;
                            return;
                        }
                    }
                });
            }));
            // A runtime that cannot start (io_uring disabled, no memory
            // for the ring) panics in tokio-uring: report it as an item.
            if let Err(panic) = run {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("panic");
                let err = io::Error::other(format!("walk of {} stopped: {why}", root.display()));
                let _ = tx.blocking_send(vec![Err(err)]);
            }
        })
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot start the walk thread for {named}: {e}"),
            )
        })?;
    Ok(WalkReceiver {
        rx,
        batch: Vec::new().into_iter(),
    })
}
