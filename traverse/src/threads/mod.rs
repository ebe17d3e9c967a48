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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Scope;
use std::time::{Duration, Instant};

use crate::engine::{self, report_failure, Counted, Shared, Worker};
use crate::links::Links;
use crate::node::DirNode;
use crate::queue::Queue;
use crate::sys;
use crate::totals::Accumulator;
use crate::visit::VisitorBuilder;

use reader::{Batch, Reader};

/// A worker thread's stack: the walk is a loop, not a recursion, so a
/// small one does (Rust's default is 2 MiB, which counts against
/// `ulimit -v`).
const WORKER_STACK: usize = 256 << 10;

/// Address space that must be free for one more worker thread: its stack
/// and buffer, and room to spare for the walk's other allocations.
const WORKER_ROOM: usize = 16 << 20;

/// A unit of work slower than this plus [`SLOW_PER_ENTRY`] per entry means
/// the workers wait for the disk (a warm `statx` takes 1-2 µs, a cold one
/// tens to thousands).
const SLOW_UNIT: Duration = Duration::from_micros(200);
const SLOW_PER_ENTRY: Duration = Duration::from_micros(20);

/// The workers and what they share.
struct Pool<'a> {
    shared: &'a Shared,
    visitors: &'a dyn VisitorBuilder,
    queue: Queue<Work>,
    /// Workers counted in for the end of the walk: each counts itself in
    /// when it starts (with no work of its own yet, it cannot make the
    /// walk end early) and out when it ends. A thread that dies before
    /// it runs is thus never waited for.
    running: AtomicUsize,
    /// Workers spawned or being spawned, for the `max_jobs` bound. More
    /// start while work is slow.
    started: AtomicUsize,
    /// Set once spawning a thread failed (`ulimit -u`, `ulimit -v`): the
    /// pool stops growing and walks with the threads it has.
    spawn_failed: AtomicBool,
    /// Held while a worker is started, from the check for room to spare
    /// until the new thread runs (see [`start_worker`]).
    spawning: Mutex<()>,
    total: Mutex<Accumulator>,
    /// Hard-linked inodes stat'ed so far; `None` when every name must be
    /// stat'ed anyway (listing, `--count-links`).
    links: Option<Links>,
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
    let pool = Pool {
        shared,
        visitors,
        queue: Queue::new(vec![Work::Dir(root, Some(shared.root_dev))]),
        running: AtomicUsize::new(1),
        started: AtomicUsize::new(1),
        spawn_failed: AtomicBool::new(false),
        spawning: Mutex::new(()),
        total: Mutex::new(Accumulator::new(shared.config.count_links)),
        links: if shared.stats_every_name() {
            None
        } else {
            Links::new(&shared.mount_names)
        },
    };
    sys::one_malloc_arena_under_address_limit();
    // The calling thread's worker gets its buffer first: if memory is so
    // short that even it cannot, nothing can be walked.
    match Reader::new(&shared.spares) {
        // Workers start as work appears that nobody waits for: a small
        // PATH among thousands starts none (the calling thread walks it),
        // and `-j 4096` on a small tree holds no idle threads and buffers.
        Ok(reader) => std::thread::scope(|scope| run_worker(&pool, scope, reader)),
        Err(why) => pool.queue.fail(why),
    }
    let mut total = pool.total.into_inner().unwrap_or_else(|p| p.into_inner());
    report_failure(&pool.queue, visitors, &root_path, &mut total);
    total
}

/// Spawns a worker thread (already counted in `started`); false, with
/// the count given back, when the system refuses a thread or memory is
/// short. The thread's buffer is allocated here, before the spawn, so
/// the check for room to spare sees what the threads already started
/// took.
fn start_worker<'scope, 'env>(pool: &'env Pool<'env>, scope: &'scope Scope<'scope, 'env>) -> bool {
    // One start at a time, until the new thread runs: its own set-up
    // (std maps a signal stack for it) happens after the spawn returns,
    // and a failure there aborts the process; workers that checked for
    // room at the same moment would all have seen the same room.
    let _one_at_a_time = pool.spawning.lock().unwrap_or_else(|p| p.into_inner());
    // Little address space left (`ulimit -v`): a thread would take what
    // the walk's own allocations need, and a failed allocation aborts
    // the process.
    let room = Vec::<u8>::new().try_reserve_exact(WORKER_ROOM).is_ok();
    let Some(reader) = room
        .then(|| Reader::new(&pool.shared.spares))
        .and_then(Result::ok)
    else {
        pool.cannot_grow();
        return false;
    };
    let (running, runs) = std::sync::mpsc::sync_channel::<()>(1);
    let spawned = std::thread::Builder::new()
        .name("traverse-worker".into())
        .stack_size(WORKER_STACK)
        .spawn_scoped(scope, move || {
            let _ = running.send(());
            pool.queue.join(&pool.running);
            run_worker(pool, scope, reader);
        });
    if spawned.is_err() {
        pool.cannot_grow();
        return false;
    }
    let _ = runs.recv();
    true
}

/// Runs one worker until the walk ends. A panic (a bug, or a visitor's)
/// is caught here: it ends the whole walk rather than leaving the others
/// waiting forever for a worker that no longer runs.
fn run_worker<'scope, 'env>(
    pool: &'env Pool<'env>,
    scope: &'scope Scope<'scope, 'env>,
    reader: Reader,
) {
    pool.queue.catching_panics(|| work(pool, scope, reader));
    pool.queue.leave(&pool.running);
}

/// One worker's loop: its own stack first, then the shared one, until the
/// walk is over.
fn work<'scope, 'env>(
    pool: &'env Pool<'env>,
    scope: &'scope Scope<'scope, 'env>,
    mut reader: Reader,
) {
    let shared = pool.shared;
    let mut worker = Worker::new(shared, pool.visitors.build());
    let mut own: Vec<Work> = Vec::new();
    // Voluntary context switches counted since the last slow unit (or
    // the last wait for work, which blocks too); read only while the
    // pool may grow, and then once per slow unit: a fast warm walk
    // makes no getrusage call.
    let mut switches: Option<u64> = None;
    // Work nobody waits for: one more of the workers `-j` asked for.
    let grow = || {
        if pool.queue.hungry() == 0 && pool.grow_to(shared.config.jobs) {
            start_worker(pool, scope);
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
        if switches.is_none() && pool.may_grow() {
            switches = Some(sys::voluntary_switches());
        }
        let started = switches.map(|_| Instant::now());
        let entries = match work {
            Work::Dir(dir, dev) => reader.read(&mut worker, pool, &dir, Counted::Yes(dev), &grow),
            Work::Subdir(dir) => reader.read(&mut worker, pool, &dir, Counted::No, &grow),
            Work::Chunk(batch, range) => reader.stat_chunk(&mut worker, pool, &batch, range),
        };
        // Slow and blocked (not merely preempted by a busy machine):
        // waiting for the disk.
        let slow = SLOW_UNIT + SLOW_PER_ENTRY * entries as u32;
        if let (Some(before), Some(started)) = (switches, started) {
            if started.elapsed() > slow {
                let now = sys::voluntary_switches();
                if now > before && pool.grow() {
                    start_worker(pool, scope);
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
    shared.spares.give_back(reader.into_buf());
    let acc = worker.into_accumulator();
    pool.total
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .merge(acc);
}

impl Pool<'_> {
    /// A worker counted in could not start: the pool stops growing and
    /// walks with the workers it has.
    fn cannot_grow(&self) {
        self.spawn_failed.store(true, Ordering::Relaxed);
        self.started.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether more workers may still start.
    fn may_grow(&self) -> bool {
        self.started.load(Ordering::Relaxed) < self.shared.config.max_jobs
            && !self.spawn_failed.load(Ordering::Relaxed)
    }

    /// Counts one more worker if the limit allows.
    fn grow(&self) -> bool {
        self.grow_to(self.shared.config.max_jobs)
    }

    /// Counts one more worker if fewer than `max` are.
    fn grow_to(&self, max: usize) -> bool {
        !self.spawn_failed.load(Ordering::Relaxed)
            && self.started.load(Ordering::Relaxed) < max
            && self
                .started
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok()
    }
}

/// A unit of work of this engine.
type Work = engine::Work<Batch>;
