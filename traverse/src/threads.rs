//! The `threads` engine: worker threads on plain system calls.
//!
//! Workers share one LIFO stack of work (last in, first out keeps the walk
//! depth-first, so the stack stays as small as the tree is wide). A worker
//! reads a whole directory with `getdents64` into a large buffer and stats
//! each entry with `statx` relative to the directory's descriptor. A large
//! directory's entries are split into chunks that idle workers take from
//! the stack, so one wide directory keeps every worker busy. The lock is
//! taken once per directory or chunk, never per entry.

use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::Scope;
use std::time::{Duration, Instant};

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;

use crate::engine::{Shared, Worker};
use crate::node::{DirNode, Ent};
use crate::sys;
use crate::totals::Accumulator;
use crate::{Op, VisitorBuilder};

/// Bytes per `getdents64` call: a directory of up to ~30 000 entries is
/// read in one call (peers use 32 KiB, about 1 000 entries).
const BUF_LEN: usize = 1 << 20;

/// Entries per chunk of a large directory's stats.
const CHUNK: usize = 2048;

/// A unit of work slower than this plus [`SLOW_PER_ENTRY`] per entry means
/// the workers wait for the disk (a warm `statx` takes 1-2 µs, a cold one
/// tens to thousands).
const SLOW_UNIT: Duration = Duration::from_micros(200);
const SLOW_PER_ENTRY: Duration = Duration::from_micros(20);

/// The workers and what they share.
struct Pool<'a> {
    shared: &'a Shared,
    visitors: &'a dyn VisitorBuilder,
    queue: Queue,
    /// Workers started; more start while work is slow, up to `max_jobs`.
    running: AtomicUsize,
    total: Mutex<Accumulator>,
}

/// Walks below `root` (already counted) with `shared.config.jobs` threads,
/// and more (up to `max_jobs`) when the disk is what they wait for: on a
/// cold cache many requests in flight let the device and the kernel
/// overlap them, while on a warm cache extra threads only add contention.
pub(crate) fn walk(
    shared: &Shared,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let pool = Pool {
        shared,
        visitors,
        queue: Queue {
            state: Mutex::new(State {
                stack: vec![Work::Dir(root)],
                active: 0,
                done: false,
            }),
            ready: Condvar::new(),
        },
        running: AtomicUsize::new(shared.config.jobs),
        total: Mutex::new(Accumulator::new(shared.config.count_links)),
    };
    std::thread::scope(|scope| {
        for _ in 0..shared.config.jobs {
            start_worker(&pool, scope);
        }
    });
    pool.total.into_inner().unwrap_or_else(|p| p.into_inner())
}

fn start_worker<'scope, 'env>(pool: &'env Pool<'env>, scope: &'scope Scope<'scope, 'env>) {
    scope.spawn(move || {
        let shared = pool.shared;
        let mut worker = Worker::new(shared, pool.visitors.build());
        let mut reader = Reader::new();
        let mut next = pool.queue.next(shared, None);
        while let Some(work) = next {
            let started = Instant::now();
            let blocked_before = pool.may_grow().then(sys::voluntary_switches);
            let entries = match work {
                Work::Dir(dir) => reader.read(&mut worker, shared, &dir, &pool.queue),
                Work::Stat(batch, range) => reader.stat_chunk(&mut worker, shared, &batch, range),
            };
            // Slow and blocked (not merely preempted by a busy machine):
            // waiting for the disk.
            let slow = SLOW_UNIT + SLOW_PER_ENTRY * entries as u32;
            if let Some(before) = blocked_before {
                if started.elapsed() > slow && sys::voluntary_switches() > before && pool.grow() {
                    start_worker(pool, scope);
                }
            }
            let children = std::mem::take(&mut reader.children);
            next = pool.queue.next(shared, Some(children));
        }
        let acc = worker.into_accumulator();
        pool.total
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .merge(acc);
    });
}

impl Pool<'_> {
    /// Whether more workers may still start.
    fn may_grow(&self) -> bool {
        self.running.load(Ordering::Relaxed) < self.shared.config.max_jobs
    }

    /// Counts one more worker if the limit allows.
    fn grow(&self) -> bool {
        let max = self.shared.config.max_jobs;
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }
}

/// A unit of work.
enum Work {
    /// Read this directory and stat its entries.
    Dir(Arc<DirNode>),
    /// Stat these entries of a large directory.
    Stat(Arc<Batch>, Range<usize>),
}

/// A large directory's entries, stat'ed in chunks by several workers.
struct Batch {
    dir: Arc<DirNode>,
    fd: Arc<OwnedFd>,
    names: Vec<u8>,
    ents: Vec<Ent>,
    /// Chunks not yet done; the last one releases the directory.
    left: AtomicUsize,
}

struct State {
    stack: Vec<Work>,
    /// Workers with a unit of work in hand (they may push more).
    active: usize,
    done: bool,
}

struct Queue {
    state: Mutex<State>,
    ready: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues work for any worker, while the caller keeps working.
    fn push(&self, work: impl IntoIterator<Item = Work>) {
        let mut st = self.lock();
        st.stack.extend(work);
        self.ready.notify_all();
    }

    /// Ends the worker's unit of work, if it had one (`done` holds the
    /// subdirectories it found), and returns the next one, or `None` when
    /// the walk is over or interrupted.
    fn next(&self, shared: &Shared, done: Option<Vec<Arc<DirNode>>>) -> Option<Work> {
        let mut st = self.lock();
        if let Some(children) = done {
            st.active -= 1;
            st.stack.extend(children.into_iter().map(Work::Dir));
        }
        loop {
            if st.done {
                return None;
            }
            if shared.interrupted() {
                st.done = true;
                st.stack.clear();
                self.ready.notify_all();
                return None;
            }
            if let Some(work) = st.stack.pop() {
                st.active += 1;
                if !st.stack.is_empty() {
                    self.ready.notify_one();
                }
                return Some(work);
            }
            if st.active == 0 {
                st.done = true;
                self.ready.notify_all();
                return None;
            }
            st = self.ready.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// A worker's buffers, kept from one directory to the next.
struct Reader {
    buf: Vec<u8>,
    names: Vec<u8>,
    ents: Vec<Ent>,
    children: Vec<Arc<DirNode>>,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            buf: vec![0; BUF_LEN],
            names: Vec::new(),
            ents: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Reads `dir` and stats its entries (the first chunk of them when
    /// there are many); returns how many it stat'ed.
    fn read(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        dir: &Arc<DirNode>,
        queue: &Queue,
    ) -> usize {
        worker.enter(dir);
        let fd = match dir.open(sys::open_dir, &shared.budget) {
            Ok(fd) => fd,
            Err(cause) => {
                worker.dir_error(Op::Open, cause);
                worker.leave(shared);
                return 0;
            }
        };
        self.names.clear();
        self.ents.clear();
        'read: while !shared.interrupted() {
            let n = match getdents64(fd.as_fd(), &mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(cause) => {
                    worker.dir_error(Op::Read, cause);
                    break;
                }
            };
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
        }
        if shared.inode_order(self.ents.len()) {
            self.ents.sort_unstable_by_key(|e| e.ino);
        }
        if shared.config.list || self.ents.len() <= CHUNK || shared.config.max_jobs == 1 {
            stat_entries(
                worker,
                shared,
                dir,
                fd.as_fd(),
                &self.names,
                &self.ents,
                &mut self.children,
            );
            dir.keep(fd, self.children.len(), &shared.budget);
            worker.leave(shared);
            return self.ents.len();
        }
        // A large directory: other workers take all chunks but the first.
        let fd = Arc::new(fd);
        dir.hold(Arc::clone(&fd), &shared.budget);
        let len = self.ents.len();
        let batch = Arc::new(Batch {
            dir: Arc::clone(dir),
            fd,
            names: std::mem::take(&mut self.names),
            ents: std::mem::take(&mut self.ents),
            left: AtomicUsize::new(len.div_ceil(CHUNK)),
        });
        // Pushed last chunk first, so the stack hands them out in order:
        // the workers then sweep neighbouring inodes together, which a cold
        // inode table reads nearly sequentially.
        let starts: Vec<usize> = (CHUNK..len).step_by(CHUNK).collect();
        queue.push(
            starts
                .into_iter()
                .rev()
                .map(|start| Work::Stat(Arc::clone(&batch), start..(start + CHUNK).min(len))),
        );
        worker.leave(shared);
        self.stat_chunk(worker, shared, &batch, 0..CHUNK)
    }

    /// Stats one chunk of a large directory; returns its length.
    fn stat_chunk(
        &mut self,
        worker: &mut Worker<'_>,
        shared: &Shared,
        batch: &Batch,
        range: Range<usize>,
    ) -> usize {
        let len = range.len();
        worker.enter(&batch.dir);
        stat_entries(
            worker,
            shared,
            &batch.dir,
            batch.fd.as_fd(),
            &batch.names,
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

/// Stats `ents` (names in `names`) relative to `fd`, counts them, and
/// adds the subdirectories of `dir` to `children`.
fn stat_entries(
    worker: &mut Worker<'_>,
    shared: &Shared,
    dir: &Arc<DirNode>,
    fd: BorrowedFd<'_>,
    names: &[u8],
    ents: &[Ent],
    children: &mut Vec<Arc<DirNode>>,
) {
    for (i, ent) in ents.iter().enumerate() {
        if i % 1024 == 1023 && shared.interrupted() {
            break;
        }
        let cname = ent.name(names);
        let name = cname.to_bytes();
        let st = if shared.needs_stat(ent.d_type) {
            match sys::statx(Some(fd), cname) {
                Ok(st) => Some(st),
                Err(cause) => {
                    worker.entry_error(name, Op::Stat, cause);
                    continue;
                }
            }
        } else {
            None
        };
        if worker.entry(shared, name, ent.d_type, st.as_ref()) {
            children.push(DirNode::child(dir, cname));
        }
    }
}
