//! A directory's share of a breakdown ([`crate::breakdown`]), kept in its
//! [`DirNode`](crate::node::DirNode): the sums counted so far in its
//! subtree, how many parts of it are not done yet, and with an ncdu
//! export its tree. Apart from the breakdown, so that a node can hold its
//! tally without the node module and the breakdown depending on each
//! other.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::ncdu_tree::NcduDir;
use crate::sys::Stat;
use crate::timestamp::{TimeField, Timestamp};
use crate::totals::Totals;

/// A directory's share of a breakdown.
#[derive(Debug)]
pub(crate) struct Tally {
    /// The subtree's sums, and the latest time of the directory itself
    /// and its entries that are not directories (`du -S --time`).
    sums: Mutex<(Totals, Option<Timestamp>)>,
    /// The time the sums keep the latest of.
    time: Option<TimeField>,
    /// Names of hard-linked inodes in the subtree beyond the one counted
    /// (see [`DirTotals::inodes`](crate::DirTotals::inodes)): known once
    /// hard links are settled.
    more_names: AtomicU64,
    /// Parts not done yet (see [`crate::breakdown`]).
    left: AtomicUsize,
    /// Not handed to the visitor: counted under an earlier root.
    left_out: AtomicBool,
    /// With an ncdu export: the directory's own fields and what is below.
    tree: Option<Mutex<NcduDir>>,
}

impl Tally {
    /// The tally of a directory not read yet (its reading is the one part
    /// left), its own stat `own` counted, keeping the latest `time`.
    pub fn new(own: Option<&Stat>, name: &[u8], ncdu: bool, time: Option<TimeField>) -> Tally {
        let mut sums = Totals::default();
        // The name alone until a stat tells more (a subdirectory is
        // stat'ed once open; if that fails, the name is all there is).
        let mut tree = ncdu.then(|| NcduDir::named(name));
        if let Some(st) = own {
            sums.add_stat(st, time);
            if let Some(tree) = &mut tree {
                tree.set_info(name, st);
            }
        }
        Tally {
            sums: Mutex::new((sums, sums.latest)),
            time,
            more_names: AtomicU64::new(0),
            left: AtomicUsize::new(1),
            left_out: AtomicBool::new(false),
            tree: tree.map(Mutex::new),
        }
    }

    /// The time the sums keep the latest of.
    pub fn time(&self) -> Option<TimeField> {
        self.time
    }

    /// Whether an ncdu tree is built.
    pub fn ncdu(&self) -> bool {
        self.tree.is_some()
    }

    /// Leaves the directory out of the visitor's calls (it was counted
    /// under an earlier root); what it holds still goes to its parent.
    pub fn leave_out(&self) {
        self.left_out.store(true, Ordering::Relaxed);
    }

    /// Whether the directory is left out of the visitor's calls.
    pub fn is_left_out(&self) -> bool {
        self.left_out.load(Ordering::Relaxed)
    }

    /// One more part to wait for (a subdirectory, a held name).
    pub fn hold(&self) {
        self.left.fetch_add(1, Ordering::AcqRel);
    }

    /// One part done: whether it was the last, which makes the sums final.
    pub fn part_done(&self) -> bool {
        self.left.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Adds what a worker counted here: the directory's own entries.
    pub fn add(&self, here: &Totals) {
        let mut sums = lock(&self.sums);
        sums.0 += *here;
        sums.1 = sums.1.max(here.latest);
    }

    /// Adds the sums of a subdirectory.
    pub fn add_subdir(&self, totals: &Totals) {
        lock(&self.sums).0 += *totals;
    }

    /// Counts `n` more names of hard-linked inodes beyond the one each
    /// inode counts as.
    pub fn add_more_names(&self, n: u64) {
        self.more_names.fetch_add(n, Ordering::AcqRel);
    }

    /// A hard-linked inode is counted under its name here: that name is
    /// not one more.
    pub fn name_counted(&self) {
        self.more_names.fetch_sub(1, Ordering::AcqRel);
    }

    /// Once the last part is done: the final sums, the latest time of the
    /// directory and its entries that are not directories, the names
    /// beyond the one counted, and the tree with those sums (without the
    /// room grown for more: it is kept until the walk ends).
    pub fn take_final(&self) -> (Totals, Option<Timestamp>, u64, Option<NcduDir>) {
        let (totals, latest_here) = std::mem::take(&mut *lock(&self.sums));
        let more_names = self.more_names.load(Ordering::Acquire);
        let tree = self.tree().map(|mut t| {
            t.entries.shrink_to_fit();
            t.dirs.shrink_to_fit();
            t.totals = totals;
            std::mem::take(&mut *t)
        });
        (totals, latest_here, more_names, tree)
    }

    /// With an ncdu export: the directory's tree, to add to.
    pub fn tree(&self) -> Option<MutexGuard<'_, NcduDir>> {
        self.tree.as_ref().map(lock)
    }
}

/// Locks a mutex of the breakdown. A poisoned lock only means another
/// worker panicked; the walk is reported as failed then, and the sums
/// stay consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    crate::sys::lock(m)
}
