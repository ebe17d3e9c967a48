//! The `threads` engine: worker threads on plain system calls.
//!
//! Each worker walks depth-first from its own stack of directories (last
//! in, first out keeps it as small as the tree is wide) and takes no lock
//! for it; when another worker waits for work, it hands over the older
//! half of its stack (the directories nearest the root, the largest
//! subtrees) through one shared stack. A worker reads a whole directory
//! with `getdents64` into a large buffer and stats each entry with `statx`
//! relative to the directory's descriptor. A large directory's entries are
//! split into chunks put on the shared stack, so one wide directory keeps
//! every worker busy (on a warm cache, while it is still being read). A
//! further name of a hard-linked inode already stat'ed is counted from its
//! `d_ino` ([`crate::links`]). The shared lock is taken when a worker runs
//! out of work or gives some away, never per entry and, while every worker
//! is busy, not per directory either.

mod entry;
mod reader;

use std::sync::Arc;
use std::thread::Scope;
use std::time::{Duration, Instant};

use crate::engine::{self, Counted, Engine, Shared, Worker};
use crate::node::DirNode;
use crate::sys;
use crate::totals::Accumulator;
use crate::visit::VisitorBuilder;

use reader::{Batch, Reader};

/// A worker thread's stack: the walk is a loop, not a recursion, so a
/// small one does (Rust's default is 2 MiB, which counts against
/// `ulimit -v`).
const WORKER_STACK: usize = 256 << 10;

/// A unit of work slower than this plus [`SLOW_PER_ENTRY`] per entry means
/// the workers wait for the disk (a warm `statx` takes 1-2 µs, a cold one
/// tens to thousands).
const SLOW_UNIT: Duration = Duration::from_micros(200);
const SLOW_PER_ENTRY: Duration = Duration::from_micros(20);

/// The workers and what they share.
type Pool<'a> = engine::Pool<'a, Threads>;

/// The `threads` engine: a worker's kit is its reader, allocated before
/// its thread is spawned.
struct Threads;

impl Engine for Threads {
    type Batch = Batch;
    type Kit = Reader;
    type Walker<'p> = Walker<'p>;
    const THREAD: &'static str = "traverse-worker";
    const STACK: Option<usize> = Some(WORKER_STACK);

    fn kit(pool: &Pool<'_>) -> Result<Reader, String> {
        Reader::new(&pool.shared.spares)
    }

    fn walker<'p>(pool: &'p Pool<'p>, reader: Reader) -> Walker<'p> {
        Walker {
            pool,
            worker: Worker::new(pool.shared, pool.visitors.build()),
            reader,
        }
    }

    fn walk<'scope, 'p>(walker: &mut Walker<'p>, scope: &'scope Scope<'scope, 'p>) {
        walker.work(scope);
    }

    fn finish(walker: Walker<'_>) -> Accumulator {
        walker
            .pool
            .shared
            .spares
            .give_back(walker.reader.into_buf());
        walker.worker.into_accumulator()
    }
}

/// One worker: its counts and its reader.
struct Walker<'p> {
    pool: &'p Pool<'p>,
    worker: Worker<'p>,
    reader: Reader,
}

/// Walks below `root` (already counted) with `shared.config.jobs` threads,
/// and more (up to `max_jobs`) when the disk is what they wait for: on a
/// cold cache many requests in flight let the device and the kernel
/// overlap them, while on a warm cache extra threads only add contention.
///
/// One worker runs on the calling thread, so the walk goes on when no
/// thread can be spawned; a spawn that fails means fewer workers. A worker
/// that panics stops the walk: the others stop, and the summary counts one
/// error, reported with the panic's message.
pub(crate) fn walk(
    shared: &Shared,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let root_path = root.path();
    let pool = Pool::new(shared, visitors, root, Threads);
    sys::one_malloc_arena_under_address_limit();
    // The calling thread's worker gets its buffer first: if memory is so
    // short that even it cannot, nothing can be walked. Workers start as
    // work appears that nobody waits for: a small PATH among thousands
    // starts none (the calling thread walks it), and `-j 4096` on a small
    // tree holds no idle threads and buffers.
    pool.walk(&root_path)
}

impl<'p> Walker<'p> {
    /// One worker's loop: its own stack first, then the shared one, until
    /// the walk is over.
    fn work<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        let pool = self.pool;
        let shared = pool.shared;
        let (worker, reader) = (&mut self.worker, &mut self.reader);
        let mut own: Vec<Work> = Vec::new();
        // Voluntary context switches counted since the last slow unit (or
        // the last wait for work, which blocks too); read only while the
        // pool may grow, and then once per slow unit: a fast warm walk
        // makes no getrusage call.
        let mut switches: Option<u64> = None;
        // Whether the next unit counts its own switches: a slow unit that
        // blocked since an older count may have blocked outside itself (a
        // lock between two units) while a busy machine preempted it, so
        // the count is taken again for the next unit before the pool
        // grows.
        let mut recount = false;
        // Work nobody waits for: one more of the workers `-j` asked for.
        let grow = || {
            if pool.queue.hungry() == 0 {
                pool.grow_to(shared.config.jobs, scope);
            }
        };
        loop {
            let work = match own.pop() {
                Some(work) if !shared.interrupted() && !pool.queue.aborted() => work,
                _ => {
                    own.clear();
                    switches = None;
                    match pool.queue.take(|| shared.interrupted(), &pool.running) {
                        Some(work) => work,
                        None => break,
                    }
                }
            };
            let own_count = (switches.is_none() || recount) && pool.may_grow();
            if own_count {
                switches = Some(sys::voluntary_switches());
                recount = false;
            }
            let (spawned, waits) = (pool.started(), sys::lock_waits());
            let started = switches.map(|_| Instant::now());
            let entries = match work {
                Work::Dir(dir, dev) => reader.read(worker, pool, &dir, Counted::Yes(dev), &grow),
                Work::Subdir(dir) => reader.read(worker, pool, &dir, Counted::No, &grow),
                Work::Chunk(batch, range) => reader.stat_chunk(worker, pool, &batch, range),
            };
            // Slow and blocked during the unit itself (not merely
            // preempted by a busy machine, nor waiting for a worker it
            // started or a lock another worker held): waiting for the
            // disk.
            let slow = SLOW_UNIT + SLOW_PER_ENTRY * entries as u32;
            if let (Some(before), Some(started)) = (switches, started) {
                if started.elapsed() > slow {
                    let now = sys::voluntary_switches();
                    if now > before {
                        let own = pool.started() == spawned && sys::lock_waits() == waits;
                        if own_count && own {
                            pool.grow_to(shared.config.max_jobs, scope);
                        } else {
                            recount = true;
                        }
                    }
                    switches = Some(now);
                }
            }
            own.append(&mut reader.children);
            if own.len() > 1 || pool.queue.queued() > 0 {
                grow();
            }
            pool.queue.offer(&mut own);
        }
    }
}

/// A unit of work of this engine.
type Work = engine::Work<Batch>;
