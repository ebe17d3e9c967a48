//! The workers of a parallel walk and what they share ([`Pool`]): the
//! first worker on the calling thread, one more at a time up to a limit
//! (each engine decides when), one panic policy and the end of the walk.
//! What a worker does is its engine's ([`Engine`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Scope;

use super::{report_failure, Shared, Work};
use crate::links::Links;
use crate::node::DirNode;
use crate::queue::Queue;
use crate::totals::Accumulator;
use crate::visit::VisitorBuilder;

/// Address space that must be free for one more worker thread: its stack
/// and buffer, and room to spare for the walk's other allocations.
const WORKER_ROOM: usize = 16 << 20;

/// What a parallel engine's workers do; the pool starts and ends them.
pub(crate) trait Engine: Sized + Sync {
    /// The engine's batch of a large directory's entries ([`Work::Chunk`]).
    type Batch: Send + Sync;
    /// What a worker needs before its thread is spawned (allocated there,
    /// so the check for room to spare sees what earlier workers took).
    type Kit: Send;
    /// One worker's state while it walks.
    type Walker<'p>
    where
        Self: 'p;
    /// The name of a worker thread.
    const THREAD: &'static str;
    /// A worker thread's stack size, if not Rust's default.
    const STACK: Option<usize>;
    /// The kit of one more worker, or why there is none.
    fn kit(pool: &Pool<'_, Self>) -> Result<Self::Kit, String>;
    /// A worker, set up on its own thread.
    fn walker<'p>(pool: &'p Pool<'p, Self>, kit: Self::Kit) -> Self::Walker<'p>;
    /// The worker's loop, until the walk is over.
    fn walk<'scope, 'p>(walker: &mut Self::Walker<'p>, scope: &'scope Scope<'scope, 'p>);
    /// What the worker counted, once nothing of it is in flight (also
    /// after a panic in [`walk`](Self::walk)).
    fn finish(walker: Self::Walker<'_>) -> Accumulator;
}

/// The workers and what they share.
pub(crate) struct Pool<'a, E: Engine> {
    pub shared: &'a Shared,
    pub visitors: &'a dyn VisitorBuilder,
    pub queue: Queue<Work<E::Batch>>,
    /// Workers counted in for the end of the walk: each counts itself in
    /// when it starts (with no work of its own yet, it cannot make the
    /// walk end early) and out when it ends. A thread that dies before
    /// it runs is thus never waited for.
    pub running: AtomicUsize,
    /// Workers spawned or being spawned, for the limits.
    started: AtomicUsize,
    /// Set once spawning a thread failed (`ulimit -u`, `ulimit -v`): the
    /// pool stops growing and walks with the threads it has.
    spawn_failed: AtomicBool,
    /// Held while a worker is started, from the check for room to spare
    /// until the new thread runs (see [`start`](Pool::start)).
    spawning: Mutex<()>,
    total: Mutex<Accumulator>,
    /// Hard-linked inodes stat'ed so far; `None` when every name must be
    /// stat'ed anyway (listing, `--count-links`).
    pub links: Option<Links>,
    /// What only this engine's workers share.
    pub engine: E,
}

impl<'a, E: Engine> Pool<'a, E> {
    /// A pool whose one worker, the calling thread's, is to read `root`.
    pub fn new(
        shared: &'a Shared,
        visitors: &'a dyn VisitorBuilder,
        root: Arc<DirNode>,
        engine: E,
    ) -> Self {
        Pool {
            shared,
            visitors,
            queue: Queue::new(vec![Work::Dir(root, Some(shared.root_dev))]),
            running: AtomicUsize::new(1),
            started: AtomicUsize::new(1),
            spawn_failed: AtomicBool::new(false),
            spawning: Mutex::new(()),
            total: Mutex::new(Accumulator::new(
                shared.config.count_links,
                shared.config.latest_time,
            )),
            links: if shared.stats_every_name() {
                None
            } else {
                Links::new(&shared.mount_names)
            },
            engine,
        }
    }

    /// Walks with the calling thread as the first worker (more start as
    /// the engine grows the pool) until the walk is over, then reports
    /// why it was cut short on `root`, if it was. If even the first
    /// worker has no kit, nothing can be walked.
    pub fn walk(self, root: &Path) -> Accumulator {
        match E::kit(&self) {
            Ok(kit) => std::thread::scope(|scope| self.run(scope, kit)),
            Err(why) => self.queue.fail(why),
        }
        let mut total = self.total.into_inner().unwrap_or_else(|p| p.into_inner());
        report_failure(&self.queue, self.visitors, root, &mut total);
        total
    }

    /// The workers spawned or being spawned.
    pub fn started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    /// Whether more workers may still start.
    pub fn may_grow(&self) -> bool {
        self.started() < self.shared.config.max_jobs && !self.spawn_failed.load(Ordering::Relaxed)
    }

    /// Counts one more worker if fewer than `max` are.
    fn count_in(&self, max: usize) -> bool {
        !self.spawn_failed.load(Ordering::Relaxed)
            && self.started() < max
            && self
                .started
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok()
    }

    /// A worker counted in could not start: the pool stops growing and
    /// walks with the workers it has.
    fn cannot_grow(&self) {
        self.spawn_failed.store(true, Ordering::Relaxed);
        self.started.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<'env, E: Engine> Pool<'env, E> {
    /// Starts one more worker if fewer than `max` are started and no
    /// spawn failed yet.
    pub fn grow_to<'scope>(&'env self, max: usize, scope: &'scope Scope<'scope, 'env>) {
        if self.count_in(max) {
            self.start(scope);
        }
    }

    /// Spawns a worker thread (already counted in `started`); the count
    /// is given back, and growth stops, when the system refuses a thread
    /// or memory is short.
    fn start<'scope>(&'env self, scope: &'scope Scope<'scope, 'env>) {
        // One start at a time, until the new thread runs: its own set-up
        // (std maps a signal stack for it) happens after the spawn returns,
        // and a failure there aborts the process; workers that checked for
        // room at the same moment would all have seen the same room.
        let _one_at_a_time = self.spawning.lock().unwrap_or_else(|p| p.into_inner());
        // Little address space left (`ulimit -v`): a thread would take what
        // the walk's own allocations need, and a failed allocation aborts
        // the process.
        let room = crate::sys::can_map(WORKER_ROOM);
        let Some(kit) = room.then(|| E::kit(self)).and_then(Result::ok) else {
            self.cannot_grow();
            return;
        };
        let (running, runs) = std::sync::mpsc::sync_channel::<()>(1);
        let mut builder = std::thread::Builder::new().name(E::THREAD.into());
        if let Some(size) = E::STACK {
            builder = builder.stack_size(size);
        }
        let spawned = builder.spawn_scoped(scope, move || {
            let _ = running.send(());
            self.queue.join(&self.running);
            self.run(scope, kit);
        });
        if spawned.is_err() {
            self.cannot_grow();
            return;
        }
        let _ = runs.recv();
    }

    /// Runs one worker until the walk ends and adds what it counted to
    /// the total. A panic (a bug, or a visitor's) is caught here: it ends
    /// the whole walk rather than leaving the others waiting forever for
    /// a worker that no longer runs.
    fn run<'scope>(&'env self, scope: &'scope Scope<'scope, 'env>, kit: E::Kit) {
        let mut walker = E::walker(self, kit);
        self.queue.catching_panics(|| E::walk(&mut walker, scope));
        let acc = E::finish(walker);
        self.total
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .merge(acc);
        self.queue.leave(&self.running);
    }
}
