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
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ThreadId};
use std::time::{Duration, Instant};

use io_uring_getdents::cqe;
use io_uring_getdents::detect::RingError;
use io_uring_getdents::io_uring::{opcode, squeue, types, IoUring};
use io_uring_getdents::opcode::GetDents;
use io_uring_getdents::plus::DirentPlusIter;
use io_uring_getdents::syscall::{getdents64, seek_dir};

use crate::engine::{
    self, window_full, Counted, Engine, Parts, Shared, Step, Worker, CHUNK, WINDOW_ENTRIES,
};
use crate::error::Op;
use crate::links::Trust;
use crate::node::{push_entries, small_leaf, Cursor, DirNode, Ent, ListingPlace};
use crate::spare::Kept;
use crate::sys::{self, Stat, StatxBuf, STATX_FLAGS};
use crate::totals::Accumulator;
use crate::visit::VisitorBuilder;

// The pool of walkers, and the walker's parts, each an `impl Walker` of
// its own; all share this module's types and imports (`use super::*`).
mod interrupt;
mod plus;
mod pool;
mod read;
mod ring;
mod stat;
mod window;

use interrupt::CANCEL_TAG;
pub(crate) use pool::walk;
use pool::Pool;
use ring::{new_ring, retry, set_iowq, Io};
use window::Resume;

/// Walker threads per CPU the engine may grow to on a cold cache. Without
/// GETDENTS a walker reads each directory itself, blocked while the disk
/// reads it, so cold walks need walkers to overlap those reads (2 walkers
/// took 1.7x the time of 16 on the cold Linux tree): 8. With GETDENTS the
/// reads wait in io-wq, each walker's ring keeps up to [`IOWQ_COLD`] stats
/// waiting too, and every walker more costs a thread, a ring and its
/// io-wq workers: 4 (in the VM under icount, 2 CPUs, cold at 0.2 / 2 /
/// 5 ms: 8 walkers 330 / 345 / 381 ms, 16 walkers 340 / 357 / 382, 4
/// walkers 325 / 349 / 490; docs/benchmarks.md, "The VM under icount").
pub(crate) fn max_walkers_per_core() -> usize {
    if io_uring_getdents::detect::cached().opcode().is_some() {
        4
    } else {
        8
    }
}

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
pub(crate) fn available() -> Result<(), &'static RingError> {
    io_uring_getdents::detect::io_uring_usable()
}

/// Whether this engine would walk with readdirplus: io_uring usable, and a
/// kernel whose GETDENTS returns each entry's statx (and readdirplus not
/// turned off with `IO_URING_GETDENTS_PLUS=off`). There it costs fewer
/// instructions than the `threads` engine, warm and cold
/// (docs/benchmarks.md, "The VM under icount").
pub(crate) fn readdirplus() -> bool {
    // Detection checks first that io_uring works ([`available`]), once
    // per process.
    io_uring_getdents::detect::plus_cached().opcode().is_some()
}

/// A unit of work of this engine.
type Work = engine::Work<Batch>;

/// A directory's entries, once read.
struct Batch {
    dir: Arc<DirNode>,
    fd: Arc<OwnedFd>,
    names: Vec<u8>,
    /// The entries still to count: all of them without readdirplus; with
    /// it, those it did not look up.
    ents: Vec<Ent>,
    /// The directory's device, if its `d_ino`s can be trusted.
    link_dev: Option<u64>,
    /// The directory's parts not done yet: its reader's own and the chunks
    /// handed out (of every window of a directory read in windows).
    parts: Parts,
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
}

struct Reading {
    fd: Arc<OwnedFd>,
    link_dev: Option<u64>,
    /// The entries read and not counted yet: all of them without
    /// readdirplus; with it, only the names it did not look up (the others
    /// are counted as their records are parsed, [`Walker::count_plus`]).
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// The place in the listing of the next entry read ([`crate::node::ListingPlace::next`]).
    seq: u32,
    /// How this directory's reads ask for readdirplus
    /// ([`Walker::wants_plus`]).
    plus: PlusMode,
    /// The kernel writes here until the completion arrives.
    buf: Box<[UnsafeCell<u8>]>,
    offset: u64,
    submitted: Instant,
    /// The `io_uring_enter` that carries the read in flight
    /// ([`Io::enters`]).
    enter: u64,
    /// No read is to come for this window.
    done: bool,
    /// The window is full ([`window_full`]) before the directory ended:
    /// its entries are counted, then the reading goes on.
    more: bool,
    /// For a window after the first: the directory's parts, already held.
    parts: Option<Parts>,
}

/// A GETDENTS completion: its result, its flags, whether it was posted
/// during the `io_uring_enter` that submitted the read (the read did not
/// wait in io-wq), and when the walker reaped it.
struct Completed {
    res: i32,
    flags: u32,
    inline: bool,
    reaped: Instant,
}

/// How the reads of one directory ask for readdirplus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlusMode {
    /// Plain reads: an entry needs a STATX of its own.
    Off,
    /// Lookups from the dcache only: a name not there comes back with
    /// `EAGAIN`, and gets a STATX.
    Dcache,
    /// Lookups that may wait for the disk, one after the other in the
    /// io-wq worker that reads the directory.
    Lookups,
}

/// The errno a read from the dcache only gives a name it did not look
/// up: the entry is stat'ed as without readdirplus.
const NOT_LOOKED_UP: i32 = libc::EAGAIN;

/// One worker thread: its ring, its directories in flight, its stack.
struct Walker<'p> {
    pool: &'p Pool<'p>,
    worker: Worker<'p>,
    /// The ring and the directories in flight.
    io: Io,
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
            io: Io::new(ring, bufs),
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

    /// The worker's totals, once every operation has completed. The
    /// calling thread's ring (and its statx buffers) is kept for the next
    /// walk, and the read buffer goes back for other walks.
    fn finish(self) -> Accumulator {
        let Walker {
            pool,
            worker,
            mut io,
            read_buf,
            ..
        } = self;
        io.drain();
        let spares = &pool.shared.spares;
        if io.in_flight == 0 && std::thread::current().id() == pool.engine.caller {
            if let Some(ring) = io.ring.take() {
                spares.ring.keep(ring, std::mem::take(&mut io.bufs));
            }
        }
        if !read_buf.is_empty() {
            spares.give_back(read_buf);
        }
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
            while self.live < pool.engine.dirs_per_worker {
                let Some(work) = self.own.pop().or_else(|| pool.queue.try_take()) else {
                    break;
                };
                self.start(work, scope);
            }
            self.fill();
            self.grow_for_spare_work(scope);
            pool.queue.offer(&mut self.own);
            if self.io.in_flight == 0 {
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

    /// Makes `ai` the directory the worker's messages and listing are for.
    fn focus(&mut self, ai: usize) {
        if self.current != Some(ai) {
            if self.current.is_some() {
                self.worker.leave(self.pool.shared);
            }
            let dir = &self.io.active[ai].as_ref().expect("a live directory").dir;
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
        match self.io.active.iter().position(Option::is_none) {
            Some(i) => {
                self.io.active[i] = Some(active);
                i
            }
            None => {
                self.io.active.push(Some(active));
                self.io.active.len() - 1
            }
        }
    }

    /// `dev` if the directory `fd` on it has trustworthy `d_ino`s.
    fn link_dev(&mut self, dev: Option<u64>, fd: BorrowedFd<'_>) -> Option<u64> {
        self.pool.links.as_ref()?;
        self.trust.link_dev(dev?, fd)
    }
}
