//! The end of a directory whose entries several workers stat (the
//! parallel engines' large directories, every directory of the `uring`
//! walker): its parts counted down, the last one ending it, once.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::Shared;
use crate::node::{DirNode, FdBudget};

/// The parts of one directory not done yet: its reader's own, and one
/// per chunk handed out. Shared by every batch of the directory (each
/// window of one read in windows); the last part done drops the
/// directory's hold and ends its reading ([`Shared::read_done`]).
#[derive(Clone)]
pub(crate) struct Parts(Arc<Left>);

struct Left {
    dir: Arc<DirNode>,
    left: AtomicUsize,
}

impl Parts {
    /// Keeps `dir`'s descriptor `fd` for its children while its parts are
    /// done ([`DirNode::hold`]); one part so far, its reader's.
    pub fn hold(dir: &Arc<DirNode>, fd: Arc<OwnedFd>, budget: &FdBudget) -> Parts {
        dir.hold(fd, budget);
        Parts(Arc::new(Left {
            dir: Arc::clone(dir),
            left: AtomicUsize::new(1),
        }))
    }

    /// Counts `n` more parts, before they are handed out.
    pub fn add(&self, n: usize) {
        self.0.left.fetch_add(n, Ordering::AcqRel);
    }

    /// Parts not done yet.
    pub fn left(&self) -> usize {
        self.0.left.load(Ordering::Acquire)
    }

    /// One part is done; the directory when it was the last, for the
    /// worker to end ([`Worker::dir_done`](super::Worker::dir_done)). Call
    /// once the worker that did it has left the directory
    /// ([`Worker::end_part`](super::Worker::end_part)): the last part's
    /// totals must be in the directory's tally when it ends.
    pub fn done(&self, shared: &Shared) -> Option<Arc<DirNode>> {
        self.release(&shared.budget)
            .then(|| Arc::clone(&self.0.dir))
    }

    /// Counts one part done; the last one drops the directory's hold and
    /// says so.
    fn release(&self, budget: &FdBudget) -> bool {
        let last = self.0.left.fetch_sub(1, Ordering::AcqRel) == 1;
        if last {
            self.0.dir.release(budget);
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use super::*;
    use crate::node::test_root;
    use crate::sys;

    #[test]
    fn the_last_of_a_directorys_parts_alone_drops_its_hold() {
        let tmp = tempfile::tempdir().unwrap();
        let path = CString::new(tmp.path().as_os_str().as_encoded_bytes()).unwrap();
        let dir = test_root(tmp.path());
        let budget = FdBudget::new(1, 64);
        let free = budget.available();
        let fd = Arc::new(sys::open_dir(None, &path).unwrap());
        let parts = Parts::hold(&dir, fd, &budget);
        assert_eq!(budget.available(), free - 1, "the descriptor is kept");
        // Seven chunks done by other workers at once, the reader's part not.
        parts.add(7);
        let ends = std::thread::scope(|s| {
            let workers: Vec<_> = (0..7).map(|_| s.spawn(|| parts.release(&budget))).collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap())
                .filter(|&last| last)
                .count()
        });
        assert_eq!(ends, 0);
        assert_eq!(parts.left(), 1);
        assert_eq!(budget.available(), free - 1, "kept for the last part");
        assert!(parts.release(&budget), "the last part ends the directory");
        assert_eq!(budget.available(), free, "given back");
    }
}
