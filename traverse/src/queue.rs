//! The shared stack of work of the parallel engines (`threads`, `uring`),
//! and the rule that ends a walk.
//!
//! Each worker walks from its own stack and takes no lock for it; when
//! another worker waits for work, it hands over the older half of its
//! stack (the directories nearest the root, the largest subtrees) through
//! this shared one. The walk is over when every worker counted in waits
//! and the stack is empty. A worker that ends for any reason (a panic, a
//! thread that could not be spawned) is counted out with
//! [`leave`](Queue::leave), so the others never wait for it.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

struct State<W> {
    /// Work any worker may take.
    stack: Vec<W>,
    /// Workers waiting for work; when all are, the walk is over.
    idle: usize,
    done: bool,
}

/// The shared stack of work, and the rule that ends the walk (see the
/// module's documentation).
pub(crate) struct Queue<W> {
    state: Mutex<State<W>>,
    ready: Condvar,
    /// A copy of `State::idle` that busy workers read without the lock,
    /// to know when to give work away.
    hungry: AtomicUsize,
    /// The stack's length, read without the lock before taking from it.
    len: AtomicUsize,
    /// Set when the walk is cut short (a worker panicked): busy workers
    /// stop at their next unit of work.
    aborted: AtomicBool,
    /// Why the walk was cut short, the first reason given.
    failure: Mutex<Option<String>>,
}

impl<W> Queue<W> {
    /// A queue holding `stack` (the root's work).
    pub(crate) fn new(stack: Vec<W>) -> Queue<W> {
        Queue {
            len: AtomicUsize::new(stack.len()),
            state: Mutex::new(State {
                stack,
                idle: 0,
                done: false,
            }),
            ready: Condvar::new(),
            hungry: AtomicUsize::new(0),
            aborted: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<W>> {
        crate::sys::lock(&self.state)
    }

    /// How many workers wait for work, read without the lock: a busy
    /// worker gives work away only when this is not zero.
    pub(crate) fn hungry(&self) -> usize {
        self.hungry.load(Ordering::Relaxed)
    }

    /// Puts work on the shared stack and wakes waiting workers, if any (a
    /// wake-up is a system call even when nobody waits).
    pub(crate) fn share(&self, work: impl IntoIterator<Item = W>) {
        let mut st = self.lock();
        let before = st.stack.len();
        st.stack.extend(work);
        self.len.store(st.stack.len(), Ordering::Relaxed);
        match (st.idle, st.stack.len() - before) {
            (0, _) | (_, 0) => {}
            (1, _) | (_, 1) => self.ready.notify_one(),
            _ => self.ready.notify_all(),
        }
    }

    /// Gives the older half of a worker's own stack to waiting workers,
    /// if there are any and the worker has more than one unit left.
    pub(crate) fn offer(&self, own: &mut Vec<W>) {
        if own.len() > 1 && self.hungry() > 0 {
            let half = own.len() / 2;
            self.share(own.drain(..half));
        }
    }

    /// How much work is on the shared stack, read without the lock.
    pub(crate) fn queued(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Work from the shared stack if there is some, without waiting (and
    /// without the lock when the stack is empty).
    pub(crate) fn try_take(&self) -> Option<W> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut st = self.lock();
        let work = st.stack.pop();
        self.len.store(st.stack.len(), Ordering::Relaxed);
        work
    }

    /// Work from the shared stack, waiting for some if it is empty; `None`
    /// when the walk is over (every one of `workers` waits) or
    /// `interrupted()` (queued work is then dropped).
    pub(crate) fn take(&self, interrupted: impl Fn() -> bool, workers: &AtomicUsize) -> Option<W> {
        let mut st = self.lock();
        loop {
            if st.done {
                return None;
            }
            if interrupted() {
                self.finish(&mut st);
                return None;
            }
            if let Some(work) = st.stack.pop() {
                self.len.store(st.stack.len(), Ordering::Relaxed);
                return Some(work);
            }
            st.idle += 1;
            // Work is only on the stack or with a counted worker that is
            // busy (a worker is counted in before it takes any: by itself
            // under this lock, see `join`, or by a busy one before it is
            // spawned), so this cannot end the walk too early.
            if st.idle >= workers.load(Ordering::Acquire) {
                st.done = true;
                self.ready.notify_all();
                return None;
            }
            self.hungry.store(st.idle, Ordering::Relaxed);
            st = self.ready.wait(st).unwrap_or_else(|p| p.into_inner());
            st.idle -= 1;
            self.hungry.store(st.idle, Ordering::Relaxed);
        }
    }

    /// Counts a starting worker into `workers`.
    pub(crate) fn join(&self, workers: &AtomicUsize) {
        let _st = self.lock();
        workers.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a worker out of `workers` (it ended, or its thread never
    /// started). If every remaining worker waits and no work is left, the
    /// walk is over: they are woken to see it.
    pub(crate) fn leave(&self, workers: &AtomicUsize) {
        let mut st = self.lock();
        let left = workers.fetch_sub(1, Ordering::AcqRel) - 1;
        if st.stack.is_empty() && st.idle >= left {
            st.done = true;
            self.ready.notify_all();
        }
    }

    /// Ends the walk now: queued work is dropped and every worker stops
    /// at its next unit of work.
    pub(crate) fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
        let mut st = self.lock();
        self.finish(&mut st);
    }

    /// Ends the walk for `why` (the first reason given is kept, for
    /// [`failure`](Self::failure)).
    pub(crate) fn fail(&self, why: String) {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(why);
        self.abort();
    }

    /// Runs `work`, one worker's share of the walk. A panic in it (a bug,
    /// or a visitor's) ends the walk with the panic's message rather than
    /// leaving the other workers waiting forever for one that no longer
    /// runs, or unwinding into the caller.
    pub(crate) fn catching_panics(&self, work: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(work)) {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            self.fail(format!("a worker thread panicked: {message}"));
        }
    }

    /// Why the walk was cut short ([`fail`](Self::fail)), if it was.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether the walk was cut short ([`abort`](Self::abort)).
    pub(crate) fn aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }

    /// Marks the walk over, drops what is queued and wakes every waiting
    /// worker to see it.
    fn finish(&self, st: &mut State<W>) {
        st.done = true;
        st.stack.clear();
        self.len.store(0, Ordering::Relaxed);
        self.ready.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// Runs `take` on another thread; its answer arrives on the channel.
    fn take_on_thread(
        queue: &Arc<Queue<u32>>,
        workers: &Arc<AtomicUsize>,
    ) -> mpsc::Receiver<Option<u32>> {
        let (tx, rx) = mpsc::channel();
        let (queue, workers) = (Arc::clone(queue), Arc::clone(workers));
        std::thread::spawn(move || {
            let _ = tx.send(queue.take(|| false, &workers));
        });
        rx
    }

    /// Waits until `n` workers wait in `take`.
    fn until_waiting(queue: &Queue<u32>, n: usize) {
        while queue.lock().idle < n {
            std::thread::yield_now();
        }
    }

    const PATIENCE: Duration = Duration::from_secs(30);

    /// A waiting worker gets work shared by a busy one, and is not told
    /// the walk is over while that one may still share more; once both
    /// wait, it is over, and stays over.
    #[test]
    fn the_last_worker_to_wait_ends_the_walk_for_all() {
        let queue = Arc::new(Queue::new(Vec::new()));
        let workers = Arc::new(AtomicUsize::new(2));
        let first = take_on_thread(&queue, &workers);
        until_waiting(&queue, 1);
        queue.share([1, 2]);
        assert_eq!(first.recv_timeout(PATIENCE), Ok(Some(2)));
        assert_eq!(queue.take(|| false, &workers), Some(1));
        let first = take_on_thread(&queue, &workers);
        until_waiting(&queue, 1);
        assert_eq!(queue.take(|| false, &workers), None);
        assert_eq!(first.recv_timeout(PATIENCE), Ok(None));
        assert_eq!(queue.take(|| false, &workers), None, "over stays over");
    }

    /// A worker counted out (it panicked, or its thread was never
    /// spawned) while every other one waits on an empty stack ends the
    /// walk: the waiting ones are woken and told so.
    #[test]
    fn counting_a_worker_out_ends_the_walk_when_the_rest_wait() {
        let queue = Arc::new(Queue::new(vec![1]));
        let workers = Arc::new(AtomicUsize::new(3));
        assert_eq!(queue.take(|| false, &workers), Some(1));
        let (b, c) = (
            take_on_thread(&queue, &workers),
            take_on_thread(&queue, &workers),
        );
        until_waiting(&queue, 2);
        queue.leave(&workers);
        assert_eq!(b.recv_timeout(PATIENCE), Ok(None));
        assert_eq!(c.recv_timeout(PATIENCE), Ok(None));
    }

    /// Counting a worker out while work is queued does not end the walk:
    /// the rest take the work, and the walk ends when they all wait.
    #[test]
    fn queued_work_outlives_a_worker_counted_out() {
        let queue = Arc::new(Queue::new(vec![7]));
        let workers = Arc::new(AtomicUsize::new(2));
        queue.leave(&workers);
        assert_eq!(queue.take(|| false, &workers), Some(7));
        let b = take_on_thread(&queue, &workers);
        assert_eq!(b.recv_timeout(PATIENCE), Ok(None));
    }

    /// An abort ends the walk for every worker, queued work or not.
    #[test]
    fn an_abort_ends_the_walk_at_once() {
        let queue = Queue::new(vec![1, 2]);
        let workers = AtomicUsize::new(2);
        queue.abort();
        assert!(queue.aborted());
        assert_eq!(queue.try_take(), None);
        assert_eq!(queue.take(|| false, &workers), None);
    }

    /// An interrupt seen by one worker drops the queued work and ends the
    /// walk for the others too.
    #[test]
    fn an_interrupted_walk_drops_what_is_left() {
        let queue = Queue::new(vec![1, 2, 3]);
        let workers = AtomicUsize::new(2);
        assert_eq!(queue.take(|| true, &workers), None);
        assert_eq!(queue.try_take(), None);
        assert_eq!(queue.take(|| false, &workers), None);
    }

    /// A busy worker gives the older half of its stack away only while
    /// another one waits.
    #[test]
    fn the_older_half_is_offered_only_to_a_waiting_worker() {
        let queue = Arc::new(Queue::new(Vec::new()));
        let workers = Arc::new(AtomicUsize::new(2));
        let mut own = vec![1, 2, 3, 4];
        queue.offer(&mut own);
        assert_eq!(own, [1, 2, 3, 4], "nobody waits");
        let waiting = take_on_thread(&queue, &workers);
        until_waiting(&queue, 1);
        queue.offer(&mut own);
        assert_eq!(own, [3, 4]);
        assert_eq!(waiting.recv_timeout(PATIENCE), Ok(Some(2)));
        assert_eq!(queue.try_take(), Some(1));
        assert_eq!(queue.try_take(), None);
    }
}
