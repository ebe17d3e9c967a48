//! The `uring` engine: worker threads, each with its own io_uring.
//!
//! Each worker walks depth-first from its own stack, as the `threads`
//! engine's do, and shares the same node type ([`DirNode`]: descriptors
//! kept for queued children within the [`FdBudget`](crate::node::FdBudget)),
//! the same per-entry rule ([`Worker::entry`]) and the same hard-link
//! shortcut ([`Links`]). What differs is how a worker waits: it keeps
//! several directories in flight and hands their entries' stats to its
//! ring as `IORING_OP_STATX`, up to [`QUEUE`] at once, submitted in
//! batches (one `io_uring_enter` carries every statx queued since the
//! last) and reaped in batches (the worker sleeps until a quarter of what
//! is in flight has completed). A directory's stats go as chains of up to
//! [`CHAIN`] hard-linked requests, which io-wq runs one after the other in
//! one worker: one hand-off to a kernel thread per chain, not per stat.
//! Directories are read with the kernel's `IORING_OP_GETDENTS` where it
//! has it (chained by `d_off`, up to the read whose completion says the
//! directory ended, or that returns 0 on a kernel that does not say), else
//! with `getdents64` on the worker itself.
//!
//! The kernel runs every STATX (and GETDENTS) in an io-wq worker of the
//! submitting thread. The first ring a thread creates sizes its bounded
//! io-wq pool, so each worker creates its own ring and then sets the pool
//! explicitly (`IORING_REGISTER_IOWQ_MAX_WORKERS`): [`IOWQ_WARM`] workers
//! while nothing has blocked, [`IOWQ_COLD`] once a directory read blocked
//! on the disk. A cold cache also starts more walker threads (each with
//! its own ring), as the `threads` engine does, and stats the entries of a
//! large directory in inode order.

use std::cell::UnsafeCell;
use std::io;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{Scope, ThreadId};
use std::time::{Duration, Instant};

use io_uring_getdents::cqe;
use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::io_uring::{opcode, squeue, types, IoUring};
use io_uring_getdents::opcode::GetDents;
use io_uring_getdents::syscall::{getdents64, seek_dir};

use crate::engine::{report_failure, window_full, Shared, Worker, WINDOW_ENTRIES};
use crate::error::Op;
use crate::links::{Links, Trust};
use crate::node::{Cursor, DirNode, Ent};
use crate::queue::Queue;
use crate::sys::{self, Stat, STATX_FLAGS};
use crate::totals::Accumulator;
use crate::visit::VisitorBuilder;

mod interrupt;
mod window;

use interrupt::CANCEL_TAG;
use window::Resume;

/// Walker threads per CPU the engine may grow to on a cold cache: without
/// GETDENTS a walker reads each directory itself, blocked while the disk
/// reads it, so cold walks need walkers to overlap those reads (2 walkers
/// took 1.7x the time of 16 on the cold Linux tree).
pub(crate) const MAX_WORKERS_PER_CORE: usize = 8;

/// Directories a worker keeps in flight (reading or stat'ing) when the
/// descriptor budget allows: enough small directories to keep [`QUEUE`]
/// stats queued.
const DIRS_PER_WORKER: usize = 8;

/// Stats in flight per ring, and its submission queue's size.
const QUEUE: usize = 256;

/// Bounded io-wq workers per ring while the cache is warm: a warm statx
/// never blocks, so more workers than CPUs only switch between each other
/// (2, 4 and 8 cost the same CPU on the warm Linux tree).
const IOWQ_WARM: u32 = 2;

/// Bounded io-wq workers per ring once a read blocked: each blocked statx
/// holds a worker while the disk reads the inode (2 to 16 per ring, with
/// 8 to 64 walkers, gave the same cold times on the Linux tree within the
/// noise of a shared machine).
const IOWQ_COLD: u32 = 8;

/// Most stats of one directory linked into one chain
/// (`IOSQE_IO_HARDLINK`). io-wq runs a chain in one worker, one after the
/// other, so a chain costs one hand-off to a kernel thread instead of one
/// per stat; chains of different directories still run in parallel.
const CHAIN: usize = 16;

/// Bytes per `getdents64` call (the fallback reader), as the `threads`
/// engine.
const READ_BUF: usize = 1 << 20;

/// Bytes per GETDENTS read; each directory being read holds one.
const GETDENTS_BUF: usize = 64 * 1024;

/// Entries per chunk of a large directory handed to another worker.
const CHUNK: usize = 2048;

/// A directory read (`getdents64` to the end) slower than this that also
/// blocked means the disk is being read: the cache is cold. A warm read
/// of a directory of a few thousand entries takes tens of microseconds.
const SLOW_READ: Duration = Duration::from_micros(200);

/// A GETDENTS completion slower than this means the cache is cold (a warm
/// one takes tens of microseconds).
const SLOW_GETDENTS: Duration = Duration::from_millis(1);

/// Marks a completion's `user_data` as a directory read (else a statx).
const READ_TAG: u64 = 1 << 63;

/// Longest a worker sleeps in `io_uring_enter` before it looks at the
/// interrupt flag again: on a slow filesystem the completions it waits
/// for may be seconds away.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Whether io_uring can be set up *and* entered (neither disabled by the
/// `kernel.io_uring_disabled` sysctl nor refused by a seccomp filter, which
/// may allow `io_uring_setup` and refuse `io_uring_enter`); the reason
/// when not. Checked once per process, on the calling thread's ring of
/// its own, never on a walker's.
pub(crate) fn available() -> Result<(), String> {
    io_uring_getdents::detect::io_uring_usable().map_err(|why| why.to_string())
}

/// A walker's ring and statx buffers, kept for the next root
/// ([`Spares`](crate::spare::Spares)). Only for the thread that created
/// the ring (it is the ring's single issuer), and only once nothing of it
/// is in flight.
#[derive(Default)]
pub(crate) struct SpareRing(Mutex<Option<Kept>>);

/// What [`SpareRing`] keeps.
struct Kept {
    thread: ThreadId,
    ring: IoUring,
    bufs: Box<[StatxBuf]>,
}

impl SpareRing {
    /// The ring this thread left, if any.
    fn take(&self) -> Option<Kept> {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match spare.take() {
            Some(kept) if kept.thread == std::thread::current().id() => Some(kept),
            other => {
                *spare = other;
                None
            }
        }
    }

    /// Keeps this thread's idle ring for the next walk.
    fn keep(&self, ring: IoUring, bufs: Box<[StatxBuf]>) {
        let thread = std::thread::current().id();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Kept { thread, ring, bufs });
    }
}

impl std::fmt::Debug for SpareRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpareRing")
    }
}

/// The workers and what they share.
struct Pool<'a> {
    shared: &'a Shared,
    visitors: &'a dyn VisitorBuilder,
    queue: Queue<Work>,
    /// Workers counted as running (started, or about to start).
    running: AtomicUsize,
    total: Mutex<Accumulator>,
    /// Hard-linked inodes stat'ed so far; `None` when every name must be
    /// stat'ed anyway (listing, `--count-links`).
    links: Option<Links>,
    /// The GETDENTS opcode when the kernel has it.
    getdents: Option<u8>,
    /// Directories each worker may keep in flight (descriptors allowing).
    dirs_per_worker: usize,
    /// Set once a read blocked on the disk.
    cold: AtomicBool,
    /// The thread that called the walk: its ring is kept for the next.
    caller: ThreadId,
}

/// Walks below `root` (already counted) with `shared.config.jobs` worker
/// threads, each with its own ring, and more (up to `max_jobs`) when
/// directory reads wait for the disk.
pub(crate) fn walk(
    shared: &Shared,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let max = shared.config.max_jobs;
    // Beyond the one each worker's reserve covers, every further
    // directory in flight holds a descriptor of the budget; half of it at
    // most, the rest stays for parents kept open for their children.
    let want = ((DIRS_PER_WORKER - 1) * max).min(shared.budget.available() / 2);
    let extra = shared.budget.take_up_to(want);
    let root_path = root.path();
    let pool = Pool {
        shared,
        visitors,
        queue: Queue::new(vec![Work::Dir(root, Some(shared.root_dev))]),
        running: AtomicUsize::new(0),
        total: Mutex::new(Accumulator::new(shared.config.count_links)),
        links: if shared.stats_every_name() {
            None
        } else {
            Links::new(&shared.mount_names)
        },
        getdents: io_uring_getdents::detect::cached().opcode(),
        dirs_per_worker: 1 + extra / max,
        cold: AtomicBool::new(false),
        caller: std::thread::current().id(),
    };
    // The calling thread walks; more walkers start as work appears that
    // nobody waits for, so a small PATH among thousands starts no thread
    // (and no ring on a thread of its own).
    pool.running.store(1, Ordering::Release);
    std::thread::scope(|scope| run(&pool, scope));
    let mut total = pool.total.into_inner().unwrap_or_else(|p| p.into_inner());
    report_failure(&pool.queue, visitors, &root_path, &mut total);
    total
}

impl Pool<'_> {
    /// A worker counted in `running` could not start: fewer threads, then.
    fn not_started(&self) {
        self.queue.leave(&self.running);
    }
}

impl<'env> Pool<'env> {
    /// Starts one more walker if fewer than `max` are running.
    fn grow_to<'scope>(&'env self, max: usize, scope: &'scope Scope<'scope, 'env>) {
        let grown = self
            .running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok();
        if grown && !spawn(self, scope) {
            self.not_started();
        }
    }
}

/// Starts a worker thread (already counted in `running`); false if the
/// system refused the thread.
fn spawn<'scope, 'env>(pool: &'env Pool<'env>, scope: &'scope Scope<'scope, 'env>) -> bool {
    std::thread::Builder::new()
        .name("traverse-uring".into())
        .spawn_scoped(scope, move || run(pool, scope))
        .is_ok()
}

/// One worker, on the calling thread, until the walk is over.
fn run<'scope, 'env>(pool: &'env Pool<'env>, scope: &'scope Scope<'scope, 'env>) {
    let mut walker = Walker::new(pool);
    // A panic ends the walk with an error, as in the threads engine; what
    // the walker has in flight is waited for by `finish`.
    pool.queue.catching_panics(|| walker.run(scope));
    let acc = walker.finish();
    pool.total
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .merge(acc);
}

/// A unit of work.
enum Work {
    /// Read this directory (on this device, if known) and stat its entries.
    Dir(Arc<DirNode>, Option<u64>),
    /// A subdirectory not stat'ed yet: counted through its descriptor once
    /// open, then read as a [`Work::Dir`]. Its read starts as soon as its
    /// parent's listing names it, without waiting for a STATX by name.
    Subdir(Arc<DirNode>),
    /// Stat these entries of a large directory read by another worker.
    Chunk(Arc<Batch>, Range<usize>),
}

/// A directory's entries, once read.
struct Batch {
    dir: Arc<DirNode>,
    fd: Arc<OwnedFd>,
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// The directory's device, if its `d_ino`s can be trusted.
    link_dev: Option<u64>,
    /// Parts not yet done: the reader's own and the chunks handed out;
    /// the last one drops the directory's hold ([`DirNode::hold`]). Shared
    /// by the batches of every window of a directory read in windows.
    left: Arc<AtomicUsize>,
}

/// A directory in flight on one worker.
struct Active {
    dir: Arc<DirNode>,
    phase: Phase,
    /// Operations of this directory in the ring.
    pending: usize,
}

enum Phase {
    /// Being read with GETDENTS.
    Reading(Reading),
    /// Entries `next..end` of `batch` still to submit; then, if the
    /// directory was read only up to a full window, its reading goes on.
    Stating {
        batch: Arc<Batch>,
        next: usize,
        end: usize,
        resume: Option<Resume>,
    },
    /// Only while [`Walker::begin_stating`] moves from one to the other.
    Switching,
}

struct Reading {
    fd: Arc<OwnedFd>,
    link_dev: Option<u64>,
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// The kernel writes here until the completion arrives.
    buf: Box<[UnsafeCell<u8>]>,
    offset: u64,
    submitted: Instant,
    /// No read is to come for this window.
    done: bool,
    /// The window is full ([`window_full`]) before the directory ended:
    /// its entries are counted, then the reading goes on.
    more: bool,
    /// For a window after the first: the directory's parts left, already
    /// held.
    left: Option<Arc<AtomicUsize>>,
}

/// One statx result, written by the kernel.
type StatxBuf = UnsafeCell<MaybeUninit<libc::statx>>;

/// One worker thread: its ring, its directories in flight, its stack.
struct Walker<'p> {
    pool: &'p Pool<'p>,
    worker: Worker<'p>,
    /// `None` when no ring could be set up (then every stat is a direct
    /// `statx`, as in the `threads` engine).
    ring: Option<IoUring>,
    /// Operations pushed to the ring and not yet completed.
    in_flight: usize,
    /// Statx results, one per slot; `slots[i]` says whose.
    bufs: Box<[StatxBuf]>,
    slots: Vec<(usize, usize)>,
    free: Vec<usize>,
    active: Vec<Option<Active>>,
    live: usize,
    /// The active directory `worker` has entered.
    current: Option<usize>,
    own: Vec<Work>,
    /// A directory of this walker has chunks it would share with a
    /// walker that waited (see [`Walker::grow_for_spare_work`]).
    shareable: bool,
    read_buf: Vec<u8>,
    /// GETDENTS buffers of directories already read, for the next ones:
    /// a new zeroed 64 KiB buffer per directory cost page faults and
    /// zeroing each time (the allocator gives such blocks back to the
    /// system when freed).
    spare_bufs: Vec<Box<[UnsafeCell<u8>]>>,
    /// Devices seen, and whether their `d_ino`s are inode numbers.
    trust: Trust,
    /// The directory this walker opened last (see [`Cursor`]).
    cursor: Cursor,
    /// Whether this ring's io-wq was raised to [`IOWQ_COLD`].
    cold: bool,
    /// Stats built and not yet pushed: one chain.
    chain: Vec<squeue::Entry>,
}

/// The ring of one worker: created on its own thread, so the io-wq pool
/// it sizes is that thread's.
///
/// Not `IORING_SETUP_DEFER_TASKRUN`: with it io-wq hands every completion
/// back to this thread as task work, so the request linked after it is
/// issued from here again, and a [`CHAIN`] of stats would cost a round
/// trip per link instead of running in one io-wq worker.
fn new_ring() -> io::Result<IoUring> {
    let ring = IoUring::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .build(QUEUE as u32)
        .or_else(|_| IoUring::new(QUEUE as u32))?;
    set_iowq(&ring, IOWQ_WARM);
    Ok(ring)
}

/// Caps this thread's bounded io-wq pool at `n` workers (unbounded left as
/// is); a kernel without the call (before 5.15) keeps its default.
fn set_iowq(ring: &IoUring, n: u32) {
    let mut max = [n, 0];
    let _ = ring.submitter().register_iowq_max_workers(&mut max);
}

impl<'p> Walker<'p> {
    fn new(pool: &'p Pool<'p>) -> Walker<'p> {
        let (ring, bufs) = match pool.shared.spares.ring.take() {
            Some(Kept { ring, bufs, .. }) => {
                set_iowq(&ring, IOWQ_WARM);
                (Some(ring), bufs)
            }
            // Zeroed, not left uninitialised: valgrind does not see the
            // kernel's writes through io_uring, and would flag every read
            // of a result as uninitialised.
            None => (
                new_ring().ok(),
                (0..QUEUE)
                    .map(|_| UnsafeCell::new(MaybeUninit::zeroed()))
                    .collect(),
            ),
        };
        Walker {
            pool,
            worker: Worker::new(pool.shared, pool.visitors.build()),
            ring,
            in_flight: 0,
            bufs,
            slots: vec![(0, 0); QUEUE],
            free: (0..QUEUE).rev().collect(),
            active: Vec::new(),
            live: 0,
            current: None,
            own: Vec::new(),
            shareable: false,
            read_buf: Vec::new(),
            spare_bufs: Vec::new(),
            trust: Trust::default(),
            cursor: Cursor::default(),
            cold: false,
            chain: Vec::with_capacity(CHAIN),
        }
    }

    /// The worker's totals, once every operation has completed.
    fn finish(mut self) -> Accumulator {
        self.drain();
        let worker = std::mem::replace(
            &mut self.worker,
            Worker::new(self.pool.shared, Box::new(crate::visit::Ignore)),
        );
        worker.into_accumulator()
    }

    fn run<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        let pool = self.pool;
        let shared = pool.shared;
        loop {
            if shared.interrupted() {
                self.cancel_all();
                self.abandon();
                pool.queue.take(|| shared.interrupted(), &pool.running);
                return;
            }
            self.catch_cold();
            // More directories in flight, from the own stack first.
            while self.live < pool.dirs_per_worker {
                let Some(work) = self.own.pop().or_else(|| pool.queue.try_take()) else {
                    break;
                };
                self.start(work, scope);
            }
            self.fill();
            self.grow_for_spare_work(scope);
            pool.queue.offer(&mut self.own);
            if self.in_flight == 0 {
                if self.live > 0 || !self.own.is_empty() {
                    continue;
                }
                match pool.queue.take(|| shared.interrupted(), &pool.running) {
                    Some(work) => self.own.push(work),
                    None => return,
                }
                continue;
            }
            self.wait(scope);
        }
    }

    /// Raises this ring's io-wq pool once any worker saw the disk.
    fn catch_cold(&mut self) {
        if !self.cold && self.pool.cold.load(Ordering::Relaxed) {
            self.cold = true;
            if let Some(ring) = &self.ring {
                set_iowq(ring, IOWQ_COLD);
            }
        }
    }

    /// The cache is cold: more io-wq workers, and one more walker.
    fn went_cold<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        self.pool.cold.store(true, Ordering::Relaxed);
        self.catch_cold();
        self.pool.grow_to(self.pool.shared.config.max_jobs, scope);
    }

    /// Starts one more of the walkers `-j` asked for when there is work
    /// that no walker waits for. Walkers start as work appears, not all at
    /// once, so that `-j 4096` on a small tree does not hold thousands of
    /// idle threads and rings.
    fn grow_for_spare_work<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        let pool = self.pool;
        let shareable = std::mem::take(&mut self.shareable);
        let spare = shareable || self.own.len() > 1 || pool.queue.queued() > 0;
        let jobs = pool.shared.config.jobs;
        if spare && pool.queue.hungry() == 0 && pool.running.load(Ordering::Relaxed) < jobs {
            pool.grow_to(jobs, scope);
        }
    }

    /// Makes `ai` the directory the worker's messages and listing are for.
    fn focus(&mut self, ai: usize) {
        if self.current != Some(ai) {
            if self.current.is_some() {
                self.worker.leave(self.pool.shared);
            }
            let dir = &self.active[ai].as_ref().expect("a live directory").dir;
            self.worker.enter(dir);
            self.current = Some(ai);
        }
    }

    fn unfocus(&mut self) {
        if self.current.take().is_some() {
            self.worker.leave(self.pool.shared);
        }
    }

    fn insert(&mut self, active: Active) -> usize {
        self.live += 1;
        match self.active.iter().position(Option::is_none) {
            Some(i) => {
                self.active[i] = Some(active);
                i
            }
            None => {
                self.active.push(Some(active));
                self.active.len() - 1
            }
        }
    }

    /// `dev` if the directory `fd` on it has trustworthy `d_ino`s.
    fn link_dev(&mut self, dev: Option<u64>, fd: BorrowedFd<'_>) -> Option<u64> {
        self.pool.links.as_ref()?;
        self.trust.link_dev(dev?, fd)
    }

    /// Puts a unit of work in flight: opens and reads a directory (or
    /// starts reading it with GETDENTS), or takes a chunk.
    fn start<'scope>(&mut self, work: Work, scope: &'scope Scope<'scope, 'p>) {
        let shared = self.pool.shared;
        // `counted`: `None` for a subdirectory to count once open, else the
        // device if known.
        let (dir, counted) = match work {
            Work::Chunk(batch, range) => {
                let active = Active {
                    dir: Arc::clone(&batch.dir),
                    phase: Phase::Stating {
                        next: range.start,
                        end: range.end,
                        batch,
                        resume: None,
                    },
                    pending: 0,
                };
                self.insert(active);
                return;
            }
            Work::Dir(dir, dev) => (dir, Some(dev)),
            Work::Subdir(dir) => (dir, None),
        };
        let opened = match counted {
            Some(_) => dir
                .open(sys::open_dir, &shared.budget, &mut self.cursor)
                .map_err(|cause| (cause, None)),
            None => dir.open_or_stat(sys::open_dir, &shared.budget, &mut self.cursor),
        };
        let fd = match opened {
            Ok(fd) => fd,
            Err((cause, stat)) => {
                self.unfocus();
                self.worker.enter(&dir);
                match stat {
                    // No longer a directory (replaced since it was
                    // listed): counted as what it is now, as du would.
                    Some(Ok(st)) if !st.is_dir() => self.worker.count_stat(&st),
                    Some(Ok(st)) => {
                        self.worker.count_stat(&st);
                        self.worker.dir_error(Op::Open, cause);
                    }
                    // Gone, or unreachable: the stat's error is the one
                    // du would report.
                    Some(Err(cause)) => self.worker.dir_error(Op::Stat, cause),
                    None => self.worker.dir_error(Op::Open, cause),
                }
                self.worker.leave(shared);
                shared.read_done(&dir);
                return;
            }
        };
        let dev = match counted {
            Some(dev) => dev,
            // Through the descriptor just opened: its inode is in memory,
            // so this never waits for the disk, where a STATX by name
            // before the open went through an io-wq worker on a cold cache.
            None => {
                self.unfocus();
                self.worker.enter(&dir);
                let dev = match sys::fstatx(fd.as_fd(), shared.config.statx_mask()) {
                    Ok(st) => {
                        if !self.worker.opened_dir(shared, &st) {
                            self.worker.leave(shared);
                            shared.read_done(&dir);
                            return;
                        }
                        self.worker.count_stat(&st);
                        Some(st.dev)
                    }
                    Err(cause) => {
                        self.worker.dir_error(Op::Stat, cause);
                        None
                    }
                };
                self.worker.leave(shared);
                dev
            }
        };
        let link_dev = self.link_dev(dev, fd.as_fd());
        if let (Some(code), Some(_)) = (self.pool.getdents, &self.ring) {
            let reading = Reading {
                fd,
                link_dev,
                names: Vec::new(),
                ents: Vec::new(),
                buf: self
                    .spare_bufs
                    .pop()
                    .unwrap_or_else(|| (0..GETDENTS_BUF).map(|_| UnsafeCell::new(0)).collect()),
                offset: 0,
                submitted: Instant::now(),
                done: false,
                more: false,
                left: None,
            };
            let ai = self.insert(Active {
                dir,
                phase: Phase::Reading(reading),
                pending: 0,
            });
            self.submit_read(ai, code);
            return;
        }
        // No GETDENTS: read it whole here, and see whether that blocked
        // (while that can still change something).
        let watch =
            !self.cold || self.pool.running.load(Ordering::Relaxed) < shared.config.max_jobs;
        let before = watch.then(|| (Instant::now(), sys::voluntary_switches()));
        let (names, ents, error, more) = self.read_all(fd.as_fd());
        let blocked = before.is_some_and(|(t0, switches)| {
            t0.elapsed() > SLOW_READ && sys::voluntary_switches() > switches
        });
        if blocked {
            self.went_cold(scope);
        }
        let ai = self.insert(Active {
            dir,
            phase: Phase::Reading(Reading {
                fd,
                link_dev,
                names,
                ents,
                buf: Box::default(),
                offset: 0,
                submitted: Instant::now(),
                done: true,
                more,
                left: None,
            }),
            pending: 0,
        });
        if let Some(cause) = error {
            self.focus(ai);
            self.worker.dir_error(Op::Read, cause);
        }
        self.begin_stating(ai, blocked);
    }

    /// Reads the directory `fd` with `getdents64` to its end or to a full
    /// window: its names, its entries, the error that stopped the reading
    /// if any, and whether the window filled up before the end.
    fn read_all(&mut self, fd: BorrowedFd<'_>) -> (Vec<u8>, Vec<Ent>, Option<io::Error>, bool) {
        let (mut names, mut ents) = (Vec::new(), Vec::new());
        let (more, error) = match self.read_rest(fd, &mut names, &mut ents) {
            Ok(ended) => (!ended, None),
            Err(e) => (false, Some(e)),
        };
        (names, ents, error, more)
    }

    /// Reads the directory `fd` from its position with `getdents64`,
    /// appending to `names`/`ents`, up to its end (true) or a full window
    /// (false: a directory that never ends keeps one window in memory).
    fn read_rest(
        &mut self,
        fd: BorrowedFd<'_>,
        names: &mut Vec<u8>,
        ents: &mut Vec<Ent>,
    ) -> io::Result<bool> {
        if self.read_buf.is_empty() {
            self.read_buf = (self.pool.shared.spares.buffer(READ_BUF, READ_BUF))
                .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        }
        while !self.pool.shared.interrupted() {
            if window_full(ents.len(), names.len()) {
                return Ok(false);
            }
            let n = getdents64(fd, &mut self.read_buf)?;
            if n == 0 {
                break;
            }
            push_entries(&self.read_buf[..n], names, ents)?;
        }
        Ok(true)
    }

    /// Reads the rest of the directory `ai`, whose GETDENTS was cancelled,
    /// here with `getdents64`, from where GETDENTS stopped.
    fn read_here(&mut self, ai: usize) -> Option<io::Error> {
        let Some(Active {
            phase: Phase::Reading(r),
            ..
        }) = &mut self.active[ai]
        else {
            unreachable!("only a directory being read is read")
        };
        let fd = Arc::clone(&r.fd);
        let (mut names, mut ents) = (std::mem::take(&mut r.names), std::mem::take(&mut r.ents));
        let (more, error) = match seek_dir(fd.as_fd(), r.offset) {
            Err(e) => (false, Some(e)),
            Ok(()) => match self.read_rest(fd.as_fd(), &mut names, &mut ents) {
                Ok(ended) => (!ended, None),
                Err(e) => (false, Some(e)),
            },
        };
        if let Some(Active {
            phase: Phase::Reading(r),
            ..
        }) = &mut self.active[ai]
        {
            (r.names, r.ents, r.done, r.more) = (names, ents, true, more);
        }
        error
    }

    /// Queues the next GETDENTS of the directory `ai`.
    fn submit_read(&mut self, ai: usize, code: u8) {
        let Some(Active {
            phase: Phase::Reading(r),
            pending,
            ..
        }) = &mut self.active[ai]
        else {
            unreachable!("only a directory being read is read")
        };
        let sqe = GetDents::new(
            types::Fd(r.fd.as_raw_fd()),
            UnsafeCell::raw_get(r.buf.as_ptr()),
            r.buf.len() as u32,
        )
        .offset(r.offset)
        .opcode(code)
        .build()
        .user_data(READ_TAG | ai as u64);
        r.submitted = Instant::now();
        *pending += 1;
        // SAFETY: the buffer and the descriptor belong to the active
        // directory `ai`, which is not dropped while `pending` counts this
        // read, nor before every operation has completed (`drain`).
        unsafe { self.push(std::slice::from_ref(&sqe)) };
    }

    /// A GETDENTS of `ai` completed with `res` and the completion's `flags`.
    fn on_read<'scope>(
        &mut self,
        ai: usize,
        res: i32,
        flags: u32,
        scope: &'scope Scope<'scope, 'p>,
    ) {
        let code = self
            .pool
            .getdents
            .expect("reads are submitted only with GETDENTS");
        let interrupted = self.pool.shared.interrupted();
        let Some(Active {
            phase: Phase::Reading(r),
            pending,
            ..
        }) = &mut self.active[ai]
        else {
            unreachable!("a read completes on a directory being read")
        };
        *pending -= 1;
        let slow = r.submitted.elapsed() > SLOW_GETDENTS;
        let mut error = None;
        if res == -libc::ECANCELED {
            // io-wq could not start a worker (`ulimit -u`): read it here.
            error = self.read_here(ai);
        } else if res < 0 {
            error = Some(io::Error::from_raw_os_error(-res));
        } else if res == 0 || interrupted {
            r.done = true;
        } else {
            let len = (res as usize).min(r.buf.len());
            // SAFETY: the completion has arrived, so the kernel no longer
            // writes to the buffer; it wrote `res` bytes (at most its
            // length).
            let bytes =
                unsafe { std::slice::from_raw_parts(UnsafeCell::raw_get(r.buf.as_ptr()), len) };
            match push_entries(bytes, &mut r.names, &mut r.ents) {
                // The kernel saw the end: the next read would return 0
                // (and on ext4 be one more hand-off to io-wq).
                Ok(Some(_)) if cqe::dir_eof(flags) => r.done = true,
                // A position that does not move would read the same
                // records for ever.
                Ok(Some(offset)) if offset != r.offset => r.offset = offset,
                Ok(_) => r.done = true,
                Err(bad) => error = Some(bad),
            }
            if !r.done && window_full(r.ents.len(), r.names.len()) {
                (r.done, r.more) = (true, true);
            }
        }
        if slow {
            self.went_cold(scope);
        }
        if let Some(cause) = error {
            if let Some(Active {
                phase: Phase::Reading(r),
                ..
            }) = &mut self.active[ai]
            {
                r.done = true;
            }
            self.focus(ai);
            self.worker.dir_error(Op::Read, cause);
        }
        let done =
            matches!(&self.active[ai], Some(Active { phase: Phase::Reading(r), .. }) if r.done);
        if done {
            self.begin_stating(ai, slow || self.cold);
        } else {
            self.submit_read(ai, code);
        }
    }

    /// The directory `ai` is read: its entries go to the stat phase, in
    /// inode order when large and `cold`.
    fn begin_stating(&mut self, ai: usize, cold: bool) {
        let shared = self.pool.shared;
        let active = self.active[ai].as_mut().expect("a live directory");
        let Phase::Reading(r) = std::mem::replace(&mut active.phase, Phase::Switching) else {
            unreachable!("only a directory being read begins its stats")
        };
        let Reading {
            fd,
            link_dev,
            names,
            mut ents,
            buf,
            offset,
            more,
            left,
            ..
        } = r;
        if cold && shared.inode_order(ents.len()) {
            ents.sort_unstable_by_key(|e| e.ino);
        }
        let end = ents.len();
        // Held while its entries are stat'ed (from its first window on):
        // each subdirectory goes to the stack as soon as its stat says so
        // (counted in with `add_children`), not when the whole directory
        // is done, so a cold walk reads it while its parent's other stats
        // are in flight.
        let left = left.unwrap_or_else(|| {
            active.dir.hold(Arc::clone(&fd), &shared.budget);
            Arc::new(AtomicUsize::new(1))
        });
        let resume = more.then(|| Resume {
            fd: Arc::clone(&fd),
            link_dev,
            offset,
            left: Arc::clone(&left),
        });
        active.phase = Phase::Stating {
            batch: Arc::new(Batch {
                dir: Arc::clone(&active.dir),
                fd,
                names,
                ents,
                link_dev,
                left,
            }),
            next: 0,
            end,
            resume,
        };
        // No read of this directory is in flight any more (they are
        // chained, and this is called once the last one completed), so the
        // kernel writes to the buffer no more.
        if !buf.is_empty() {
            self.spare_bufs.push(buf);
        }
    }

    /// Pushes operations to the ring, all in one submission, submitting
    /// what is queued first when the submission queue has no room for them.
    ///
    /// # Safety
    ///
    /// Whatever the entries point to (buffers, names, descriptors) must
    /// stay valid until their completions are reaped.
    unsafe fn push(&mut self, sqes: &[squeue::Entry]) {
        let ring = self
            .ring
            .as_mut()
            .expect("operations are pushed only with a ring");
        loop {
            // SAFETY: the caller keeps what the entries point to alive.
            if unsafe { ring.submission().push_multiple(sqes) }.is_ok() {
                break;
            }
            if let Err(e) = ring.submit() {
                if !retry(&e) {
                    panic!("io_uring_enter failed: {e}");
                }
            }
        }
        self.in_flight += sqes.len();
    }

    /// Pushes the stats in `chain` as one chain of hard links (each runs
    /// whatever the one before it returned), all in the same submission.
    ///
    /// # Safety
    ///
    /// As [`Walker::push`], for every entry.
    unsafe fn push_chain(&mut self) {
        let Some(last) = self.chain.len().checked_sub(1) else {
            return;
        };
        for sqe in &mut self.chain[..last] {
            *sqe = sqe.clone().flags(squeue::Flags::IO_HARDLINK);
        }
        let chain = std::mem::take(&mut self.chain);
        // SAFETY: the caller keeps what the entries point to alive.
        unsafe { self.push(&chain) };
        self.chain = chain;
        self.chain.clear();
    }

    /// Submits the stats of directories in flight while slots are free;
    /// counts entries that need none; ends directories that are done.
    fn fill(&mut self) {
        for ai in 0..self.active.len() {
            self.fill_one(ai);
        }
    }

    fn fill_one(&mut self, ai: usize) {
        let pool = self.pool;
        let shared = pool.shared;
        let Some(Active {
            phase: Phase::Stating {
                batch, next, end, ..
            },
            ..
        }) = &mut self.active[ai]
        else {
            return;
        };
        // A large directory: while another worker waits, the rest goes to
        // it in chunks (in order, so workers read neighbouring inodes).
        // Past a window of chunks shared and not done, this worker stats
        // its window itself before it reads on: a directory read faster
        // than it is stat'ed (one that never ends) then keeps about two
        // windows in memory, not one more per read.
        let backlog = batch.left.load(Ordering::Acquire) * CHUNK >= WINDOW_ENTRIES;
        let shareable = *end - *next > 2 * CHUNK && !shared.config.list && !backlog;
        // Work another walker could take if one waited: one may be due.
        self.shareable |= shareable;
        if shareable && pool.queue.hungry() > 0 {
            let own_end = *next + CHUNK;
            let starts: Vec<usize> = (own_end..*end).step_by(CHUNK).collect();
            batch.left.fetch_add(starts.len(), Ordering::AcqRel);
            let last = *end;
            pool.queue.share(
                starts
                    .into_iter()
                    .rev()
                    .map(|start| Work::Chunk(Arc::clone(batch), start..(start + CHUNK).min(last))),
            );
            *end = own_end;
        }
        let batch = Arc::clone(batch);
        let (mut i, end) = (*next, *end);
        let links = pool.links.as_ref().zip(batch.link_dev);
        // With -x the device must be known before descending; a listing
        // stats no directory anyway.
        let defer_dirs = shared.defers_dirs(&batch.dir);
        let mask = shared.config.statx_mask();
        while i < end {
            if self.ring.is_some() && self.free.is_empty() {
                break;
            }
            // Every entry: on a slow filesystem each stat may take a round
            // trip of hundreds of milliseconds, and none is issued after
            // SIGINT.
            if shared.interrupted() {
                i = end;
                break;
            }
            let ent = batch.ents[i];
            i += 1;
            let cname = ent.name(&batch.names);
            if shared.skips(&batch.dir, cname.to_bytes(), ent.d_type) {
                continue;
            }
            if defer_dirs && ent.d_type == libc::DT_DIR {
                batch.dir.add_children(1);
                self.own
                    .push(Work::Subdir(DirNode::child(&batch.dir, cname)));
                continue;
            }
            let name = cname.to_bytes();
            if let Some((links, dev)) = links {
                if !matches!(ent.d_type, libc::DT_DIR | libc::DT_UNKNOWN)
                    && links.counted(dev, ent.ino, name)
                {
                    self.focus(ai);
                    self.worker
                        .known_link(shared, name, ent.d_type, (dev, ent.ino));
                    continue;
                }
            }
            if !shared.needs_stat(ent.d_type) {
                self.focus(ai);
                if self.worker.entry(shared, name, ent.d_type, None) {
                    let child = Work::Dir(DirNode::child(&batch.dir, cname), None);
                    batch.dir.add_children(1);
                    self.own.push(child);
                }
                continue;
            }
            if self.ring.is_none() {
                let result = sys::statx(Some(batch.fd.as_fd()), cname, mask);
                self.stat_done(ai, &batch, i - 1, result);
                continue;
            }
            let slot = self.free.pop().expect("a free slot, checked above");
            self.slots[slot] = (ai, i - 1);
            let sqe = opcode::Statx::new(
                types::Fd(batch.fd.as_raw_fd()),
                cname.as_ptr(),
                self.bufs[slot].get().cast::<types::statx>(),
            )
            .flags(STATX_FLAGS)
            .mask(mask)
            .build()
            .user_data(slot as u64);
            self.active[ai].as_mut().expect("live").pending += 1;
            self.chain.push(sqe);
            if self.chain.len() == CHAIN {
                // SAFETY: every entry of the chain is a stat of this
                // directory: see the push after the loop.
                unsafe { self.push_chain() };
            }
        }
        // SAFETY: each name lives in `batch`, held by the active directory
        // `ai` (and its descriptor with it) until `pending` (counted for
        // each entry above) drops to zero; each result buffer is its slot,
        // not reused until its completion is reaped (`free`), and every
        // operation completes before the buffers are dropped (`drain`).
        unsafe { self.push_chain() };
        if let Some(Active {
            phase: Phase::Stating { next, .. },
            pending,
            ..
        }) = &mut self.active[ai]
        {
            *next = i;
            if i == end && *pending == 0 {
                self.end_dir(ai);
            }
        }
    }

    /// Counts one stat'ed entry (entry `i` of `batch`, directory `ai`).
    fn stat_done(&mut self, ai: usize, batch: &Batch, i: usize, result: io::Result<Stat>) {
        let shared = self.pool.shared;
        let cname = batch.ents[i].name(&batch.names);
        self.focus(ai);
        match result {
            Ok(st) => {
                if let (Some(links), Some(_)) = (&self.pool.links, batch.link_dev) {
                    if st.is_hard_linked() {
                        links.insert((st.dev, st.ino));
                    }
                }
                let d_type = batch.ents[i].d_type;
                if self
                    .worker
                    .entry(shared, cname.to_bytes(), d_type, Some(&st))
                {
                    let node = DirNode::child_with_stat(&batch.dir, cname, Some(&st));
                    let child = Work::Dir(node, Some(st.dev));
                    batch.dir.add_children(1);
                    self.own.push(child);
                }
            }
            Err(cause) => {
                let d_type = batch.ents[i].d_type;
                self.worker
                    .stat_failed(shared, cname.to_bytes(), d_type, cause);
            }
        }
    }

    /// Every entry of `ai` is counted: the last part of its directory to
    /// end drops the hold on the directory's descriptor (its children
    /// keep it while they wait, see [`DirNode::hold`]).
    fn end_dir(&mut self, ai: usize) {
        let interrupted = self.pool.shared.interrupted();
        if let Some(Active {
            phase: Phase::Stating { resume, .. },
            ..
        }) = &mut self.active[ai]
        {
            if let Some(resume) = resume.take().filter(|_| !interrupted) {
                self.go_on(ai, resume);
                return;
            }
        }
        if self.current == Some(ai) {
            self.unfocus();
        }
        let active = self.active[ai].take().expect("a live directory");
        self.live -= 1;
        let Phase::Stating { batch, .. } = active.phase else {
            unreachable!("a directory ends after its stats")
        };
        if batch.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            batch.dir.release(&self.pool.shared.budget);
            self.pool.shared.read_done(&batch.dir);
        }
    }

    /// Sleeps until a quarter of what is in flight has completed (at least
    /// one; one on a cold cache with GETDENTS), submitting what is queued
    /// in the same call; handles what completed.
    fn wait<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        // A cold GETDENTS takes a device read; waiting for a quarter of
        // them kept the subdirectories of the first ones out of the
        // device's queue (5 ms per request: 12.8 requests in flight
        // instead of 13.5).
        let want = if self.cold && self.pool.getdents.is_some() {
            1
        } else {
            (self.in_flight / 4).max(1)
        };
        let ring = self
            .ring
            .as_mut()
            .expect("operations are in flight only with a ring");
        // A slice at a time where the kernel takes a timeout (5.11), so
        // that SIGINT is seen while the completions are far away.
        let waited = if ring.params().is_feature_ext_arg() {
            let slice = types::Timespec::from(WAIT_SLICE);
            let args = types::SubmitArgs::new().timespec(&slice);
            ring.submitter().submit_with_args(want, &args)
        } else {
            ring.submit_and_wait(want)
        };
        if let Err(e) = waited {
            if !retry(&e) && e.raw_os_error() != Some(libc::ETIME) {
                panic!("io_uring_enter failed: {e}");
            }
        }
        let mut done: Vec<(u64, i32, u32)> = ring
            .completion()
            .map(|cqe| (cqe.user_data(), cqe.result(), cqe.flags()))
            .collect();
        self.in_flight -= done.len();
        for (user_data, res, flags) in done.drain(..) {
            if user_data == CANCEL_TAG {
                continue;
            }
            if user_data & READ_TAG != 0 {
                self.on_read((user_data & !READ_TAG) as usize, res, flags, scope);
                continue;
            }
            let slot = user_data as usize;
            let (ai, i) = self.slots[slot];
            let result = if res == -libc::ECANCELED {
                // io-wq could not start a worker to run it (`ulimit -u`):
                // stat it here.
                let active = self.active[ai].as_ref().expect("a live directory");
                let Phase::Stating { batch, .. } = &active.phase else {
                    unreachable!("stats complete in the stat phase")
                };
                sys::statx(
                    Some(batch.fd.as_fd()),
                    batch.ents[i].name(&batch.names),
                    self.pool.shared.config.statx_mask(),
                )
            } else if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else {
                // SAFETY: the STATX into this slot completed successfully,
                // so the kernel filled the struct and writes it no more.
                Ok(Stat::from_statx(unsafe {
                    (*self.bufs[slot].get()).assume_init_ref()
                }))
            };
            self.free.push(slot);
            let active = self.active[ai].as_mut().expect("a live directory");
            active.pending -= 1;
            let Phase::Stating {
                batch, next, end, ..
            } = &active.phase
            else {
                unreachable!("stats complete in the stat phase")
            };
            let batch = Arc::clone(batch);
            let over = *next == *end && active.pending == 0;
            self.stat_done(ai, &batch, i, result);
            if over {
                self.end_dir(ai);
            }
        }
    }

    /// Waits for every operation in flight, discarding the results (an
    /// interrupted walk, or the end). If the ring fails, the buffers the
    /// kernel may still write are leaked rather than freed.
    fn drain(&mut self) {
        while self.in_flight > 0 {
            let Some(ring) = self.ring.as_mut() else {
                break;
            };
            if let Err(e) = ring.submit_and_wait(1) {
                if !retry(&e) {
                    std::mem::forget(std::mem::take(&mut self.bufs));
                    std::mem::forget(std::mem::take(&mut self.active));
                    self.in_flight = 0;
                    return;
                }
            }
            let n = ring.completion().count();
            self.in_flight -= n;
        }
    }
}

impl Drop for Walker<'_> {
    fn drop(&mut self) {
        self.drain();
        let spares = &self.pool.shared.spares;
        if self.in_flight == 0 && std::thread::current().id() == self.pool.caller {
            if let Some(ring) = self.ring.take() {
                spares.ring.keep(ring, std::mem::take(&mut self.bufs));
            }
        }
        if !self.read_buf.is_empty() {
            spares.give_back(std::mem::take(&mut self.read_buf));
        }
    }
}

/// Whether an `io_uring_enter` error is worth calling again: a signal, or
/// the kernel short of memory or room for completions for a moment.
fn retry(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
    )
}

/// Appends the records of one getdents buffer (but "." and "..") to
/// `names`/`ents`; returns the last record's `d_off` (`None` for an empty
/// buffer).
fn push_entries(buf: &[u8], names: &mut Vec<u8>, ents: &mut Vec<Ent>) -> io::Result<Option<u64>> {
    let mut offset = None;
    for entry in DirentIter::new(buf) {
        let entry = entry?;
        offset = Some(entry.offset());
        if entry.is_dot_or_dotdot() {
            continue;
        }
        ents.push(Ent::push(
            names,
            entry.ino(),
            entry.name_bytes(),
            entry.d_type(),
        ));
    }
    Ok(offset)
}
