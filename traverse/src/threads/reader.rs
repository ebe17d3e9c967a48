//! A worker's directory reader: `getdents64` into a large buffer, then the
//! entries stat'ed here or, for a large directory, shared out in chunks
//! (while it is still being read on a warm cache, in inode order after a
//! probe on a cold one: [`chunks`]).

mod chunks;

use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use io_uring_getdents::syscall::getdents64;

use crate::engine::{window_full, Counted, Parts, Shared, Worker, CHUNK};
use crate::error::Op;
use crate::links::{Links, Trust};
use crate::node::{push_entries, Cursor, DirNode, Ent};
use crate::spare::Spares;

use super::entry::{stat_entries, Listing};
use super::{Pool, Work};

pub(super) use chunks::Batch;
use chunks::{share_chunks, Order};

/// Bytes per `getdents64` call: a directory of up to ~30 000 entries is
/// read in one call (peers use 32 KiB, about 1 000 entries).
const BUF_LEN: usize = 1 << 20;

/// The buffer when [`BUF_LEN`] cannot be allocated (as much as glibc's
/// `readdir` uses).
const SMALL_BUF_LEN: usize = 32 << 10;

/// A directory being read.
struct Open<'a, 'l> {
    dir: &'a Arc<DirNode>,
    fd: Arc<OwnedFd>,
    /// The hard-link set and the directory's device, when its
    /// filesystem's `d_ino`s can be trusted.
    links: Option<(&'l Links, u64)>,
}

/// How far the reading of one directory has come.
struct Progress {
    order: Order,
    /// Entries at the front of `ents` already stat'ed (the probe).
    first: usize,
    /// How many entries the probe stat'ed.
    probed: usize,
    /// Once the directory is split among workers: its parts, this
    /// reader's and its chunks.
    split: Option<Parts>,
    /// Entries read.
    read: usize,
}

/// A worker's buffers, kept from one directory to the next.
pub(super) struct Reader {
    buf: Vec<u8>,
    /// The directory this worker opened last (see [`Cursor`]).
    cursor: Cursor,
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// The place in its listing of the next entry read ([`crate::node::ListingPlace::next`]).
    seq: u32,
    /// Subdirectories found by the current unit of work.
    pub(super) children: Vec<Work>,
    /// Devices seen, and whether their filesystem's `d_ino`s are inode
    /// numbers.
    trust: Trust,
}

impl Reader {
    /// A reader with a [`BUF_LEN`] buffer, or a smaller one when memory is
    /// short (`ulimit -v`): more `getdents64` calls, the same result.
    pub(super) fn new(spares: &Spares) -> Result<Reader, String> {
        let Some(buf) = spares.buffer(BUF_LEN, SMALL_BUF_LEN) else {
            return Err("cannot allocate a buffer to read directories".to_owned());
        };
        Ok(Reader {
            buf,
            cursor: Cursor::default(),
            names: Vec::new(),
            ents: Vec::new(),
            seq: 0,
            children: Vec::new(),
            trust: Trust::default(),
        })
    }

    /// Its buffer, for the next walk.
    pub(super) fn into_buf(self) -> Vec<u8> {
        self.buf
    }

    /// Reads `dir` and stats its entries (the first chunk of them when
    /// there are many: the others go to the shared stack, on a warm cache
    /// while it reads on), after counting `dir` itself when it was not
    /// stat'ed yet; returns how many entries it stat'ed. `grow` is called
    /// when chunks go to the shared stack: one more worker may be due.
    pub(super) fn read(
        &mut self,
        worker: &mut Worker<'_>,
        pool: &Pool<'_>,
        dir: &Arc<DirNode>,
        counted: Counted,
        grow: &dyn Fn(),
    ) -> usize {
        let shared = pool.shared;
        worker.enter(dir);
        let Some((fd, dev)) = self.open(worker, shared, dir, counted) else {
            worker.end_dir(shared);
            return 0;
        };
        let links =
            pool.links.as_ref().zip(dev).and_then(|(links, dev)| {
                self.trust.link_dev(dev, fd.as_fd()).map(|dev| (links, dev))
            });
        let end = self.trust.listing_end(dev, fd.as_fd());
        self.names.clear();
        self.ents.clear();
        self.seq = 0;
        let listing = Open { dir, fd, links };
        let may_split = !shared.config.list && shared.config.max_jobs > 1;
        let mut progress = Progress {
            order: Order::Undecided,
            first: 0,
            probed: 0,
            split: None,
            read: 0,
        };
        while !shared.interrupted() {
            let Some((n, ended)) = self.read_more(worker, listing.fd.as_fd(), end) else {
                break;
            };
            progress.read += n;
            if may_split {
                self.stream(worker, pool, &listing, &mut progress, grow);
            }
            if window_full(self.ents.len() - progress.first, self.names.len()) {
                self.flush(worker, shared, &listing, &mut progress);
            }
            if ended {
                break;
            }
        }
        dir.listing_read(shared.listing_rule(progress.read as u64, listing.fd.as_fd()));
        self.finish(worker, pool, listing, may_split, progress, grow)
    }

    /// Opens `dir`, and counts it if it was not counted yet: its
    /// descriptor and device (if known), or `None` when there is nothing
    /// to read (what went wrong, or what it is now, is counted).
    fn open(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        dir: &Arc<DirNode>,
        counted: Counted,
    ) -> Option<(Arc<OwnedFd>, Option<u64>)> {
        let fd = match shared.open_to_read(dir, counted, &mut self.cursor) {
            Ok(fd) => fd,
            Err(failed) => {
                worker.open_failed(failed);
                return None;
            }
        };
        let dev = match counted {
            Counted::Yes(dev) => dev,
            Counted::No => worker.count_opened(shared, fd.as_fd())?.map(|st| st.dev),
        };
        Some((fd, dev))
    }

    /// One `getdents64` call: appends the entries it returned to `ents`
    /// and says how many and whether they end the directory (their last
    /// `d_off` is `end`, [`Trust::listing_end`]), or `None` at the end of the
    /// directory or on an error (reported).
    fn read_more(
        &mut self,
        worker: &mut Worker<'_>,
        fd: BorrowedFd<'_>,
        end: Option<u64>,
    ) -> Option<(usize, bool)> {
        let n = match getdents64(fd, &mut self.buf) {
            Ok(0) => return None,
            Ok(n) => n,
            Err(cause) => {
                worker.dir_error(Op::Read, cause);
                return None;
            }
        };
        let before = self.ents.len();
        let last = match push_entries(
            &self.buf[..n],
            &mut self.names,
            &mut self.ents,
            &mut self.seq,
        ) {
            Ok(last) => last,
            Err(bad) => {
                worker.dir_error(Op::Read, bad);
                return None;
            }
        };
        Some((self.ents.len() - before, last.is_some() && last == end))
    }

    /// A window of entries is read and not stat'ed ([`window_full`]):
    /// stats them here (in inode order if the directory is cold) and
    /// forgets them before reading on, so that a directory that never
    /// ends keeps a window in memory at most. Its subdirectories wait in
    /// `children`, counted when the directory is done.
    fn flush(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        open: &Open<'_, '_>,
        progress: &mut Progress,
    ) {
        let first = self.order_rest(worker, shared, open, progress);
        self.stat_here(worker, shared, open, first..self.ents.len());
        self.names.clear();
        self.ents.clear();
        progress.first = 0;
    }

    /// The directory is read: decides on the order if it is still open,
    /// and stats what is left here (a small directory) or this reader's
    /// chunk of it, the others shared out.
    fn finish(
        &mut self,
        worker: &mut Worker<'_>,
        pool: &Pool<'_>,
        listing: Open<'_, '_>,
        may_split: bool,
        mut progress: Progress,
        grow: &dyn Fn(),
    ) -> usize {
        let shared = pool.shared;
        let len = self.ents.len();
        let first = self.order_rest(worker, shared, &listing, &mut progress);
        let parts = match progress.split {
            Some(parts) => parts,
            None if !may_split || len - first <= CHUNK => {
                self.stat_here(worker, shared, &listing, first..len);
                let Open { dir, fd, .. } = listing;
                dir.keep(fd, self.children.len(), &shared.budget);
                worker.end_dir(shared);
                return progress.read;
            }
            None => Parts::hold(listing.dir, Arc::clone(&listing.fd), &shared.budget),
        };
        // The rest of a large directory: other workers take all chunks but
        // the first, which this reader stats as its own part.
        let batch = self.batch(&listing, &parts);
        let own = first..(first + CHUNK).min(len);
        share_chunks(pool, &batch, own.end);
        grow();
        // Its part goes on in `stat_chunk`: left here, not ended.
        worker.leave(shared);
        // What this unit stat'ed: the probe and its chunk (the slow-unit
        // rule compares its time with that).
        progress.probed + self.stat_chunk(worker, pool, &batch, own)
    }

    /// Stats the entries `range` of the directory `open` on this thread.
    fn stat_here(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        open: &Open<'_, '_>,
        range: Range<usize>,
    ) {
        let listing = Listing {
            dir: open.dir,
            fd: open.fd.as_fd(),
            names: &self.names,
            links: open.links,
        };
        stat_entries(
            worker,
            shared,
            &listing,
            &self.ents[range],
            &mut self.children,
        );
    }
}
