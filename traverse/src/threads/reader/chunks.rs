//! A large directory: its entries stat'ed in chunks that other workers
//! take from the shared stack (on a warm cache while it is still being
//! read), in directory order or, when a probe of its first entries
//! blocked (a cold cache), in inode order.

use std::ops::Range;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use super::{Open, Progress, Reader};
use crate::engine::{Parts, Shared, Worker, CHUNK, WINDOW_ENTRIES};
use crate::node::{DirNode, Ent};
use crate::sys;
use crate::threads::entry::{stat_entries, Listing};
use crate::threads::{Pool, Work};

/// Entries read, and not yet stat'ed, past which a large directory on a
/// warm cache is shared out while it is still being read.
const STREAM_AT: usize = 4 * CHUNK;

/// Entries of a large directory stat'ed in directory order before deciding
/// on inode order: if any of them blocked, the inodes come from the disk.
const PROBE: usize = 64;

/// A large directory's entries, stat'ed in chunks by several workers.
pub(in crate::threads) struct Batch {
    dir: Arc<DirNode>,
    fd: Arc<OwnedFd>,
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// The directory's device, if its `d_ino`s can be trusted.
    link_dev: Option<u64>,
    /// The directory's parts not done yet: its chunks (of all its
    /// batches), and its reader's while it reads and stats its own chunk.
    parts: Parts,
}

/// The order in which a large directory's entries are stat'ed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// Not known yet: the directory may still be small, or not probed.
    Undecided,
    /// As read: the cache is warm, so the entries may be shared out while
    /// the directory is still being read.
    Directory,
    /// Sorted by inode number, once all are read: the cache is cold.
    Inode,
}

/// Puts the chunks of `batch` from entry `from` on the shared stack.
pub(super) fn share_chunks(pool: &Pool<'_>, batch: &Arc<Batch>, from: usize) {
    let len = batch.ents.len();
    let starts: Vec<usize> = (from..len).step_by(CHUNK).collect();
    batch.parts.add(starts.len());
    // Pushed last chunk first, so the stack hands them out in order: the
    // workers then sweep neighbouring inodes together, which a cold inode
    // table reads nearly sequentially.
    pool.queue.share(
        starts
            .into_iter()
            .rev()
            .map(|start| Work::Chunk(Arc::clone(batch), start..(start + CHUNK).min(len))),
    );
}

impl Reader {
    /// A large directory on a warm cache: what is read so far goes to the
    /// other workers while this one reads on (reading 200 000 entries is
    /// a third of a warm walk of them). The first time, decides on the
    /// order (a probe, if inode order is an option).
    pub(super) fn stream(
        &mut self,
        worker: &mut Worker<'_>,
        pool: &Pool<'_>,
        listing: &Open<'_, '_>,
        progress: &mut Progress,
        grow: &dyn Fn(),
    ) {
        let shared = pool.shared;
        if progress.order == Order::Inode || self.ents.len() - progress.first < STREAM_AT {
            return;
        }
        if progress.order == Order::Undecided {
            progress.order = match shared.config.inode_order {
                None => Order::Directory,
                Some(_) if shared.inode_order(self.ents.len()) => {
                    progress.first = PROBE.min(self.ents.len());
                    progress.probed = progress.first;
                    self.probe(worker, shared, listing)
                }
                Some(_) => Order::Undecided,
            };
        }
        // Chunks shared and not done: past a window of them the reader
        // stops sharing and stats what it reads itself ([`Reader::flush`]),
        // so a directory read faster than it is stat'ed (one that never
        // ends) does not pile up on the shared stack.
        let backlog = progress
            .split
            .as_ref()
            .is_some_and(|parts| parts.left() * CHUNK >= WINDOW_ENTRIES);
        if progress.order == Order::Directory && !backlog {
            let parts = progress.split.get_or_insert_with(|| {
                Parts::hold(listing.dir, Arc::clone(&listing.fd), &shared.budget)
            });
            let batch = self.batch(listing, parts);
            share_chunks(pool, &batch, progress.first);
            grow();
            progress.first = 0;
        }
    }

    /// Decides on the order of the entries not stat'ed yet if the directory
    /// may be cold ([`Reader::probe`]) and sorts them by inode if so; the
    /// first of them.
    pub(super) fn order_rest(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        open: &Open<'_, '_>,
        progress: &mut Progress,
    ) -> usize {
        if progress.order == Order::Undecided && shared.inode_order(self.ents.len()) {
            progress.order = self.probe(worker, shared, open);
            progress.first = PROBE.min(self.ents.len());
            progress.probed = progress.first;
        }
        let first = progress.first;
        if progress.order == Order::Inode {
            self.ents[first..].sort_unstable_by_key(|e| e.ino);
        }
        first
    }

    /// Stats the first [`PROBE`] entries of a large directory in directory
    /// order and says in which order to stat the rest: inode order only
    /// pays when the inodes come from the disk; on a warm cache it costs
    /// CPU (scattered accesses to the names and the kernel's inodes: +20 %
    /// on 200 000 files). So sort only if those few blocked.
    pub(super) fn probe(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        open: &Open<'_, '_>,
    ) -> Order {
        let before = sys::voluntary_switches();
        self.stat_here(worker, shared, open, 0..PROBE.min(self.ents.len()));
        if sys::voluntary_switches() > before {
            Order::Inode
        } else {
            Order::Directory
        }
    }

    /// The entries read so far, as a batch of the directory (taken from
    /// the reader).
    pub(super) fn batch(&mut self, open: &Open<'_, '_>, parts: &Parts) -> Arc<Batch> {
        Arc::new(Batch {
            dir: Arc::clone(open.dir),
            fd: Arc::clone(&open.fd),
            names: std::mem::take(&mut self.names),
            ents: std::mem::take(&mut self.ents),
            link_dev: open.links.map(|(_, dev)| dev),
            parts: parts.clone(),
        })
    }

    /// Stats one chunk of a large directory; returns its length.
    pub(in crate::threads) fn stat_chunk(
        &mut self,
        worker: &mut Worker<'_>,
        pool: &Pool<'_>,
        batch: &Batch,
        range: Range<usize>,
    ) -> usize {
        let shared = pool.shared;
        let len = range.len();
        worker.enter(&batch.dir);
        let listing = Listing {
            dir: &batch.dir,
            fd: batch.fd.as_fd(),
            names: &batch.names,
            links: pool.links.as_ref().zip(batch.link_dev),
        };
        stat_entries(
            worker,
            shared,
            &listing,
            &batch.ents[range],
            &mut self.children,
        );
        batch.dir.add_children(self.children.len());
        worker.end_part(shared, &batch.parts);
        len
    }
}
