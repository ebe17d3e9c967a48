//! The walkers of one walk: what they share ([`Pool`]), the first on the
//! calling thread, more started as work appears that nobody waits for
//! and when the cache turns cold, and one panic policy.

use super::*;

/// The workers and what they share.
pub(super) struct Pool<'a> {
    pub(super) shared: &'a Shared,
    pub(super) visitors: &'a dyn VisitorBuilder,
    pub(super) queue: Queue<Work>,
    /// Workers counted as running (started, or about to start).
    pub(super) running: AtomicUsize,
    pub(super) total: Mutex<Accumulator>,
    /// Hard-linked inodes stat'ed so far; `None` when every name must be
    /// stat'ed anyway (listing, `--count-links`).
    pub(super) links: Option<Links>,
    /// The GETDENTS opcode when the kernel has it.
    pub(super) getdents: Option<u8>,
    /// Whether its reads return each entry's statx too (readdirplus): then
    /// an entry needs no STATX of its own.
    pub(super) plus: bool,
    /// Directories each worker may keep in flight (descriptors allowing).
    pub(super) dirs_per_worker: usize,
    /// Set once a read blocked on the disk.
    pub(super) cold: AtomicBool,
    /// The thread that called the walk: its ring is kept for the next.
    pub(super) caller: ThreadId,
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
        plus: io_uring_getdents::detect::plus_cached().opcode().is_some(),
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

impl<'p> Walker<'p> {
    /// Raises this ring's io-wq pool once any worker saw the disk.
    pub(super) fn catch_cold(&mut self) {
        if !self.cold && self.pool.cold.load(Ordering::Relaxed) {
            self.cold = true;
            if let Some(ring) = &self.ring {
                set_iowq(ring, IOWQ_COLD);
            }
        }
    }

    /// The cache is cold: more io-wq workers, and one more walker.
    pub(super) fn went_cold<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        self.pool.cold.store(true, Ordering::Relaxed);
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
        if spare && pool.queue.hungry() == 0 && pool.running.load(Ordering::Relaxed) < jobs {
            pool.grow_to(jobs, scope);
        }
    }
}
