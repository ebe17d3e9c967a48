//! A directory opened to be read by a parallel engine, and what that
//! counts: a subdirectory not counted yet ([`Work::Subdir`](super::Work))
//! is stat'ed through the descriptor just opened, and a directory that
//! cannot be opened is counted as its stat by name says.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

use super::{Shared, Worker};
use crate::error::Op;
use crate::node::{Cursor, DirNode, OpenFailed};
use crate::sys::{self, Stat};

/// Whether a directory about to be read was counted already.
#[derive(Clone, Copy)]
pub(crate) enum Counted {
    /// Stat'ed by name in its parent; on this device, if known.
    Yes(Option<u64>),
    /// Not stat'ed yet ([`Work::Subdir`](super::Work)): it is, through its
    /// descriptor once open.
    No,
}

impl Shared {
    /// Opens `dir` to read it (from the worker's `cursor`); when it was not
    /// counted, a failed open stats its name, for
    /// [`Worker::open_failed`] to count.
    pub fn open_to_read(
        &self,
        dir: &Arc<DirNode>,
        counted: Counted,
        cursor: &mut Cursor,
    ) -> Result<Arc<OwnedFd>, OpenFailed> {
        match counted {
            Counted::No => dir.open_or_stat(self.config.opener(), &self.budget, cursor),
            Counted::Yes(_) => dir
                .open(self.config.opener(), &self.budget, cursor)
                .map_err(|cause| (cause, None)),
        }
    }
}

impl Worker<'_> {
    /// The directory being read could not be opened
    /// ([`Shared::open_to_read`]): reported, and counted as what its stat
    /// by name says, if one was made.
    pub fn open_failed(&mut self, (cause, stat): OpenFailed) {
        match stat {
            // No longer a directory (replaced since it was listed):
            // counted as what it is now, as du would.
            Some(Ok(st)) if !st.is_dir() => self.count_stat(&st),
            Some(Ok(st)) => {
                self.count_stat(&st);
                self.dir_error(Op::Open, cause);
            }
            // Gone, or unreachable: the stat's error is the one du would
            // report.
            Some(Err(cause)) => {
                self.dir_error(Op::Stat, cause);
                self.leave_out_dir();
            }
            None => self.dir_error(Op::Open, cause),
        }
    }

    /// The directory being read, not counted yet, is open as `fd`: stat'ed
    /// through it (its inode is in memory, so this never waits for the
    /// disk, where a stat by name before the open might), checked against
    /// its ancestors ([`opened_dir`](Self::opened_dir)) and counted. Its
    /// stat if there is one, or `None` when it is not to be read.
    pub fn count_opened(&mut self, shared: &Shared, fd: BorrowedFd<'_>) -> Option<Option<Stat>> {
        match sys::fstatx(fd, shared.config.statx_mask()) {
            Ok(st) => {
                if !self.opened_dir(shared, &st) {
                    return None;
                }
                self.count_stat(&st);
                Some(Some(st))
            }
            Err(cause) => {
                self.dir_error(Op::Stat, cause);
                Some(None)
            }
        }
    }
}
