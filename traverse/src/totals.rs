//! Counts and sizes, and the per-thread accumulator that builds them.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use std::ops::AddAssign;

use crate::sys::{FileId, Stat};
use crate::timestamp::{TimeField, Timestamp};

/// The totals of one tree: counts by type, sizes, and errors.
///
/// `files`, `dirs`, `symlinks` and `other` count every directory entry (a
/// hard-linked file counts once per link, as `find -type f` does); `bytes`
/// and `disk_bytes` count a hard-linked inode once (as `du` does) unless
/// [`WalkBuilder::count_links`](crate::WalkBuilder::count_links) is set.
///
/// More counts may come, so outside this crate a `Totals` starts from
/// [`Totals::default`] and its fields are set one by one.
///
/// # Example
///
/// ```
/// use traverse::Totals;
/// let mut sum = Totals::default();
/// (sum.files, sum.bytes) = (2, 10);
/// let mut more = Totals::default();
/// (more.files, more.dirs, more.bytes) = (1, 1, 4096);
/// sum += more;
/// assert_eq!((sum.files, sum.dirs, sum.bytes), (3, 1, 4106));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Totals {
    /// Regular files (`find PATH -type f`).
    pub files: u64,
    /// Directories, the root included (`find PATH -type d`).
    pub dirs: u64,
    /// Symbolic links (never followed).
    pub symlinks: u64,
    /// FIFOs, sockets and devices.
    pub other: u64,
    /// Apparent size: `st_size` of every entry, the root included
    /// (`du -sb`). 128 bits: sparse files can claim up to 2^63-1 bytes
    /// each, so a sum may pass 2^64 (where `du` prints "Infinity").
    pub bytes: u128,
    /// Disk usage: `st_blocks * 512` (`du -sB1`), 128 bits like `bytes`.
    pub disk_bytes: u128,
    /// The part of `bytes` that is the `st_size` of directories. GNU du
    /// counts apparent sizes of regular files and symlinks only since
    /// coreutils 9.2, so `bytes - dir_bytes` is what `du -sb` prints there
    /// (`bytes` what it printed before, and what `find -printf %s` sums).
    pub dir_bytes: u128,
    /// Entries or directories that could not be read.
    pub errors: u64,
    /// The latest of the time chosen by
    /// [`WalkBuilder::latest_time`](crate::WalkBuilder::latest_time) among
    /// the entries counted (a hard-linked inode where its size is):
    /// `du --time`. `None` when no time was asked for.
    pub latest: Option<Timestamp>,
}

impl AddAssign for Totals {
    fn add_assign(&mut self, rhs: Totals) {
        self.files += rhs.files;
        self.dirs += rhs.dirs;
        self.symlinks += rhs.symlinks;
        self.other += rhs.other;
        self.bytes += rhs.bytes;
        self.disk_bytes += rhs.disk_bytes;
        self.dir_bytes += rhs.dir_bytes;
        self.errors += rhs.errors;
        self.latest = self.latest.max(rhs.latest);
    }
}

impl Totals {
    /// Counts one entry by its `st_mode`: which kind it is.
    pub(crate) fn add_kind(&mut self, mode: u32) {
        match mode & libc::S_IFMT {
            libc::S_IFREG => self.files += 1,
            libc::S_IFDIR => self.dirs += 1,
            libc::S_IFLNK => self.symlinks += 1,
            _ => self.other += 1,
        }
    }

    /// Counts one entry by its `d_type` alone.
    pub(crate) fn add_type(&mut self, d_type: u8) {
        match d_type {
            libc::DT_REG => self.files += 1,
            libc::DT_DIR => self.dirs += 1,
            libc::DT_LNK => self.symlinks += 1,
            _ => self.other += 1,
        }
    }

    /// Adds the sizes of an inode.
    pub(crate) fn add_sizes(&mut self, size: u64, blocks: u64) {
        self.bytes += u128::from(size);
        self.disk_bytes += disk_bytes(blocks);
    }

    /// Counts one entry by its stat: its kind, its sizes, and its time
    /// `field` when the walk keeps one.
    pub(crate) fn add_stat(&mut self, st: &Stat, field: Option<TimeField>) {
        self.add_kind(st.mode);
        self.add_sizes(st.size, st.blocks);
        if st.is_dir() {
            self.dir_bytes += u128::from(st.size);
        }
        self.add_time(field.map(|f| st.time(f)));
    }

    /// Keeps `time` if it is the latest.
    pub(crate) fn add_time(&mut self, time: Option<Timestamp>) {
        self.latest = self.latest.max(time);
    }
}

/// The disk usage of `blocks` 512-byte blocks, exact in 128 bits.
pub(crate) fn disk_bytes(blocks: u64) -> u128 {
    u128::from(blocks) * 512
}

/// One worker's running totals. Workers never share one, so counting takes
/// no lock; hard-linked inodes are kept aside with their sizes and counted
/// once when the workers' accumulators are merged.
#[derive(Debug)]
pub(crate) struct Accumulator {
    pub totals: Totals,
    /// Fx rather than std's SipHash: the keys are inode numbers, not
    /// attacker-chosen, and hashing them was 9 % of a warm walk of a tree
    /// of hard links.
    links: FxHashMap<FileId, (u64, u64, Option<Timestamp>)>,
    count_links: bool,
    /// [`Config::latest_time`](crate::config::Config).
    time: Option<TimeField>,
    /// With [`Config::count_once`](crate::config::Config): the directories
    /// counted, for the roots after this one.
    pub dirs: Vec<FileId>,
}

impl Accumulator {
    pub fn new(count_links: bool, time: Option<TimeField>) -> Accumulator {
        Accumulator {
            totals: Totals::default(),
            links: FxHashMap::default(),
            count_links,
            time,
            dirs: Vec::new(),
        }
    }

    /// Whether every name of a hard-linked inode counts its size.
    pub fn count_links(&self) -> bool {
        self.count_links
    }

    /// The time of `st` the totals keep, if they keep one.
    pub fn time_of(&self, st: &Stat) -> Option<Timestamp> {
        self.time.map(|f| st.time(f))
    }

    /// Which time the totals keep the latest of.
    pub fn time_field(&self) -> Option<TimeField> {
        self.time
    }

    /// Counts one entry by its stat.
    pub fn add(&mut self, st: &Stat) {
        self.totals.add_kind(st.mode);
        // du keeps one record per hard-linked inode.
        if !self.count_links && st.is_hard_linked() {
            let time = self.time_of(st);
            self.links.insert(st.id(), (st.size, st.blocks, time));
        } else {
            self.totals.add_sizes(st.size, st.blocks);
            if st.is_dir() {
                self.totals.dir_bytes += u128::from(st.size);
            }
            self.totals.add_time(self.time_of(st));
        }
    }

    /// Counts one entry by type alone (listing mode, no stat).
    pub fn add_type(&mut self, d_type: u8) {
        self.totals.add_type(d_type);
    }

    /// Adds another worker's accumulator into this one.
    pub fn merge(&mut self, other: Accumulator) {
        self.totals += other.totals;
        self.dirs.extend(other.dirs);
        if self.links.len() < other.links.len() {
            let mine = std::mem::replace(&mut self.links, other.links);
            self.links.extend(mine);
        } else {
            self.links.extend(other.links);
        }
    }

    /// The final totals: each hard-linked inode not in `seen` (inodes
    /// counted under earlier roots, as du does for several arguments) is
    /// added once and recorded in `seen`.
    pub fn finish(mut self, seen: &mut HashSet<FileId>) -> Totals {
        for (key, (size, blocks, time)) in self.links {
            if seen.insert(key) {
                self.totals.add_sizes(size, blocks);
                self.totals.add_time(time);
            }
        }
        self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(ino: u64, size: u64, blocks: u64) -> Stat {
        Stat {
            mode: libc::S_IFREG | 0o644,
            nlink: 1,
            dev: 1,
            ino,
            size,
            blocks,
            mnt_id: None,
            mount_root: None,
            uid: 0,
            gid: 0,
            atime: Timestamp::default(),
            mtime: Timestamp::default(),
            ctime: Timestamp::default(),
        }
    }

    /// Three sparse files of the largest size the kernel allows: the sum
    /// passes 2^64 and must not wrap.
    #[test]
    fn sums_past_two_to_the_64_are_exact() {
        let mut acc = Accumulator::new(false, None);
        for ino in 0..3 {
            acc.add(&file(ino, i64::MAX as u64, u64::MAX));
        }
        let t = acc.finish(&mut HashSet::new());
        assert_eq!(t.bytes, 3 * u128::from(i64::MAX as u64));
        assert_eq!(t.disk_bytes, 3 * 512 * u128::from(u64::MAX));
    }
}

/// What a worker counted in the directory it reads, published to
/// [`Progress`] when it leaves it and every 1 024 entries meanwhile (a
/// directory of millions of entries shows its count moving).
#[derive(Debug)]
pub(crate) struct DirProgress {
    pub seen: u64,
    published: u64,
    /// The worker's byte total when last published.
    bytes_before: u128,
    /// The walk's: a display may ask for the path of the current directory.
    pub progress: Arc<Progress>,
}

impl DirProgress {
    pub fn new(progress: Arc<Progress>) -> DirProgress {
        DirProgress {
            seen: 0,
            published: 0,
            bytes_before: 0,
            progress,
        }
    }

    /// A new directory, the worker's byte total at `bytes`.
    pub fn start(&mut self, bytes: u128) {
        (self.seen, self.published, self.bytes_before) = (0, 0, bytes);
    }

    /// One more entry, the worker's byte total at `bytes`; whether the
    /// counts were just published and a display waits for the path.
    pub fn count(&mut self, bytes: u128) -> bool {
        self.seen += 1;
        if !self.seen.is_multiple_of(1024) {
            return false;
        }
        let progress = Arc::clone(&self.progress);
        self.publish(&progress, bytes);
        progress.wants_path()
    }

    /// Records `path` (bytes) as the directory being read.
    pub fn tell(&self, path: &[u8]) {
        use std::os::unix::ffi::OsStrExt;
        self.progress
            .set_path(Path::new(std::ffi::OsStr::from_bytes(path)));
    }

    /// Adds what was counted since the last time to `progress`.
    pub fn publish(&mut self, progress: &Progress, bytes: u128) {
        let new = bytes - self.bytes_before;
        progress.add(
            self.seen - self.published,
            u64::try_from(new).unwrap_or(u64::MAX),
        );
        self.published = self.seen;
        self.bytes_before = bytes;
    }
}

/// Counts of what the walk has seen so far, for a progress display, and
/// the directory being read. The counts are updated once per directory
/// (and every 1 024 entries inside a large one), so reading them costs
/// the walk nothing.
///
/// ```
/// let walk = traverse::WalkBuilder::new().build();
/// walk.totals(std::path::Path::new("."));
/// assert!(walk.progress().entries() >= 1);
/// ```
#[derive(Debug, Default)]
pub struct Progress {
    entries: AtomicU64,
    bytes: AtomicU64,
    /// Whether a display asked for the path of the next directory entered.
    want_path: AtomicBool,
    path: Mutex<Option<PathBuf>>,
}

impl Progress {
    /// Entries seen (hard links each time).
    pub fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Apparent bytes seen (hard links each time).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// A directory the walk entered lately (`None` before the first), and
    /// a request for a newer one: the next directory a worker enters
    /// records its path, one path built per call rather than one per
    /// directory.
    ///
    /// ```
    /// let walk = traverse::WalkBuilder::new().build();
    /// assert_eq!(walk.progress().path(), None);
    /// ```
    pub fn path(&self) -> Option<PathBuf> {
        self.want_path.store(true, Ordering::Relaxed);
        self.path.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether a display waits for a path (and from now on, no longer).
    pub(crate) fn wants_path(&self) -> bool {
        self.want_path.load(Ordering::Relaxed) && self.want_path.swap(false, Ordering::Relaxed)
    }

    pub(crate) fn set_path(&self, path: &Path) {
        *self.path.lock().unwrap_or_else(|p| p.into_inner()) = Some(path.to_owned());
    }

    /// Back to zero, for a new run.
    pub(crate) fn reset(&self) {
        self.entries.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
        *self.path.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub(crate) fn add(&self, entries: u64, bytes: u64) {
        self.entries.fetch_add(entries, Ordering::Relaxed);
        // A display figure: it saturates rather than wraps (the totals
        // themselves are exact, in 128 bits).
        let _ = self
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_add(bytes))
            });
    }
}
