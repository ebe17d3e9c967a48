//! One worker's state (its totals, its visitor, the path being listed,
//! with a breakdown what it counted in the current directory) and the
//! rule deciding, for one entry, how to count it, whether to list it and
//! whether to descend.

use std::ffi::{CStr, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use io_uring_getdents::dirent::FileType;

use super::{DirSet, Parts, Shared, Work};
use crate::breakdown::Breakdown;
use crate::dirpath::PathCache;
use crate::error::{Error, Op};
use crate::links::Links;
use crate::ncdu_export::ncdu_entry;
use crate::node::{push_name, DirNode, Ent, ListingPlace};
use crate::sort::Holding;
use crate::sys::{FileId, Stat};
use crate::totals::{Accumulator, DirProgress, Totals};
use crate::visit::{Entry, Visitor};

mod follow;
mod tally;

/// One worker: its own totals and visitor.
pub(crate) struct Worker<'v> {
    pub acc: Accumulator,
    visitor: Box<dyn Visitor + 'v>,
    /// The directory being read.
    dir: Option<Arc<DirNode>>,
    /// Its path, built on first use (listings and messages only) from
    /// the last directory's.
    dir_path: PathCache,
    dir_path_built: bool,
    entry_path: Vec<u8>,
    seen: DirProgress,
    /// With a breakdown: what was counted in the current directory since
    /// [`enter`](Self::enter), added to its tally when it is left.
    breakdown: Option<Arc<Breakdown>>,
    /// Under -L with a breakdown: every file goes to it by each name.
    follow_names: bool,
    here: Totals,
    /// With an ncdu export: the current directory's entries, and whether
    /// reading it failed.
    here_ncdu: Vec<u8>,
    here_failed: bool,
    /// See [`Shared::counted_before`] and [`Shared::files_before`].
    counted_before: Option<Arc<DirSet>>,
    files_before: Option<Arc<DirSet>>,
    /// In a listing in order: the current directory's entries held since
    /// [`enter`](Self::enter) (and contents first its subdirectories).
    held: Holding,
    /// The entry being counted: its place in the current directory's
    /// listing ([`at`](Self::at)).
    place: ListingPlace,
}

impl<'v> Worker<'v> {
    pub fn new(shared: &Shared, visitor: Box<dyn Visitor + 'v>) -> Worker<'v> {
        Worker {
            acc: Accumulator::new(shared.config.count_links, shared.config.latest_time),
            visitor,
            dir: None,
            dir_path: PathCache::default(),
            dir_path_built: false,
            entry_path: Vec::new(),
            seen: DirProgress::new(Arc::clone(&shared.progress)),
            breakdown: shared.breakdown.clone(),
            follow_names: shared.breakdown.is_some() && shared.reached.is_some(),
            here: Totals::default(),
            here_ncdu: Vec::new(),
            here_failed: false,
            counted_before: shared.counted_before.clone(),
            files_before: shared.files_before.clone(),
            held: Holding::default(),
            place: ListingPlace::default(),
        }
    }

    /// The next entry counted ([`entry`](Self::entry),
    /// [`known_link`](Self::known_link)) is at `place` in the current
    /// directory's listing.
    pub fn at(&mut self, place: ListingPlace) {
        self.place = place;
    }

    /// Starts reading the directory `dir`.
    pub fn enter(&mut self, dir: &Arc<DirNode>) {
        self.dir = Some(Arc::clone(dir));
        self.dir_path_built = false;
        self.seen.start(self.acc.totals.bytes);
        self.seen.progress.wants_path().then(|| self.tell_path());
    }

    fn tell_path(&mut self) {
        self.build_dir_path();
        self.seen.tell(self.dir_path.bytes());
    }

    /// Leaves the current directory, read whole by this worker, and ends
    /// its reading ([`Shared::read_done`]) once what was counted is in its
    /// tally.
    pub fn end_dir(&mut self, shared: &Shared) {
        if let Some(dir) = self.leave_dir(shared) {
            self.dir_done(shared, &dir);
        }
    }

    /// Leaves the current directory, one of its `parts` done: the last
    /// part ends it, once what was counted is in its tally.
    pub fn end_part(&mut self, shared: &Shared, parts: &Parts) {
        self.leave(shared);
        if let Some(dir) = parts.done(shared) {
            self.dir_done(shared, &dir);
        }
    }

    /// The reading of `dir` is over, every part of it: in a listing in
    /// order its entries go to this worker's visitor now (contents first,
    /// once its subtree is done too).
    pub fn dir_done(&mut self, shared: &Shared, dir: &Arc<DirNode>) {
        if let Some(order) = &shared.order {
            order.end(dir, &mut *self.visitor);
        }
        shared.read_done(dir);
    }

    /// Leaves the current directory without ending it: its reading goes
    /// on, later or in other parts.
    pub fn leave(&mut self, shared: &Shared) {
        self.leave_dir(shared);
    }

    /// Leaves the current directory: publishes its progress, and with a
    /// breakdown adds what was counted to its tally; returns it.
    fn leave_dir(&mut self, shared: &Shared) -> Option<Arc<DirNode>> {
        self.seen.publish(&shared.progress, self.acc.totals.bytes);
        if let (Some(order), Some(dir)) = (&shared.order, &self.dir) {
            order.keep(dir, &mut self.held);
        }
        if let Some(tally) = self.dir.as_ref().and_then(|dir| dir.tally()) {
            tally.add(&std::mem::take(&mut self.here));
            if let Some(mut tree) = tally.tree() {
                tree.add_entries(&self.here_ncdu);
                if self.here_failed {
                    tree.read_error();
                }
            }
            self.here_ncdu.clear();
            self.here_failed = false;
        }
        self.dir.take()
    }

    /// Builds the current directory's path if not done yet.
    fn build_dir_path(&mut self) {
        if !self.dir_path_built {
            match &self.dir {
                Some(dir) => {
                    self.dir_path.path_of(dir);
                }
                None => self.dir_path.clear(),
            }
            self.dir_path_built = true;
        }
    }

    /// An error on the current directory itself.
    pub fn dir_error(&mut self, op: Op, cause: io::Error) {
        self.build_dir_path();
        let err = Error::new(
            Path::new(OsStr::from_bytes(self.dir_path.bytes())),
            op,
            cause,
        )
        .with_depth(self.depth());
        self.acc.totals.errors += 1;
        self.here.errors += 1;
        self.here_failed = true;
        self.visitor.error(err);
    }

    /// An error on the entry `name` of the current directory.
    pub fn entry_error(&mut self, name: &[u8], op: Op, cause: io::Error) {
        self.build_dir_path();
        self.entry_path.clear();
        self.entry_path.extend_from_slice(self.dir_path.bytes());
        push_name(&mut self.entry_path, name);
        let path = Path::new(OsStr::from_bytes(&self.entry_path));
        let err = Error::new(path, op, cause).with_depth(self.depth() + 1);
        self.acc.totals.errors += 1;
        self.here.errors += 1;
        self.visitor.error(err);
    }

    /// The stat of the entry `name` (of type `d_type`) failed with
    /// `cause`: reported. A listing without metadata still lists and
    /// counts it by its `d_type` unless it is gone (`ENOENT`), as `find`
    /// lists the names of a directory it may read but not search; it is
    /// not descended into.
    pub fn stat_failed(&mut self, shared: &Shared, name: &[u8], d_type: u8, cause: io::Error) {
        let gone = cause.raw_os_error() == Some(libc::ENOENT);
        self.entry_error(name, Op::Stat, cause);
        if shared.config.counts_types_only() && !gone && d_type != libc::DT_UNKNOWN {
            self.seen.seen += 1;
            self.acc.add_type(d_type);
            self.list(shared, (name, d_type), None, self.depth() + 1, false);
        }
    }

    /// The depth of the directory being read.
    fn depth(&self) -> usize {
        self.dir.as_ref().map_or(0, |dir| dir.depth())
    }

    /// Hands the entry `name` (of type `d_type`) of the current directory
    /// to the visitor, or holds it in a listing in order; `descends`: the
    /// walk reads it.
    fn list(
        &mut self,
        shared: &Shared,
        (name, d_type): (&[u8], u8),
        st: Option<&Stat>,
        depth: usize,
        descends: bool,
    ) {
        if depth < shared.config.min_depth {
            return;
        }
        self.build_dir_path();
        self.entry_path.clear();
        self.entry_path.extend_from_slice(self.dir_path.bytes());
        push_name(&mut self.entry_path, name);
        let file_type = st.map_or(FileType::from_d_type(d_type), |st| {
            FileType::from_mode(st.mode)
        });
        // A link followed: `st` is its target's.
        let followed = d_type == libc::DT_LNK && file_type != FileType::Symlink;
        let st = st.filter(|_| shared.config.list_metadata);
        let path = Path::new(OsStr::from_bytes(&self.entry_path));
        let entry = Entry::new(path, file_type, depth)
            .followed(followed)
            .at(Some(self.place));
        if shared.order.as_ref().is_some_and(|o| o.holds(descends)) {
            self.held.hold(&entry, name.len(), st);
            return;
        }
        self.visitor.visit_entry(&entry.with_stat(st));
    }

    /// Counts the entry `ent` (its name in `names`) of `dir`, the
    /// directory being read, from `st` when it was stat'ed (recording a
    /// hard-linked inode in `links`, the set when the directory's `d_ino`s
    /// can be trusted), as [`entry`](Self::entry) decides; the reading of
    /// it when it is a subdirectory to descend into.
    pub fn count_entry<B>(
        &mut self,
        shared: &Shared,
        dir: &Arc<DirNode>,
        names: &[u8],
        ent: &Ent,
        st: Option<&Stat>,
        links: Option<&Links>,
    ) -> Option<Work<B>> {
        let name = ent.name_bytes(names);
        self.at(ent.place());
        self.count_named(shared, dir, name, ent.d_type, st, links, || ent.name(names))
    }

    /// [`count_entry`](Self::count_entry) for the entry `name` of type
    /// `d_type` (at the place [`at`](Self::at) gave), whose C string
    /// `cname` makes only for a subdirectory (the others need no scan for
    /// a NUL).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn count_named<'n, B>(
        &mut self,
        shared: &Shared,
        dir: &Arc<DirNode>,
        name: &[u8],
        d_type: u8,
        st: Option<&Stat>,
        links: Option<&Links>,
        cname: impl FnOnce() -> &'n CStr,
    ) -> Option<Work<B>> {
        let target;
        let st = if shared.config.follow_links {
            target = self.resolve(name, st, shared.config.statx_mask())?;
            target.as_ref()
        } else {
            st
        };
        if let (Some(links), Some(st)) = (links, st) {
            // Under -L every name is stat'ed: the breakdown needs each.
            if st.is_hard_linked() && !self.follow_names {
                links.insert(st.id());
            }
        }
        self.entry(shared, name, d_type, st).then(|| {
            let child = DirNode::child_with_stat(dir, cname(), st, self.place);
            self.walked(&child, st);
            Work::Dir(child, st.map(|st| st.dev))
        })
    }

    /// Counts a directory entry stat'ed after the fact (through its
    /// descriptor when opened, see `Reader::read` in the threads engine),
    /// not in [`entry`](Self::entry).
    pub fn count_stat(&mut self, st: &Stat) {
        self.seen.seen += 1;
        if st.is_dir() && self.counted_before.is_some() {
            self.acc.dirs.push(st.id());
        }
        self.acc.add(st);
        self.tally(self.acc.count_links(), None, st);
    }

    /// Counts the entry `name`, a further name of the hard-linked inode
    /// `key` already stat'ed under another name (from `d_ino`, see
    /// [`crate::links`]): by its `d_type`, and with a breakdown, as a name
    /// of that inode.
    pub fn known_link(&mut self, shared: &Shared, name: &[u8], d_type: u8, key: FileId) {
        self.entry(shared, name, d_type, None);
        if self.breakdown.is_some() {
            self.build_dir_path();
            self.entry_path.clear();
            self.entry_path.extend_from_slice(self.dir_path.bytes());
            push_name(&mut self.entry_path, name);
            if let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) {
                breakdown.link_known((dir, self.place), &self.entry_path, key);
            }
        }
    }

    /// Counts the entry `name`, from its stat when the engine made one
    /// ([`Shared::needs_stat`]) or else from `d_type`, lists it in listing
    /// mode, and says whether to descend into it. A directory that is one
    /// of its own ancestors (a bind mount of it below itself) is reported
    /// as a loop and neither counted nor listed, as `find` does (`du`
    /// leaves it out silently); the walk goes on.
    pub fn entry(&mut self, shared: &Shared, name: &[u8], d_type: u8, st: Option<&Stat>) -> bool {
        let told = self.seen.count(self.acc.totals.bytes);
        told.then(|| self.tell_path());
        let depth = self.depth() + 1;
        let reads = shared.reads(depth);
        if st.is_some_and(|st| self.counted_before(st)) {
            return false;
        }
        if let Some(st) = st.filter(|st| st.is_dir() && shared.may_loop(st)) {
            let same = self.dir.as_ref().and_then(|dir| dir.same_as(st.id()));
            if let Some(ancestor) = same.map(DirNode::path) {
                self.entry_loop(name, ancestor);
                // Under -L a name, still: where the walk read a directory
                // may move (see `Breakdown::settle`).
                self.follow_name(name, st, false);
                return false;
            }
        }
        // Reached again through another link: du -L counts it once (a file
        // in the directory of the name it meets first).
        if let Some(st) = st.filter(|st| !shared.first_reach(st)) {
            self.follow_name(name, st, false);
            return false;
        }
        let is_dir = match st {
            Some(st) if shared.config.one_file_system && shared.crosses(st) => {
                // A mount point: `find -xdev` lists it and `du -x` leaves
                // out its size; neither descends.
                self.acc.add_type(FileType::from_mode(st.mode).d_type());
                if self.breakdown.is_some() {
                    self.here.add_kind(st.mode);
                    if self.breakdown.as_ref().is_some_and(|b| b.ncdu) {
                        ncdu_entry(&mut self.here_ncdu, name, st, true);
                    }
                }
                false
            }
            Some(st) => {
                if st.is_dir() && self.counted_before.is_some() {
                    self.acc.dirs.push(st.id());
                }
                if shared.config.counts_types_only() {
                    self.acc.add_type(FileType::from_mode(st.mode).d_type());
                } else {
                    self.acc.add(st);
                    // A subdirectory's own size is counted in its own
                    // tally (`DirNode::child_with_stat`), when it is read.
                    if !st.is_dir() || !reads {
                        self.tally(shared.config.count_links, Some(name), st);
                    }
                }
                st.is_dir() && reads
            }
            None => {
                self.acc.add_type(d_type);
                if self.breakdown.is_some() {
                    self.here.add_type(d_type);
                }
                d_type == libc::DT_DIR && reads
            }
        };
        if shared.config.list {
            self.list(shared, (name, d_type), st, depth, is_dir);
        }
        if is_dir && shared.order.as_ref().is_some_and(|o| o.contents_first()) {
            // Its caller queues it: its subtree, when done, counts here.
            self.held.subtree();
        }
        is_dir
    }
}

impl Worker<'_> {
    /// Hands the worker's totals back for merging.
    pub(crate) fn into_accumulator(self) -> Accumulator {
        self.acc
    }
}
