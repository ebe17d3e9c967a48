//! What every engine shares: the walk's settings and one worker's state
//! (totals, visitor, the path being listed), and the rule deciding, for
//! one entry, whether to stat it, how to count it and whether to descend.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use io_uring_getdents::dirent::FileType;

use crate::breakdown::Breakdown;
use crate::config::Config;
use crate::dirpath::PathCache;
use crate::error::{Error, Op};
use crate::file_totals::FileTotals;
use crate::filter::FilterEntry;
use crate::links::MountNames;
use crate::ncdu_export::ncdu_entry;
use crate::node::{push_name, DirNode, FdBudget};
use crate::queue::Queue;
use crate::spare::Spares;
use crate::sys::Stat;
use crate::totals::Progress;
use crate::totals::{Accumulator, InodeKey, Totals};
use crate::visit::{Entry, Visitor, VisitorBuilder};
use rustc_hash::FxHashSet;

/// The settings and shared state of one root's walk.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: Config,
    /// The root's device, for `--one-file-system`.
    pub root_dev: u64,
    /// The root's mount, if `statx` told it: `--one-file-system` stops at
    /// bind mounts too, which share the device of their source.
    pub root_mnt: Option<u64>,
    /// Whether the root's filesystem gives every directory an inode
    /// number of its own (ext4, xfs, btrfs, tmpfs, f2fs): there only a
    /// mount root can repeat an ancestor. Elsewhere (FUSE, network
    /// filesystems) a server may report any number.
    pub root_ids_unique: bool,
    pub budget: FdBudget,
    pub interrupt: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
    /// Per-directory totals, when asked for.
    pub breakdown: Option<Arc<Breakdown>>,
    /// With [`Config::count_once`]: the directories counted under the
    /// roots walked before this one.
    pub counted_before: Option<Arc<DirSet>>,
    /// The mount points' names, read once for a series of roots.
    pub mount_names: Arc<MountNames>,
    /// Buffers and rings kept from one root to the next.
    pub spares: Arc<Spares>,
}

/// Directories by (device, inode).
pub(crate) type DirSet = FxHashSet<InodeKey>;

impl Shared {
    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// Whether an entry of this `d_type` must be stat'ed: always when
    /// counting sizes or listing with metadata; when listing, a directory
    /// too (its identity tells a loop, its device and mount a mount point,
    /// as `find` stats it).
    pub fn needs_stat(&self, d_type: u8) -> bool {
        !self.config.counts_types_only() || d_type == libc::DT_UNKNOWN || d_type == libc::DT_DIR
    }

    /// Whether the directory `st` may be one of its ancestors, so that the
    /// ancestors are checked (O(depth)): a mount root (a bind mount of an
    /// ancestor), a stat that does not tell, or any directory on a
    /// filesystem that may report an ancestor's inode number (a false
    /// loop, which `find` reports as a loop too).
    pub fn may_loop(&self, st: &Stat) -> bool {
        st.may_loop() || !self.root_ids_unique || st.dev != self.root_dev
    }

    /// Whether `st` is on another filesystem or mount than the root's
    /// (for `--one-file-system`).
    pub fn crosses(&self, st: &Stat) -> bool {
        st.dev != self.root_dev
            || matches!((st.mnt_id, self.root_mnt), (Some(a), Some(b)) if a != b)
    }

    /// Whether every name of a hard-linked inode is stat'ed, rather than
    /// further names counted from `d_ino` ([`crate::links`]): a listing and
    /// `--count-links` need no sizes from them, and the ncdu export writes
    /// every name's sizes. (A breakdown settles a further name from its
    /// `d_ino`: [`Worker::known_link`].)
    pub fn stats_every_name(&self) -> bool {
        self.config.list
            || self.config.count_links
            || self.breakdown.as_ref().is_some_and(|b| b.ncdu)
    }

    /// Whether the entry `name` of `dir`, of type `d_type`, is left out:
    /// neither counted nor descended into. It is when its name is excluded
    /// (`--exclude`) or the user's filter refuses it. Every engine asks
    /// here, before it stats the entry. (No entry lies deeper than the
    /// maximum depth: the directories at it are not read, see
    /// [`reads`](Self::reads).)
    pub fn skips(&self, dir: &DirNode, name: &[u8], d_type: u8) -> bool {
        let config = &self.config;
        config
            .exclude
            .as_ref()
            .is_some_and(|set| set.is_match(OsStr::from_bytes(name)))
            || config
                .filter
                .as_ref()
                .is_some_and(|f| !f.keeps(&FilterEntry::new(dir, name, d_type)))
    }

    /// Whether a directory at `depth` below the root is read (the maximum
    /// depth counts the directories at its last level without reading
    /// them).
    pub fn reads(&self, depth: usize) -> bool {
        self.config.max_depth.is_none_or(|max| depth < max)
    }

    /// Whether the subdirectories of `dir` that `d_type` says are
    /// directories may be counted when opened rather than stat'ed by name
    /// (one lookup fewer): not with `-x`, which needs the device before
    /// descending, nor in a listing, which stats no directory, nor when
    /// they sit at the maximum depth and are not opened.
    pub fn defers_dirs(&self, dir: &DirNode) -> bool {
        !self.config.list && !self.config.one_file_system && self.reads(dir.depth() + 1)
    }

    /// The reading of `dir` is over, every part of it (after the worker
    /// that read the last part has left it): with a breakdown, its totals
    /// become final once its subdirectories are.
    pub fn read_done(&self, dir: &Arc<DirNode>) {
        if let Some(breakdown) = &self.breakdown {
            breakdown.done(dir);
        }
    }

    /// Whether to sort a directory of `len` entries by inode number.
    pub fn inode_order(&self, len: usize) -> bool {
        self.config.inode_order.is_some_and(|t| len > t)
    }
}

/// Entries of one directory read and kept before they are counted (as
/// GNU fts reads at most 100 000 at a time): a directory that never ends
/// (a FUSE server whose offsets cycle) or a huge one is read and counted
/// a window at a time, so its memory stays bounded.
pub(crate) const WINDOW_ENTRIES: usize = 100_000;

/// Bytes of names in one window, for long names (FUSE allows 1 024
/// bytes).
pub(crate) const WINDOW_NAME_BYTES: usize = 8 << 20;

/// Whether a window holding `entries` entries and `name_bytes` bytes of
/// names is full.
pub(crate) fn window_full(entries: usize, name_bytes: usize) -> bool {
    entries >= WINDOW_ENTRIES || name_bytes >= WINDOW_NAME_BYTES
}

/// The `DT_*` value for a `st_mode`.
pub(crate) fn d_type_of(mode: u32) -> u8 {
    FileType::from_mode(mode).d_type()
}

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
    /// Entries and bytes of the current directory, for [`Progress`].
    seen: u64,
    bytes_before: u128,
    /// With a breakdown: what was counted in the current directory since
    /// [`enter`](Self::enter), added to its tally on
    /// [`leave`](Self::leave).
    breakdown: Option<Arc<Breakdown>>,
    here: Totals,
    /// With an ncdu export: the current directory's entries, and whether
    /// reading it failed.
    here_ncdu: Vec<u8>,
    here_failed: bool,
    /// See [`Shared::counted_before`].
    counted_before: Option<Arc<DirSet>>,
}

impl<'v> Worker<'v> {
    pub fn new(shared: &Shared, visitor: Box<dyn Visitor + 'v>) -> Worker<'v> {
        Worker {
            acc: Accumulator::new(shared.config.count_links),
            visitor,
            dir: None,
            dir_path: PathCache::default(),
            dir_path_built: false,
            entry_path: Vec::new(),
            seen: 0,
            bytes_before: 0,
            breakdown: shared.breakdown.clone(),
            here: Totals::default(),
            here_ncdu: Vec::new(),
            here_failed: false,
            counted_before: shared.counted_before.clone(),
        }
    }

    /// Starts reading the directory `dir`.
    pub fn enter(&mut self, dir: &Arc<DirNode>) {
        self.dir = Some(Arc::clone(dir));
        self.dir_path_built = false;
        self.seen = 0;
        self.bytes_before = self.acc.totals.bytes;
    }

    /// Ends the current directory: publishes its progress, and with a
    /// breakdown adds what was counted to its tally.
    pub fn leave(&mut self, shared: &Shared) {
        let bytes = self.acc.totals.bytes - self.bytes_before;
        shared
            .progress
            .add(self.seen, u64::try_from(bytes).unwrap_or(u64::MAX));
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
        self.dir = None;
    }

    /// With a breakdown: counts a stat'ed entry `name` (the current
    /// directory itself when `None`) in the current directory. A further
    /// name of a hard-linked inode waits to be settled (see
    /// [`crate::breakdown`]); with `--count-links` every name counts.
    fn tally(&mut self, count_links: bool, name: Option<&[u8]>, st: &Stat) {
        let Some(ncdu) = self.breakdown.as_ref().map(|b| b.ncdu) else {
            return;
        };
        if !count_links && st.is_hard_linked() {
            self.here.add_kind(st.mode);
            self.build_dir_path();
            self.entry_path.clear();
            self.entry_path.extend_from_slice(self.dir_path.bytes());
            if let Some(name) = name {
                push_name(&mut self.entry_path, name);
            }
            if let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) {
                breakdown.link(dir, &self.entry_path, st);
            }
        } else {
            self.here.add_stat(st);
            if let Some(name) = name.filter(|_| !st.is_dir()) {
                self.file(name, st);
            }
        }
        if ncdu {
            match name {
                Some(name) => ncdu_entry(&mut self.here_ncdu, name, st, false),
                None => {
                    if let Some(dir) = &self.dir {
                        if let Some(mut tree) = dir.tally().and_then(|t| t.tree()) {
                            tree.set_info(dir.name().to_bytes(), st);
                        }
                    }
                }
            }
        }
    }

    /// With a breakdown that asks for them: hands the entry `name` of the
    /// current directory, not a directory, to its visitor (the path built
    /// only then).
    fn file(&mut self, name: &[u8], st: &Stat) {
        let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) else {
            return;
        };
        let depth = dir.depth() + 1;
        if breakdown.files_to.is_none_or(|max| depth > max) {
            return;
        }
        self.build_dir_path();
        self.entry_path.clear();
        self.entry_path.extend_from_slice(self.dir_path.bytes());
        push_name(&mut self.entry_path, name);
        if let Some(breakdown) = &self.breakdown {
            let file = FileTotals::new(&self.entry_path, depth, st.mode, st.size, st.blocks);
            breakdown.file(&file);
        }
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
        );
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
        let err = Error::new(Path::new(OsStr::from_bytes(&self.entry_path)), op, cause);
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
            self.seen += 1;
            self.acc.add_type(d_type);
            self.list(shared, name, d_type, None, self.depth() + 1);
        }
    }

    /// The depth of the directory being read.
    fn depth(&self) -> usize {
        self.dir.as_ref().map_or(0, |dir| dir.depth())
    }

    /// Hands the entry `name` of the current directory to the visitor.
    fn list(&mut self, shared: &Shared, name: &[u8], d_type: u8, st: Option<&Stat>, depth: usize) {
        self.build_dir_path();
        self.entry_path.clear();
        self.entry_path.extend_from_slice(self.dir_path.bytes());
        push_name(&mut self.entry_path, name);
        let file_type = FileType::from_d_type(st.map_or(d_type, |st| d_type_of(st.mode)));
        let path = Path::new(OsStr::from_bytes(&self.entry_path));
        let st = st.filter(|_| shared.config.list_metadata);
        self.visitor
            .visit_entry(&Entry::new(path, file_type, depth).with_stat(st));
    }

    /// Counts a directory entry stat'ed after the fact (through its
    /// descriptor when opened, see `Reader::read` in the threads engine),
    /// not in [`entry`](Self::entry).
    pub fn count_stat(&mut self, st: &Stat) {
        self.seen += 1;
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
    pub fn known_link(&mut self, shared: &Shared, name: &[u8], d_type: u8, key: InodeKey) {
        self.entry(shared, name, d_type, None);
        if self.breakdown.is_some() {
            self.build_dir_path();
            self.entry_path.clear();
            self.entry_path.extend_from_slice(self.dir_path.bytes());
            push_name(&mut self.entry_path, name);
            if let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) {
                breakdown.link_known(dir, &self.entry_path, key);
            }
        }
    }

    /// Checks the directory being read, stat'ed through its descriptor
    /// once open (not by name before), against its ancestors: false, with
    /// the error reported, when it is one of them (a loop). Records its
    /// identity for the checks below it.
    pub fn opened_dir(&mut self, shared: &Shared, st: &Stat) -> bool {
        let Some(dir) = self.dir.clone() else {
            return true;
        };
        if self.counted_before(st) {
            // Counted under an earlier root: du leaves it out silently,
            // line included.
            if let Some(tally) = dir.tally() {
                tally.leave_out();
            }
            return false;
        }
        let same = shared.may_loop(st).then(|| dir.parent()).flatten();
        if let Some(same) = same.and_then(|p| p.same_as(st.id())) {
            let cause = loop_cause(same);
            self.dir_error(Op::Loop, cause);
            return false;
        }
        dir.set_id(st.id());
        true
    }

    /// Counts the entry `name`, from its stat when the engine made one
    /// ([`Shared::needs_stat`]) or else from `d_type`, lists it in listing
    /// mode, and says whether to descend into it. A directory that is one
    /// of its own ancestors (a bind mount of it below itself) is reported
    /// as a loop and neither counted nor listed, as `find` does (`du`
    /// leaves it out silently); the walk goes on.
    pub fn entry(&mut self, shared: &Shared, name: &[u8], d_type: u8, st: Option<&Stat>) -> bool {
        self.seen += 1;
        let depth = self.depth() + 1;
        let reads = shared.reads(depth);
        if st.is_some_and(|st| self.counted_before(st)) {
            return false;
        }
        if let Some(st) = st.filter(|st| st.is_dir() && shared.may_loop(st)) {
            let same = self.dir.as_ref().and_then(|dir| dir.same_as(st.id()));
            if let Some(same) = same {
                let cause = loop_cause(same);
                self.entry_error(name, Op::Loop, cause);
                return false;
            }
        }
        let is_dir = match st {
            Some(st) if shared.config.one_file_system && shared.crosses(st) => {
                // A mount point: `find -xdev` lists it and `du -x` leaves
                // out its size; neither descends.
                self.acc.add_type(d_type_of(st.mode));
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
                    self.acc.add_type(d_type_of(st.mode));
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
            self.list(shared, name, d_type, st, depth);
        }
        is_dir
    }
}

impl Worker<'_> {
    /// Whether `st` is a directory counted under an earlier root.
    fn counted_before(&self, st: &Stat) -> bool {
        st.is_dir()
            && self
                .counted_before
                .as_ref()
                .is_some_and(|set| set.contains(&st.id()))
    }
}

/// Why a directory is not descended into: it is `same`.
fn loop_cause(same: &DirNode) -> io::Error {
    io::Error::other(format!(
        "the same directory as {} (not descended into)",
        same.path().display()
    ))
}

impl Worker<'_> {
    /// Hands the worker's totals back for merging.
    pub(crate) fn into_accumulator(self) -> Accumulator {
        self.acc
    }
}

/// Reports why a parallel walk was cut short ([`Queue::fail`]: a worker
/// panicked, or none could start), if it was: one error on the root,
/// counted, saying that the totals are incomplete.
pub(crate) fn report_failure<W>(
    queue: &Queue<W>,
    visitors: &dyn VisitorBuilder,
    root: &Path,
    total: &mut Accumulator,
) {
    if let Some(why) = queue.failure() {
        let cause = io::Error::other(format!("{why}; the totals are incomplete"));
        visitors.build().error(Error::new(root, Op::Read, cause));
        total.totals.errors += 1;
    }
}
