//! A rank's reading of one [`Task`] with traverse's library: the directory
//! is the root of a walk one level deep (`max_depth(1)`, in listing mode
//! with every entry stat'ed), run by the library's engine (io_uring where
//! the kernel has it), so its entries are read and stat'ed exactly as
//! `traverse` reads them. Subdirectories come back as new tasks; what the
//! rank counted goes into its [`Share`]. A deep task (a long path, see
//! [`task::DEEP_PATH`]) is read with its whole subtree instead, by one walk
//! that opens each directory relative to its parent, as `traverse` does.

use std::hash::Hasher;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use traverse::{ListingRule, Totals, Walk, WalkBuilder};

use crate::collect::{Collect, Listed};
use crate::exclude::Exclude;
use crate::order::{chains, Chain};
use crate::task::{self, Task};

/// A directory whose `st_size` is at least this is read by several tasks
/// when there are several ranks (about 3 000 entries on tmpfs, 2 000 on ext4).
const LARGE_DIR: u64 = 64 * 1024;

/// What to keep per directory and per file, for the lines of a breakdown.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Directories are summed into their ancestor at this depth (`-d N`);
    /// `None`: no breakdown.
    pub dirs_to: Option<usize>,
    /// Files no deeper than this get lines (`-a`).
    pub files_to: Option<usize>,
    /// `--count-links`: every name's size counts.
    pub count_links: bool,
    pub one_file_system: bool,
}

/// The counts of one directory (the entries read in it, and its own inode).
#[derive(Clone, Debug, Default)]
pub struct DirRec {
    pub depth: u32,
    pub totals: Totals,
    /// Names of hard-linked inodes counted elsewhere (for `--inodes`).
    pub more_names: u64,
    pub chain: Chain,
}

impl DirRec {
    /// Records the directory's place in du's order from `chain`, a place
    /// at or below it (its first `depth` keys), unless it is known already.
    pub fn note_place(&mut self, chain: &[u128]) {
        if self.chain.is_empty() {
            self.chain = chain[..chain.len().min(self.depth as usize)].to_vec();
        }
    }
}

/// A name of a hard-linked inode, sent to the inode's owner.
#[derive(Clone, Debug)]
pub struct LinkName {
    pub dev: u64,
    pub ino: u64,
    pub bytes: u64,
    pub disk: u64,
    pub path: Vec<u8>,
    pub depth: u32,
    /// What it is (0 file, 1 directory, 2 symlink, 3 other).
    pub kind: u8,
    pub chain: Chain,
}

/// A file's line (`-a`).
#[derive(Clone, Debug)]
pub struct FileLine {
    pub path: Vec<u8>,
    pub depth: u32,
    pub totals: Totals,
    pub chain: Chain,
}

/// What one rank counted of one root.
#[derive(Default)]
pub struct Share {
    /// Everything but the sizes of hard-linked inodes (their names counted).
    pub totals: Totals,
    pub dirs: FxHashMap<Vec<u8>, DirRec>,
    pub links: Vec<LinkName>,
    pub files: Vec<FileLine>,
    /// Tasks read and entries listed by this rank (for `TRAVERSE_MPI_STATS`).
    pub tasks: u64,
    pub entries: u64,
}

impl Share {
    /// Adds what another reader of the rank counted.
    pub fn merge(&mut self, other: Share) {
        self.totals += other.totals;
        for (path, rec) in other.dirs {
            let mine = self.dirs.entry(path).or_default();
            mine.depth = rec.depth;
            mine.totals += rec.totals;
            mine.more_names += rec.more_names;
            mine.chain = rec.chain;
        }
        self.links.extend(other.links);
        self.files.extend(other.files);
        self.tasks += other.tasks;
        self.entries += other.entries;
    }
}

#[derive(Clone, Copy)]
pub enum Kind {
    File = 0,
    Dir = 1,
    Symlink = 2,
    Other = 3,
}

impl Kind {
    pub fn from_u8(k: u8) -> Kind {
        match k {
            0 => Kind::File,
            1 => Kind::Dir,
            2 => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// Reads tasks with one [`Walk`], kept from task to task (its rings and
/// buffers are reused).
pub struct Walker {
    walk: Walk,
    /// The user's settings, for `deep`.
    builder: WalkBuilder,
    /// The walk of deep tasks (a whole subtree), built at the first one.
    deep: OnceLock<Walk>,
    /// The share of a large directory the next task reads: parts << 32 | part.
    split: Arc<AtomicU64>,
    /// The entries the task's directory lists, shares left out included
    /// (what decides du's order of them: [`ListingRule`]).
    listed: Arc<AtomicU64>,
    ranks: u32,
    keep: Keep,
    /// Directories counted under an earlier PATH: neither counted nor read
    /// again (`du A B` counts every directory once).
    pub earlier: FxHashSet<(u64, u64)>,
    /// Errors in du's words (`traverse` prints them so with du's options).
    pub du_messages: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Which share of a large directory a name belongs to.
pub fn part_of(name: &[u8], parts: u32) -> u32 {
    let mut h = FxHasher::default();
    h.write(name);
    (h.finish() % u64::from(parts)) as u32
}

impl Walker {
    /// `builder` holds the user's settings (engine, jobs, `-x`);
    /// `exclude`, `--exclude`'s patterns.
    pub fn new(builder: WalkBuilder, ranks: u32, keep: Keep, exclude: Option<Exclude>) -> Walker {
        let split = Arc::new(AtomicU64::new(1 << 32));
        let share = Arc::clone(&split);
        let listed = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&listed);
        let excluded = exclude.clone();
        let walk = builder
            .clone()
            .list(true)
            .list_metadata(true)
            .count_links(true)
            .count_once(false)
            .max_depth(1)
            .filter_entry(move |e| {
                // Asked of every entry, each once, before it is counted.
                counted.fetch_add(1, Ordering::Relaxed);
                let s = share.load(Ordering::Relaxed);
                let (parts, part) = ((s >> 32) as u32, s as u32);
                (parts <= 1 || part_of(e.name().as_bytes(), parts) == part)
                    && !excluded
                        .as_ref()
                        .is_some_and(|x| x.matches(e.path().as_os_str().as_bytes()))
            })
            .build();
        // A deep task's walk: the same patterns, no shares.
        let builder = match exclude {
            Some(x) => builder.filter_entry(move |e| !x.matches(e.path().as_os_str().as_bytes())),
            None => builder,
        };
        Walker {
            walk,
            builder,
            deep: OnceLock::new(),
            split,
            listed,
            ranks,
            keep,
            earlier: FxHashSet::default(),
            du_messages: false,
        }
    }

    /// The engine that runs, for the messages.
    pub fn walk(&self) -> &Walk {
        &self.walk
    }

    /// Reads `task`: counts into `share`, pushes subdirectories to `out`.
    pub fn run(&self, task: &Task, share: &mut Share, out: &mut Vec<Task>) {
        let split = (u64::from(task.parts) << 32) | u64::from(task.part);
        self.split.store(split, Ordering::Relaxed);
        self.listed.store(0, Ordering::Relaxed);
        let collect = Collect {
            listed: Mutex::default(),
            du: self.du_messages,
        };
        let root = std::path::Path::new(std::ffi::OsStr::from_bytes(&task.path));
        let walk = if task.deep {
            self.deep.get_or_init(|| {
                self.builder
                    .clone()
                    .list(true)
                    .list_metadata(true)
                    .count_links(true)
                    .count_once(false)
                    .build()
            })
        } else {
            &self.walk
        };
        let summary = walk.run_next(root, &collect);
        let listed = std::mem::take(&mut *lock(&collect.listed));
        let rule = ListingRule::of_path(self.listed.load(Ordering::Relaxed), root)
            .unwrap_or(ListingRule::AS_LISTED);
        let chains = chains(task, rule, &listed);
        share.tasks += 1;
        share.entries += listed.len() as u64;
        let mut own = Totals::default();
        own.errors = summary.totals.errors;
        let first = task.part == 0;
        match task.own {
            Some((bytes, disk)) if first => {
                own.dirs += 1;
                own.bytes += u128::from(bytes);
                own.dir_bytes += u128::from(bytes);
                own.disk_bytes += u128::from(disk);
            }
            _ => {}
        }
        let root = listed
            .iter()
            .find(|e| e.depth == 0)
            .map(|e| (e.dev, e.mount));
        for (e, chain) in listed.iter().zip(&chains) {
            let depth = task.depth as usize + e.depth;
            if e.depth == 0 {
                if task.own.is_none() && first {
                    add(&mut own, e);
                }
                continue;
            }
            if e.is_dir && !task.deep {
                if self.earlier.contains(&(e.dev, e.ino)) {
                    continue;
                }
                if self.keep.one_file_system && root.is_some_and(|r| crosses(r, e)) {
                    // A mount point: counted as an entry, without its size
                    // and not read, as traverse (and du -x) count it.
                    count_kind(&mut own, e.kind);
                    continue;
                }
                let parts = self.parts_for(e.len);
                out.extend((0..parts).map(|part| Task {
                    path: e.path.clone(),
                    depth: depth as u32,
                    parts,
                    part,
                    own: Some((e.len, e.disk)),
                    deep: e.path.len() >= task::DEEP_PATH,
                    chain: chain.clone(),
                }));
                continue;
            }
            // Below a deep task's directory, an entry counts in its own
            // directory's line (a directory's inode in its own).
            let mut elsewhere = Totals::default();
            let counts = if e.depth > 1 || e.is_dir {
                &mut elsewhere
            } else {
                &mut own
            };
            if e.nlink > 1 && !e.is_dir && !self.keep.count_links {
                count_kind(counts, e.kind);
                share.links.push(LinkName {
                    dev: e.dev,
                    ino: e.ino,
                    bytes: e.len,
                    disk: e.disk,
                    path: e.path.clone(),
                    depth: depth as u32,
                    kind: e.kind as u8,
                    chain: chain.clone(),
                });
            } else {
                add(counts, e);
                if !e.is_dir && self.keep.files_to.is_some_and(|max| depth <= max) {
                    let mut totals = Totals::default();
                    add(&mut totals, e);
                    share.files.push(FileLine {
                        path: e.path.clone(),
                        depth: depth as u32,
                        totals,
                        chain: chain.clone(),
                    });
                }
            }
            if e.depth > 1 || e.is_dir {
                let (dir, depth, chain) = if e.is_dir {
                    (&e.path[..], depth, &chain[..])
                } else {
                    (parent(&e.path), depth - 1, &chain[..chain.len() - 1])
                };
                self.count_in(share, (dir, depth, chain), elsewhere);
            }
        }
        let at = (&task.path[..], task.depth as usize, &task.chain[..]);
        self.count_in(share, at, own);
    }

    /// Counts `t` into `share`, in the line of the directory `dir` (at
    /// `depth`, its place `chain`) or of its ancestor at the depth of the
    /// lines.
    fn count_in(&self, share: &mut Share, (dir, depth, chain): (&[u8], usize, &[u128]), t: Totals) {
        share.totals += t;
        if let Some(max) = self.keep.dirs_to {
            let (key, depth) = ancestor(dir, depth, max);
            let rec = share.dirs.entry(key.to_vec()).or_default();
            rec.depth = depth as u32;
            rec.totals += t;
            rec.note_place(chain);
        }
    }

    /// How many tasks read a directory of `st_size` `len`.
    fn parts_for(&self, len: u64) -> u32 {
        if self.ranks < 2 || len < LARGE_DIR {
            return 1;
        }
        let by_size = u32::try_from(len / LARGE_DIR).unwrap_or(u32::MAX);
        // Each share lists the whole directory: no more shares than ranks.
        by_size.clamp(2, self.ranks)
    }
}

/// Whether the directory `e` is on another mount than its parent's, `at`
/// (device and mount id): a mount point, or a bind mount of the same
/// filesystem, as traverse tells them.
fn crosses(at: (u64, Option<u64>), e: &Listed) -> bool {
    e.dev != at.0 || matches!((e.mount, at.1), (Some(a), Some(b)) if a != b)
}

/// The directory `path` is in.
pub fn parent(path: &[u8]) -> &[u8] {
    &path[..path.iter().rposition(|&b| b == b'/').unwrap_or(0)]
}

/// The ancestor of the directory `path` (at `depth`) at depth `max`, or the
/// directory itself when it is not deeper: its path and depth.
pub fn ancestor(path: &[u8], depth: usize, max: usize) -> (&[u8], usize) {
    let mut end = path.len();
    for _ in max..depth {
        end = path[..end].iter().rposition(|&b| b == b'/').unwrap_or(0);
    }
    (&path[..end], depth.min(max))
}

fn add(t: &mut Totals, e: &Listed) {
    count_kind(t, e.kind);
    t.bytes += u128::from(e.len);
    if e.is_dir {
        t.dir_bytes += u128::from(e.len);
    }
    t.disk_bytes += u128::from(e.disk);
}

/// Counts one entry of this kind.
pub fn count_kind(t: &mut Totals, kind: Kind) {
    match kind {
        Kind::File => t.files += 1,
        Kind::Dir => t.dirs += 1,
        Kind::Symlink => t.symlinks += 1,
        Kind::Other => t.other += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_are_cut_at_a_slash() {
        assert_eq!(ancestor(b"/r/a/b/c", 3, 1), (&b"/r/a"[..], 1));
        assert_eq!(ancestor(b"/r/a", 1, 5), (&b"/r/a"[..], 1));
        assert_eq!(ancestor(b"r/a", 1, 0), (&b"r"[..], 0));
    }

    #[test]
    fn shares_of_a_directory_cover_each_name_once() {
        let names: Vec<String> = (0..1000).map(|i| format!("f{i}")).collect();
        let mut seen = vec![0u32; 7];
        for n in &names {
            seen[part_of(n.as_bytes(), 7) as usize] += 1;
        }
        assert_eq!(seen.iter().sum::<u32>(), 1000);
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }
}
