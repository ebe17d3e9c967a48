//! The walkers of one walk: what only they share ([`Uring`], in the
//! engine's [`Pool`](engine::Pool)), and when more start: as work appears
//! that nobody waits for, and when the cache turns cold.

use super::*;

/// The workers and what they share.
pub(super) type Pool<'a> = engine::Pool<'a, Uring>;

/// What only the `uring` engine's walkers share.
pub(super) struct Uring {
    /// The GETDENTS opcode when the kernel has it.
    pub(super) getdents: Option<u8>,
    /// Whether its reads return each entry's statx too (readdirplus): then
    /// an entry needs no STATX of its own.
    pub(super) plus: bool,
    /// Whether readdirplus looks names up in the dcache only, so that a
    /// cold name comes back at once, with `EAGAIN`, and gets a STATX.
    pub(super) plus_dcache: bool,
    /// Set once such a read brought a name the dcache did not have: the
    /// rest of the walk reads without readdirplus, since a cold name costs
    /// its record's lookup and a STATX besides.
    pub(super) plus_missed: AtomicBool,
    /// Directories each worker may keep in flight (descriptors allowing).
    pub(super) dirs_per_worker: usize,
    /// Set once a read blocked on the disk.
    pub(super) cold: AtomicBool,
    /// The thread that called the walk: its ring is kept for the next.
    pub(super) caller: ThreadId,
}

/// A walker needs nothing before its thread is spawned: its ring is set
/// up on that thread, whose io-wq pool it sizes.
impl Engine for Uring {
    type Batch = Batch;
    type Kit = ();
    type Walker<'p> = Walker<'p>;
    const THREAD: &'static str = "traverse-uring";
    const STACK: Option<usize> = None;

    fn kit(_: &Pool<'_>) -> Result<(), String> {
        Ok(())
    }

    fn walker<'p>(pool: &'p Pool<'p>, (): ()) -> Walker<'p> {
        Walker::new(pool)
    }

    fn walk<'scope, 'p>(walker: &mut Walker<'p>, scope: &'scope Scope<'scope, 'p>) {
        walker.run(scope);
    }

    /// What the walker has in flight is waited for, after a panic too.
    fn finish(walker: Walker<'_>) -> Accumulator {
        walker.finish()
    }
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
    let uring = Uring {
        getdents: io_uring_getdents::detect::cached().opcode(),
        plus: io_uring_getdents::detect::plus_cached().opcode().is_some(),
        plus_dcache: io_uring_getdents::detect::plus_cached().dcache(),
        plus_missed: AtomicBool::new(false),
        dirs_per_worker: 1 + extra / max,
        cold: AtomicBool::new(false),
        caller: std::thread::current().id(),
    };
    // The calling thread walks; more walkers start as work appears that
    // nobody waits for, so a small PATH among thousands starts no thread
    // (and no ring on a thread of its own).
    Pool::new(shared, visitors, root, uring).walk(&root_path)
}

impl<'p> Walker<'p> {
    /// Raises this ring's io-wq pool once any worker saw the disk.
    pub(super) fn catch_cold(&mut self) {
        if !self.cold && self.pool.engine.cold.load(Ordering::Relaxed) {
            self.cold = true;
            if let Some(ring) = &self.io.ring {
                set_iowq(ring, IOWQ_COLD);
            }
        }
    }

    /// The cache is cold: more io-wq workers, and one more walker.
    pub(super) fn went_cold<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        self.pool.engine.cold.store(true, Ordering::Relaxed);
        self.catch_cold();
        self.pool.grow_to(self.pool.shared.config.max_jobs, scope);
    }

    /// Starts one more of the walkers `-j` asked for when there is work
    /// that no walker waits for. Walkers start as work appears, not all at
    /// once, so that `-j 4096` on a small tree does not hold thousands of
    /// idle threads and rings.
    pub(super) fn grow_for_spare_work<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        let pool = self.pool;
        let shareable = std::mem::take(&mut self.shareable);
        let spare = shareable || self.own.len() > 1 || pool.queue.queued() > 0;
        let jobs = pool.shared.config.jobs;
        if spare && pool.queue.hungry() == 0 {
            pool.grow_to(jobs, scope);
        }
    }
}
