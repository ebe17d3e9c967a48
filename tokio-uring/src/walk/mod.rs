//! A recursive walk of a directory tree, as a [`Stream`] of entries.
//!
//! [`WalkBuilder::build`] gives a [`Walk`] for a tokio-uring runtime
//! (`!Send`, like [`Dir`]); [`WalkBuilder::spawn`] runs the same walk on a
//! thread of its own and gives a [`WalkReceiver`], which is `Send` and
//! works under `#[tokio::main]` or any other executor.
//!
//! Every directory below the root is opened relative to its parent's
//! descriptor with `O_NOFOLLOW | O_DIRECTORY` ([`DirHandle::open_at`]), so
//! the walk never follows a symbolic link and never leaves the tree. At
//! most [`max_open`](WalkBuilder::max_open) descriptors are open at once:
//! when there is no room to keep a parent open until all its
//! subdirectories are opened, it is closed and opened again later, name by
//! name, from the nearest ancestor still open (the root always is).
//! DESIGN.md explains why the walk cannot deadlock.

mod bridge;
mod builder;
mod entry;
mod node;
mod ordered;
mod ring;
mod walkers;

use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;

use crate::fs::{Backend, Dir, DirHandle, FileType};
use builder::FilterFn;
use entry::DirName;
use node::{child_done, Node};
use ordered::Ordered;
use ring::Listing;
use walkers::{Settings, Walkers};

pub use bridge::WalkReceiver;
pub use builder::{Visit, WalkBuilder, DEFAULT_CONCURRENCY, DEFAULT_MAX_OPEN};
pub use entry::WalkEntry;
pub use walk_ignore_rules::IgnoreRules;

type Job = Pin<Box<dyn Future<Output = Done>>>;

enum Done {
    Root(Rc<Node>, io::Result<Box<(Option<Dir>, WalkEntry)>>),
    Read(Rc<Node>, Listing),
}

/// The walk of a tree: a [`Stream`] of `io::Result<WalkEntry>`, the root
/// first (depth 0), each directory before its entries, in no particular
/// order otherwise. An error is an item (naming the path, see
/// [`PathError`](crate::PathError)); the walk goes on with the rest of the
/// tree.
///
/// Needs a tokio-uring runtime, like [`Dir`]; see
/// [`WalkBuilder::spawn`] for other runtimes. See [`WalkBuilder`] for an
/// example.
pub struct Walk {
    root: Rc<Node>,
    /// The open root, until its read starts.
    root_dir: Option<Dir>,
    /// No GETDENTS: the root's subtree is walked by `walkers`.
    fallback: bool,
    mask: Option<u32>,
    max_depth: usize,
    min_depth: usize,
    /// A walk in order (sorted, contents first, following links, ignore
    /// rules): the rest of the fields are unused.
    ordered: Option<Ordered>,
    filter: Option<FilterFn>,
    concurrency: usize,
    /// How many parents may be kept open, and how many are.
    keep: usize,
    kept: Rc<Cell<usize>>,
    running: FuturesUnordered<Job>,
    /// Without GETDENTS, once the root has been yielded and is entered.
    walkers: Option<Walkers>,
    /// Directories to open, last in first out (depth first, so the number
    /// waiting stays near depth times fan-out).
    pending: Vec<Rc<Node>>,
    ready: VecDeque<(Option<Rc<Node>>, io::Result<WalkEntry>)>,
    /// The directory yielded last: it joins `pending` on the next poll,
    /// unless [`skip_current_dir`](Walk::skip_current_dir) comes first.
    deferred: Option<Rc<Node>>,
}

/// Entries buffered before the walk stops starting new directories (or,
/// without GETDENTS, before the walkers wait for the stream).
const READY_HIGH: usize = 4096;

impl Walk {
    /// The next entry, or `None` at the end.
    pub async fn next(&mut self) -> Option<io::Result<WalkEntry>> {
        StreamExt::next(self).await
    }

    /// Ends the walk early: starts nothing more, lets the directories in
    /// progress finish (each is one open and one listing), and closes every
    /// descriptor.
    ///
    /// Dropping a `Walk` also closes everything, as the operations in
    /// flight complete, while the runtime runs; but a descriptor being
    /// opened when the runtime itself ends is not closed (see the crate's
    /// "Cancellation" notes). So a walk abandoned right before its runtime
    /// ends, as on a thread of its own, should be closed this way.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new("/usr").build();
    ///     let first = walk.next().await.unwrap()?;
    ///     assert_eq!(first.depth(), 0);
    ///     walk.close().await;
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn close(mut self) {
        // A walk in order stops at its next batch; it holds no io_uring
        // operation.
        drop(self.ordered.take());
        if let Some(walkers) = self.walkers.take() {
            walkers.close().await;
        }
        self.pending.clear();
        self.deferred = None;
        self.ready.clear();
        // Each result is dropped as it comes: descriptors close then.
        while self.running.next().await.is_some() {}
    }

    /// Do not walk into the directory yielded last: nothing below it is
    /// yielded (no effect if the last entry was not a directory, or was
    /// pruned already). With GETDENTS it is never opened; without, the
    /// walkers may have read into it already, and stop there at their next
    /// directory. A filter keeps a directory from being opened at all.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).build();
    ///     let root = walk.next().await.unwrap()?;
    ///     assert_eq!(root.depth(), 0);
    ///     walk.skip_current_dir();
    ///     assert!(walk.next().await.is_none());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn skip_current_dir(&mut self) {
        if let Some(ordered) = &mut self.ordered {
            ordered.skip_current_dir();
        } else if let Some(walkers) = &mut self.walkers {
            walkers.skip_current_dir();
        } else if let Some(node) = self.deferred.take() {
            match &node.parent {
                Some(parent) => child_done(parent, &self.kept),
                None => self.root_dir = None,
            }
        }
    }

    fn start_jobs(&mut self) {
        while self.running.len() < self.concurrency && self.ready.len() < READY_HIGH {
            let Some(node) = self.pending.pop() else {
                return;
            };
            if self.fallback {
                // Only the root waits here: the walkers take the rest.
                self.start_walkers(&node);
                continue;
            }
            let dir = if node.parent.is_none() {
                self.root_dir.take()
            } else {
                None
            };
            let mask = self.mask;
            self.running.push(Box::pin(async move {
                let listing = ring::read(&node, dir, mask).await;
                Done::Read(node, listing)
            }));
        }
    }

    fn start_walkers(&mut self, root: &Node) {
        let Some(handle) = root.handle.borrow_mut().take() else {
            return;
        };
        // The walkers read the root through the handle's descriptor.
        self.root_dir = None;
        let settings = Settings {
            mask: self.mask,
            max_depth: self.max_depth,
            filter: self.filter.take(),
            walkers: self.concurrency,
            keep: self.keep,
        };
        let fd = handle.shared_fd().clone();
        self.walkers = Some(Walkers::start(
            std::sync::Arc::clone(&root.name),
            fd,
            settings,
        ));
    }

    fn finish(&mut self, done: Done) {
        match done {
            Done::Root(node, Ok(opened)) => {
                let (dir, entry) = *opened;
                let Some(dir) = dir else {
                    // A file, or a link not followed: the walk's only entry.
                    self.ready.push_back((None, Ok(entry)));
                    return;
                };
                self.fallback = dir.backend() == Backend::Fallback;
                *node.handle.borrow_mut() = Some(dir.handle());
                self.root_dir = Some(dir);
                self.ready.push_back((Some(node), Ok(entry)));
            }
            Done::Root(_, Err(mut e)) => {
                crate::PathError::set_depth(&mut e, 0);
                self.ready.push_back((None, Err(e)));
            }
            Done::Read(node, listing) => self.finish_dir(node, listing),
        }
    }

    fn finish_dir(&mut self, node: Rc<Node>, listing: Listing) {
        if let Some(parent) = &node.parent {
            child_done(parent, &self.kept);
        }
        let dirs = listing
            .items
            .iter()
            .filter(|i| matches!(i, Ok(e) if e.file_type() == FileType::Directory))
            .count();
        node.children_left.set(dirs);
        if node.parent.is_some() && dirs > 0 && self.kept.get() < self.keep {
            if let Some(kept) = listing.kept {
                *node.handle.borrow_mut() = Some(kept);
                self.kept.set(self.kept.get() + 1);
            }
        }
        for item in listing.items {
            self.ready.push_back((Some(Rc::clone(&node)), item));
        }
    }

    /// Applies the filter and the depth limit to an entry about to be
    /// yielded; a directory to walk into becomes `deferred`. False when
    /// the filter says the entry is not to be yielded.
    fn admit(&mut self, parent: Option<Rc<Node>>, entry: &WalkEntry) -> bool {
        let visit = match &mut self.filter {
            Some(filter) => filter(entry),
            None => Visit::Continue,
        };
        // A root given as a link to a directory has the link's type.
        let is_dir = entry.file_type() == FileType::Directory || entry.depth() == 0;
        let enter = is_dir && visit == Visit::Continue && entry.depth() < self.max_depth;
        let Some(parent) = parent else {
            return visit != Visit::Skip;
        };
        if entry.depth() == 0 {
            // The root: `parent` is its own node.
            if enter {
                self.deferred = Some(parent);
            } else {
                self.root_dir = None;
            }
        } else if enter {
            let name = DirName::child(&parent.name, entry.file_name());
            let depth = entry.depth();
            self.deferred = Some(Node::new(Some(parent), name, depth));
        } else if is_dir {
            child_done(&parent, &self.kept);
        }
        visit != Visit::Skip
    }
}

/// The nearest ancestor of `node` still open, and the nodes between them
/// (nearest to `node` first).
fn nearest_open(node: &Node) -> (DirHandle, Vec<&Node>) {
    let mut chain: Vec<&Node> = Vec::new();
    let mut at = node.parent.as_deref();
    while let Some(dir) = at {
        if let Some(handle) = dir.handle.borrow().as_ref() {
            return (handle.clone(), chain);
        }
        chain.push(dir);
        at = dir.parent.as_deref();
    }
    // The root: its own handle stays open while the walk runs.
    let handle = node.handle.borrow().clone();
    let handle = handle.expect("the root's handle is kept while the walk runs");
    (handle, chain)
}

impl Stream for Walk {
    type Item = io::Result<WalkEntry>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            let item = match &mut this.ordered {
                Some(ordered) => ordered.poll_next(cx),
                None => this.poll_unordered(cx),
            };
            match item {
                Poll::Ready(Some(Ok(e))) if e.depth() < this.min_depth => {}
                item => return item,
            }
        }
    }
}

impl Walk {
    fn poll_unordered(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<WalkEntry>>> {
        let this = self;
        if let Some(node) = this.deferred.take() {
            this.pending.push(node);
        }
        loop {
            this.start_jobs();
            if let Some((parent, item)) = this.ready.pop_front() {
                if let Ok(entry) = &item {
                    if !this.admit(parent, entry) {
                        continue;
                    }
                }
                return Poll::Ready(Some(item));
            }
            if let Some(walkers) = &mut this.walkers {
                return walkers.poll_next(cx);
            }
            match this.running.poll_next_unpin(cx) {
                Poll::Ready(Some(done)) => this.finish(done),
                Poll::Ready(None) if this.pending.is_empty() => return Poll::Ready(None),
                Poll::Ready(None) => {}
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl std::fmt::Debug for Walk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walk")
            .field("root", &self.root.path())
            .field("running", &self.running.len())
            .field("pending", &self.pending.len())
            .field("ready", &self.ready.len())
            .field("kept_open", &self.kept.get())
            .finish_non_exhaustive()
    }
}
