//! What every engine shares: the walk's settings and shared state
//! ([`Shared`]: what to stat, skip, read and descend into), the window a
//! directory is read in, the parallel engines' units of work and the
//! report of a walk cut short. One worker's state and its per-entry rule
//! are in [`worker`]; a directory opened to be read in [`open`]; the end
//! of a directory read in parts in [`parts`]; the parallel engines' pool
//! of workers in [`pool`].

mod open;
mod parts;
mod pool;
mod worker;

use std::ffi::OsStr;
use std::io;
use std::ops::Range;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::breakdown::Breakdown;
use crate::config::Config;
use crate::error::{Error, Op};
use crate::filter::FilterEntry;
use crate::ignore_rules::Rules;
use crate::links::{shard_of, Links, MountNames, SHARDS};
use crate::listing_order::ListingRule;
use crate::node::{DirNode, FdBudget};
use crate::queue::Queue;
use crate::sort::Order;
use crate::spare::Spares;
use crate::sys::{FileId, Stat};
use crate::totals::Accumulator;
use crate::totals::Progress;
use crate::visit::VisitorBuilder;
use rustc_hash::FxHashSet;

pub(crate) use open::Counted;
pub(crate) use parts::Parts;
pub(crate) use pool::{Engine, Pool};
pub(crate) use worker::Worker;

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
    /// With [`Config::count_once`]: the files counted before this root
    /// ([`Walk::count_file_once`](crate::Walk::count_file_once)), when
    /// there are any.
    pub files_before: Option<Arc<DirSet>>,
    /// With [`Config::count_once`]: the entries the filters left out (by
    /// the directory's device and their `d_ino`), which a later root
    /// naming one of them counts, as du does.
    pub skipped: Option<Mutex<Vec<FileId>>>,
    /// With links followed (and not `count_links`): every directory and
    /// file reached so far by this root's walk and those before it, to
    /// count each once however many links lead to it (as `du -L`); split
    /// in locks by inode, as [`crate::links`].
    pub reached: Option<Arc<[Mutex<DirSet>]>>,
    /// The mount points' names, read once for a series of roots.
    pub mount_names: Arc<MountNames>,
    /// Buffers and rings kept from one root to the next.
    pub spares: Arc<Spares>,
    /// In a listing sorted per directory or contents first, the entries
    /// held until their directory (or its subtree) is done.
    pub order: Option<Order>,
    /// The ignore rules of this root's walk, when asked for.
    pub ignore: Option<Rules>,
}

/// Directories by (device, inode).
pub(crate) type DirSet = FxHashSet<FileId>;

impl Shared {
    /// An empty set for [`reached`](Self::reached).
    pub fn reach_set() -> Arc<[Mutex<DirSet>]> {
        (0..SHARDS).map(|_| Mutex::default()).collect()
    }

    /// Whether `st` is reached for the first time (always, unless links
    /// are followed): a further time, it is left out.
    pub fn first_reach(&self, st: &Stat) -> bool {
        self.reached.as_ref().is_none_or(|shards| {
            let id = st.id();
            let mut set = shards[shard_of(&id)]
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            set.insert(id)
        })
    }

    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// Whether an entry of this `d_type` must be stat'ed: always when
    /// counting sizes or listing with metadata; when listing, a directory
    /// too (its identity tells a loop, its device and mount a mount point,
    /// as `find` stats it), and a symlink the walk follows.
    pub fn needs_stat(&self, d_type: u8) -> bool {
        !self.config.counts_types_only()
            || d_type == libc::DT_UNKNOWN
            || d_type == libc::DT_DIR
            || (d_type == libc::DT_LNK && self.config.follow_links)
    }

    /// Whether the directory `st` may be one of its ancestors, so that the
    /// ancestors are checked (O(depth)): a mount root (a bind mount of an
    /// ancestor), a stat that does not tell, or any directory on a
    /// filesystem that may report an ancestor's inode number (a false
    /// loop, which `find` reports as a loop too); any directory on another
    /// mount than the root's (below a bind mount of an ancestor of the
    /// root, a directory may be the root itself); any directory when
    /// following symlinks, which may lead to an ancestor.
    pub fn may_loop(&self, st: &Stat) -> bool {
        st.may_loop() || !self.root_ids_unique || self.crosses(st) || self.config.follow_links
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

    /// Whether the entry `name` of `dir` (open as `fd`), of type `d_type`, is left out:
    /// neither counted nor descended into. It is when its name is excluded
    /// (`--exclude`), the user's filter refuses it or the ignore rules
    /// leave it out. Every engine asks
    /// here, before it stats the entry. (No entry lies deeper than the
    /// maximum depth: the directories at it are not read, see
    /// [`reads`](Self::reads).)
    pub fn skips(
        &self,
        (dir, fd): (&DirNode, BorrowedFd<'_>),
        name: &[u8],
        ino: u64,
        d_type: u8,
    ) -> bool {
        let config = &self.config;
        let skips = config
            .exclude
            .as_ref()
            .is_some_and(|set| set.is_match(OsStr::from_bytes(name)))
            || config
                .filter
                .as_ref()
                .is_some_and(|f| !f.keeps(&FilterEntry::new(dir, name, d_type)))
            || self
                .ignore
                .as_ref()
                .is_some_and(|rules| rules.ignores(dir, fd, name, d_type));
        if let (true, Some(skipped), Some(at)) = (skips, &self.skipped, dir.id()) {
            let id = FileId { dev: at.dev, ino };
            skipped.lock().unwrap_or_else(|p| p.into_inner()).push(id);
        }
        skips
    }

    /// Whether a directory at `depth` below the root is read (the maximum
    /// depth counts the directories at its last level without reading
    /// them).
    pub fn reads(&self, depth: usize) -> bool {
        self.config.reads(depth)
    }

    /// Whether the subdirectories of `dir` that `d_type` says are
    /// directories may be counted when opened rather than stat'ed by name
    /// (one lookup fewer): not with `-x`, which needs the device before
    /// descending, nor in a listing, which stats no directory, nor when
    /// they sit at the maximum depth and are not opened.
    pub fn defers_dirs(&self, dir: &DirNode) -> bool {
        !self.config.list && !self.config.one_file_system && self.reads(dir.depth() + 1)
    }

    /// What a parallel engine does with the entry `name` of `dir`, open as `fd` (its
    /// `d_ino` and `d_type`), before any I/O: the checks of [`skips`](Self::skips), the
    /// hard-link shortcut (where `links`, the set and the directory's
    /// device, says its `d_ino` can be trusted), `defer_dirs`
    /// ([`defers_dirs`](Self::defers_dirs) of `dir`) and
    /// [`needs_stat`](Self::needs_stat), in that order. A directory is
    /// never taken for a known link: a further name is never one.
    #[inline]
    pub fn step(
        &self,
        (dir, fd): (&DirNode, BorrowedFd<'_>),
        name: &[u8],
        ino: u64,
        d_type: u8,
        defer_dirs: bool,
        links: Option<(&Links, u64)>,
    ) -> Step {
        if self.skips((dir, fd), name, ino, d_type) {
            return Step::Skip;
        }
        if defer_dirs && d_type == libc::DT_DIR {
            return Step::Defer;
        }
        if let Some((links, dev)) = links {
            if !matches!(d_type, libc::DT_DIR | libc::DT_UNKNOWN) && links.counted(dev, ino, name) {
                return Step::Known(FileId { dev, ino });
            }
        }
        if self.needs_stat(d_type) {
            Step::Stat
        } else {
            Step::Count
        }
    }

    /// The reading of `dir` is over, every part of it (after the worker
    /// that read the last part has left it): with a breakdown, its totals
    /// become final once its subdirectories are.
    pub fn read_done(&self, dir: &Arc<DirNode>) {
        if let Some(breakdown) = &self.breakdown {
            breakdown.done(dir);
        }
    }

    /// How du orders the entries of a directory read whole, `entries` of
    /// them, through `fd`: under -L on every filesystem as on those fts
    /// sorts (see [`ListingRule::logical`]).
    pub fn listing_rule(&self, entries: u64, fd: BorrowedFd<'_>) -> ListingRule {
        if self.config.follow_links {
            ListingRule::logical(entries)
        } else {
            ListingRule::of(entries, fd)
        }
    }

    /// Whether to sort a directory of `len` entries by inode number.
    pub fn inode_order(&self, len: usize) -> bool {
        self.config.inode_order.is_some_and(|t| len > t)
    }
}

/// What [`Shared::step`] decided for one entry.
#[derive(Clone, Copy)]
pub(crate) enum Step {
    /// Left out: neither counted nor descended into.
    Skip,
    /// A subdirectory not counted yet ([`Work::Subdir`]): stat'ed through
    /// its descriptor once open, one name lookup fewer.
    Defer,
    /// A further name of this hard-linked inode, already stat'ed under
    /// another name: counted by [`Worker::known_link`], not stat'ed.
    Known(FileId),
    /// Stat'ed by name, then counted ([`Worker::count_entry`]).
    Stat,
    /// Counted from its `d_type` alone ([`Worker::count_entry`]).
    Count,
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

/// Entries per chunk of a large directory handed to another worker.
pub(crate) const CHUNK: usize = 2048;

/// A unit of work of a parallel engine, whose batch of a large
/// directory's entries is a `B`.
pub(crate) enum Work<B> {
    /// Read this directory (on this device, if known) and stat its entries.
    Dir(Arc<DirNode>, Option<u64>),
    /// The same for a subdirectory not counted yet: its `d_type` said
    /// directory, so it is stat'ed through its descriptor once open (no
    /// name lookup, no wait for a stat by name) rather than by name in its
    /// parent.
    Subdir(Arc<DirNode>),
    /// Stat these entries of a large directory, a chunk its reader shared
    /// out.
    Chunk(Arc<B>, Range<usize>),
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
