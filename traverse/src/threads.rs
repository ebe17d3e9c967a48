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

use std::io;
use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Scope;
use std::time::{Duration, Instant};

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;

use crate::engine::{Shared, Worker};
use crate::links::{self, Links};
use crate::node::{Cursor, DirNode, Ent};
use crate::queue::Queue;
use crate::sys;
use crate::totals::Accumulator;
use crate::{Error, Op, VisitorBuilder};

/// Bytes per `getdents64` call: a directory of up to ~30 000 entries is
/// read in one call (peers use 32 KiB, about 1 000 entries).
const BUF_LEN: usize = 1 << 20;

/// A worker thread's stack: the walk is a loop, not a recursion, so a
/// small one does (Rust's default is 2 MiB, which counts against
/// `ulimit -v`).
const WORKER_STACK: usize = 256 << 10;

/// Address space that must be free for one more worker thread: its stack
/// and buffer, and room to spare for the walk's other allocations.
const WORKER_ROOM: usize = 16 << 20;

/// The buffer when [`BUF_LEN`] cannot be allocated (as much as glibc's
/// `readdir` uses).
const SMALL_BUF_LEN: usize = 32 << 10;

/// Entries per chunk of a large directory's stats.
const CHUNK: usize = 2048;

/// A unit of work slower than this plus [`SLOW_PER_ENTRY`] per entry means
/// the workers wait for the disk (a warm `statx` takes 1-2 µs, a cold one
/// tens to thousands).
const SLOW_UNIT: Duration = Duration::from_micros(200);
const SLOW_PER_ENTRY: Duration = Duration::from_micros(20);

/// Entries read, and not yet stat'ed, past which a large directory on a
/// warm cache is shared out while it is still being read.
const STREAM_AT: usize = 4 * CHUNK;

/// Entries of a large directory stat'ed in directory order before deciding
/// on inode order: if any of them blocked, the inodes come from the disk.
const PROBE: usize = 64;

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
    /// Why the walk was cut short (a worker panicked, or none could
    /// start): reported as an error once every worker has stopped.
    failure: Mutex<Option<String>>,
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
        failure: Mutex::new(None),
        total: Mutex::new(Accumulator::new(shared.config.count_links)),
        links: if shared.config.list || shared.config.count_links {
            None
        } else {
            Links::new()
        },
    };
    sys::one_malloc_arena_under_address_limit();
    // The calling thread's worker gets its buffer first: if memory is so
    // short that even it cannot, nothing can be walked.
    match Reader::new() {
        Ok(reader) => std::thread::scope(|scope| {
            for _ in 1..shared.config.jobs {
                if !pool.grow() || !start_worker(&pool, scope) {
                    break;
                }
            }
            run_worker(&pool, scope, reader);
        }),
        Err(why) => pool.fail(why),
    }
    let mut total = pool.total.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(why) = pool.failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let cause = io::Error::other(format!("{why}; the totals are incomplete"));
        visitors
            .build()
            .error(Error::new(root_path, Op::Read, cause));
        total.totals.errors += 1;
    }
    total
}

/// Spawns a worker thread (already counted in `started`); false, with
/// the count given back, when the system refuses a thread or memory is
/// short. The thread's buffer is allocated here, before the spawn, so
/// the check for room to spare sees what the threads already started
/// took.
fn start_worker<'scope, 'env>(pool: &'env Pool<'env>, scope: &'scope Scope<'scope, 'env>) -> bool {
    // Little address space left (`ulimit -v`): a thread would take what
    // the walk's own allocations need, and a failed allocation aborts
    // the process.
    let room = Vec::<u8>::new().try_reserve_exact(WORKER_ROOM).is_ok();
    let Some(reader) = room.then(Reader::new).and_then(Result::ok) else {
        pool.cannot_grow();
        return false;
    };
    let spawned = std::thread::Builder::new()
        .name("traverse-worker".into())
        .stack_size(WORKER_STACK)
        .spawn_scoped(scope, move || {
            pool.queue.join(&pool.running);
            run_worker(pool, scope, reader);
        });
    if spawned.is_err() {
        pool.cannot_grow();
        return false;
    }
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
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| work(pool, scope, reader)));
    if let Err(payload) = outcome {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        pool.fail(format!("a worker thread panicked: {message}"));
    }
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
            Work::Dir(dir, dev) => reader.read(&mut worker, pool, &dir, Some(dev)),
            Work::Subdir(dir) => reader.read(&mut worker, pool, &dir, None),
            Work::Stat(batch, range) => reader.stat_chunk(&mut worker, pool, &batch, range),
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
        pool.queue.offer(&mut own);
    }
    let acc = worker.into_accumulator();
    pool.total
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .merge(acc);
}

impl Pool<'_> {
    /// Ends the walk for `why` (the first reason given is reported).
    fn fail(&self, why: String) {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(why);
        self.queue.abort();
    }

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
        let max = self.shared.config.max_jobs;
        !self.spawn_failed.load(Ordering::Relaxed)
            && self
                .started
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok()
    }
}

/// A unit of work.
enum Work {
    /// Read this directory (on this device, if known) and stat its entries.
    Dir(Arc<DirNode>, Option<u64>),
    /// The same for a subdirectory not counted yet: its `d_type` said
    /// directory, so it is stat'ed through its descriptor once open (no
    /// name lookup) rather than by name in its parent.
    Subdir(Arc<DirNode>),
    /// Stat these entries of a large directory.
    Stat(Arc<Batch>, Range<usize>),
}

/// A large directory's entries, stat'ed in chunks by several workers.
struct Batch {
    dir: Arc<DirNode>,
    fd: Arc<OwnedFd>,
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// The directory's device, if its `d_ino`s can be trusted.
    link_dev: Option<u64>,
    /// Chunks of the directory (all its batches) not yet done, plus one
    /// while its reader reads and stats its own chunk; the last one
    /// releases the directory.
    left: Arc<AtomicUsize>,
}

/// The order in which a large directory's entries are stat'ed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Not known yet: the directory may still be small, or not probed.
    Undecided,
    /// As read: the cache is warm, so the entries may be shared out while
    /// the directory is still being read.
    Directory,
    /// Sorted by inode number, once all are read: the cache is cold.
    Inode,
}

/// Puts the chunks of `batch` from entry `from` on the shared stack.
fn share_chunks(pool: &Pool<'_>, batch: &Arc<Batch>, from: usize) {
    let len = batch.ents.len();
    let starts: Vec<usize> = (from..len).step_by(CHUNK).collect();
    batch.left.fetch_add(starts.len(), Ordering::AcqRel);
    // Pushed last chunk first, so the stack hands them out in order: the
    // workers then sweep neighbouring inodes together, which a cold inode
    // table reads nearly sequentially.
    pool.queue.share(
        starts
            .into_iter()
            .rev()
            .map(|start| Work::Stat(Arc::clone(batch), start..(start + CHUNK).min(len))),
    );
}

/// A worker's buffers, kept from one directory to the next.
struct Reader {
    buf: Vec<u8>,
    /// The directory this worker opened last (see [`Cursor`]).
    cursor: Cursor,
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// Subdirectories found by the current unit of work.
    children: Vec<Work>,
    /// Devices seen, and whether their filesystem's `d_ino`s are inode
    /// numbers: one `fstatfs` per device and worker.
    trust: Vec<(u64, bool)>,
}

impl Reader {
    /// A reader with a [`BUF_LEN`] buffer, or a smaller one when memory is
    /// short (`ulimit -v`): more `getdents64` calls, the same result.
    fn new() -> Result<Reader, String> {
        let mut buf = Vec::new();
        if buf.try_reserve_exact(BUF_LEN).is_err() && buf.try_reserve_exact(SMALL_BUF_LEN).is_err()
        {
            return Err("cannot allocate a buffer to read directories".to_owned());
        }
        buf.resize(buf.capacity().min(BUF_LEN), 0);
        Ok(Reader {
            buf,
            cursor: Cursor::default(),
            names: Vec::new(),
            ents: Vec::new(),
            children: Vec::new(),
            trust: Vec::new(),
        })
    }

    /// `dev` if the directory `fd` on it is on a filesystem whose `d_ino`s
    /// can be trusted ([`links::trusts_d_ino`]).
    fn link_dev(&mut self, dev: u64, fd: BorrowedFd<'_>) -> Option<u64> {
        let trusted = match self.trust.iter().find(|(d, _)| *d == dev) {
            Some(&(_, trusted)) => trusted,
            None => {
                let trusted = sys::fs_type(fd).is_ok_and(links::trusts_d_ino);
                self.trust.push((dev, trusted));
                trusted
            }
        };
        trusted.then_some(dev)
    }

    /// Reads `dir` and stats its entries (the first chunk of them when
    /// there are many: the others go to the shared stack, on a warm cache
    /// while it reads on), after counting `dir` itself when it was not
    /// stat'ed yet (`counted` is `None`; else it holds the device, if
    /// known); returns how many entries it stat'ed.
    fn read(
        &mut self,
        worker: &mut Worker<'_>,
        pool: &Pool<'_>,
        dir: &Arc<DirNode>,
        counted: Option<Option<u64>>,
    ) -> usize {
        let shared = pool.shared;
        let uncounted = counted.is_none();
        worker.enter(dir);
        let opened = if uncounted {
            dir.open_or_stat(sys::open_dir, &shared.budget, &mut self.cursor)
        } else {
            dir.open(sys::open_dir, &shared.budget, &mut self.cursor)
                .map_err(|cause| (cause, None))
        };
        let fd = match opened {
            Ok(fd) => fd,
            Err((cause, stat)) => {
                match stat {
                    // No longer a directory (replaced since it was
                    // listed): counted as what it is now, as du would.
                    Some(Ok(st)) if !st.is_dir() => worker.count_stat(&st),
                    Some(Ok(st)) => {
                        worker.count_stat(&st);
                        worker.dir_error(Op::Open, cause);
                    }
                    // Gone, or unreachable: the stat's error is the one
                    // du would report.
                    Some(Err(cause)) => worker.dir_error(Op::Stat, cause),
                    None => worker.dir_error(Op::Open, cause),
                }
                worker.leave(shared);
                return 0;
            }
        };
        let dev = match counted {
            Some(dev) => dev,
            None => match sys::fstatx(fd.as_fd()) {
                Ok(st) => {
                    if !worker.opened_dir(&st) {
                        worker.leave(shared);
                        return 0;
                    }
                    worker.count_stat(&st);
                    Some(st.dev)
                }
                Err(cause) => {
                    worker.dir_error(Op::Stat, cause);
                    None
                }
            },
        };
        let links = pool
            .links
            .as_ref()
            .zip(dev)
            .and_then(|(links, dev)| self.link_dev(dev, fd.as_fd()).map(|dev| (links, dev)));
        self.names.clear();
        self.ents.clear();
        let may_split = !shared.config.list && shared.config.max_jobs > 1;
        let mut order = Order::Undecided;
        // Entries at the front of `ents` already stat'ed (the probe), and
        // how many the probe stat'ed.
        let mut first = 0;
        let mut probed = 0;
        // Once the directory is split among workers: its chunks not done
        // yet, plus one for this reader (see `Batch::left`).
        let mut split: Option<Arc<AtomicUsize>> = None;
        let mut total = 0;
        'read: while !shared.interrupted() {
            let n = match getdents64(fd.as_fd(), &mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(cause) => {
                    worker.dir_error(Op::Read, cause);
                    break;
                }
            };
            let before = self.ents.len();
            for entry in DirentIter::new(&self.buf[..n]) {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(bad) => {
                        worker.dir_error(Op::Read, bad.into());
                        break 'read;
                    }
                };
                if entry.is_dot_or_dotdot() {
                    continue;
                }
                self.ents.push(Ent::push(
                    &mut self.names,
                    entry.ino(),
                    entry.name_bytes(),
                    entry.d_type(),
                ));
            }
            total += self.ents.len() - before;
            // A large directory on a warm cache: what is read so far goes
            // to the other workers while this one reads on (reading 200 000
            // entries is a third of a warm walk of them).
            if may_split && order != Order::Inode && self.ents.len() - first >= STREAM_AT {
                if order == Order::Undecided {
                    order = match shared.config.inode_order {
                        None => Order::Directory,
                        Some(_) if shared.inode_order(self.ents.len()) => {
                            first = PROBE.min(self.ents.len());
                            probed = first;
                            self.probe(worker, shared, dir, fd.as_fd(), links)
                        }
                        Some(_) => Order::Undecided,
                    };
                }
                if order == Order::Directory {
                    let left = split.get_or_insert_with(|| {
                        dir.hold(Arc::clone(&fd), &shared.budget);
                        Arc::new(AtomicUsize::new(1))
                    });
                    let batch = self.batch(dir, &fd, links, left);
                    share_chunks(pool, &batch, first);
                    first = 0;
                }
            }
        }
        let len = self.ents.len();
        if order == Order::Undecided && shared.inode_order(len) {
            order = self.probe(worker, shared, dir, fd.as_fd(), links);
            first = PROBE.min(len);
            probed = first;
        }
        if order == Order::Inode {
            self.ents[first..].sort_unstable_by_key(|e| e.ino);
        }
        let left = match split {
            Some(left) => left,
            None if !may_split || len - first <= CHUNK => {
                let listing = Listing {
                    dir,
                    fd: fd.as_fd(),
                    names: &self.names,
                    links,
                };
                stat_entries(
                    worker,
                    shared,
                    &listing,
                    &self.ents[first..],
                    &mut self.children,
                );
                dir.keep(fd, self.children.len(), &shared.budget);
                worker.leave(shared);
                return total;
            }
            None => {
                dir.hold(Arc::clone(&fd), &shared.budget);
                Arc::new(AtomicUsize::new(1))
            }
        };
        // The rest of a large directory: other workers take all chunks but
        // the first, which this reader stats on its share of `left`.
        let batch = self.batch(dir, &fd, links, &left);
        let own = first..(first + CHUNK).min(len);
        share_chunks(pool, &batch, own.end);
        worker.leave(shared);
        // What this unit stat'ed: the probe and its chunk (the slow-unit
        // rule compares its time with that).
        probed + self.stat_chunk(worker, pool, &batch, own)
    }

    /// Stats the first [`PROBE`] entries of a large directory in directory
    /// order and says in which order to stat the rest: inode order only
    /// pays when the inodes come from the disk; on a warm cache it costs
    /// CPU (scattered accesses to the names and the kernel's inodes: +20 %
    /// on 200 000 files). So sort only if those few blocked.
    fn probe(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        dir: &Arc<DirNode>,
        fd: BorrowedFd<'_>,
        links: Option<(&Links, u64)>,
    ) -> Order {
        let before = sys::voluntary_switches();
        let listing = Listing {
            dir,
            fd,
            names: &self.names,
            links,
        };
        let end = PROBE.min(self.ents.len());
        stat_entries(
            worker,
            shared,
            &listing,
            &self.ents[..end],
            &mut self.children,
        );
        if sys::voluntary_switches() > before {
            Order::Inode
        } else {
            Order::Directory
        }
    }

    /// The entries read so far, as a batch of `dir` (taken from the reader).
    fn batch(
        &mut self,
        dir: &Arc<DirNode>,
        fd: &Arc<OwnedFd>,
        links: Option<(&Links, u64)>,
        left: &Arc<AtomicUsize>,
    ) -> Arc<Batch> {
        Arc::new(Batch {
            dir: Arc::clone(dir),
            fd: Arc::clone(fd),
            names: std::mem::take(&mut self.names),
            ents: std::mem::take(&mut self.ents),
            link_dev: links.map(|(_, dev)| dev),
            left: Arc::clone(left),
        })
    }

    /// Stats one chunk of a large directory; returns its length.
    fn stat_chunk(
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
        if batch.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            batch.dir.release(&shared.budget);
        }
        worker.leave(shared);
        len
    }
}

/// A directory whose entries are being stat'ed.
struct Listing<'a> {
    dir: &'a Arc<DirNode>,
    fd: BorrowedFd<'a>,
    /// The entries' names ([`Ent::name`]).
    names: &'a [u8],
    /// The hard-link set and the directory's device, when its filesystem's
    /// `d_ino`s can be trusted.
    links: Option<(&'a Links, u64)>,
}

/// Stats `ents` of `listing` relative to its descriptor, counts them, and
/// adds the subdirectories to `children`. When counting sizes, an entry
/// whose `d_type` says directory is not stat'ed here but when it is opened
/// ([`Work::Subdir`]): one name lookup fewer per directory. A further name
/// of a hard-linked inode already stat'ed is counted from its `d_type`.
fn stat_entries(
    worker: &mut Worker<'_>,
    shared: &Shared,
    listing: &Listing<'_>,
    ents: &[Ent],
    children: &mut Vec<Work>,
) {
    let Listing {
        dir,
        fd,
        names,
        links,
    } = *listing;
    // With -x the device must be known before descending; a listing
    // stats no directory anyway.
    let defer_dirs = !shared.config.list && !shared.config.one_file_system;
    for (i, ent) in ents.iter().enumerate() {
        if i % 1024 == 1023 && shared.interrupted() {
            break;
        }
        let cname = ent.name(names);
        if defer_dirs && ent.d_type == libc::DT_DIR {
            children.push(Work::Subdir(DirNode::child(dir, cname)));
            continue;
        }
        let name = cname.to_bytes();
        if let Some((links, dev)) = links {
            if !matches!(ent.d_type, libc::DT_DIR | libc::DT_UNKNOWN)
                && links.counted(dev, ent.ino, name)
            {
                worker.entry(shared, name, ent.d_type, None);
                continue;
            }
        }
        let st = if shared.needs_stat(ent.d_type) {
            match sys::statx(Some(fd), cname) {
                Ok(st) => {
                    if let Some((links, _)) = links {
                        if st.is_hard_linked() {
                            links.insert((st.dev, st.ino));
                        }
                    }
                    Some(st)
                }
                Err(cause) => {
                    worker.entry_error(name, Op::Stat, cause);
                    continue;
                }
            }
        } else {
            None
        };
        if worker.entry(shared, name, ent.d_type, st.as_ref()) {
            let (dev, id) = (st.map(|st| st.dev), st.map(|st| st.id()));
            children.push(Work::Dir(DirNode::child_with_id(dir, cname, id), dev));
        }
    }
}
