//! Hard-linked inodes a walk has already stat'ed, so that further names
//! of one are counted from `getdents` alone.
//!
//! In a tree of hard links (backups made with `cp -al` or rsnapshot,
//! package stores) most names lead to an inode already counted, and the
//! `d_ino` that `getdents` returns with the name says which: a name whose
//! (directory's device, `d_ino`) was stat'ed before adds one file and no
//! bytes, with no `statx` (on the benchmarks' tree of hard links, 4 of 5
//! names). That holds only where `d_ino` is the inode's `st_ino` and the
//! entry lives on its directory's device, so the shortcut is taken only on
//! filesystems known to keep `d_ino == st_ino` ([`trusts_d_ino`]; not FUSE
//! or overlayfs, whose `d_ino` may be another inode's number) and never
//! for a name that is some mount point's last component (a file
//! bind-mounted over a name is another device's inode).

use std::hash::{BuildHasher, Hash};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::{FxBuildHasher, FxHashSet};

use crate::node::end_of_listing;
use crate::sys::{self, FileId};

/// Shards of the set: workers insert and look up at once, one short lock
/// each; 64 keeps two workers (or 32 on a cold cache) off each other.
pub(crate) const SHARDS: usize = 64;

/// The shard of a table of inodes split in [`SHARDS`] locks that `key`
/// belongs to.
pub(crate) fn shard_of(key: &FileId) -> usize {
    let mut hasher = FxBuildHasher.build_hasher();
    key.hash(&mut hasher);
    let hash = std::hash::Hasher::finish(&hasher);
    // The high bits: Fx mixes the low ones least.
    (hash >> 58) as usize % SHARDS
}

/// The hard-linked inodes seen by one walk, shared by its workers.
#[derive(Debug)]
pub(crate) struct Links {
    shards: Box<[Mutex<FxHashSet<FileId>>]>,
    /// False until the first insert: a tree without hard links pays one
    /// relaxed load per entry, no lock.
    any: AtomicBool,
    /// Last components of the mount points (`/proc/self/mountinfo`).
    mount_names: Arc<NameSet>,
}

/// Names, as bytes.
type NameSet = FxHashSet<Box<[u8]>>;

/// The last components of the mount points, read from
/// `/proc/self/mountinfo` at the first walk that needs them and kept for
/// the roots after it ([`Walk::run_next`](crate::Walk::run_next)): reading
/// that file was more than half of the CPU time of a walk of a small
/// root, where several thousand PATHs are walked one after the other.
/// [`Walk::run`](crate::Walk::run) reads it again.
#[derive(Debug, Default)]
pub(crate) struct MountNames(OnceLock<Option<Arc<NameSet>>>);

impl MountNames {
    fn get(&self) -> Option<Arc<NameSet>> {
        self.0
            .get_or_init(|| {
                let mountinfo = std::fs::read("/proc/self/mountinfo").ok()?;
                Some(Arc::new(mount_point_names(&mountinfo)))
            })
            .clone()
    }
}

impl Links {
    /// An empty set, or `None` when the mount points cannot be read (then
    /// no name can be trusted not to be one).
    pub fn new(mounts: &MountNames) -> Option<Links> {
        Some(Links {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            any: AtomicBool::new(false),
            mount_names: mounts.get()?,
        })
    }

    fn shard(&self, key: &FileId) -> &Mutex<FxHashSet<FileId>> {
        &self.shards[shard_of(key)]
    }

    /// Records an inode with several links, just stat'ed and counted.
    pub fn insert(&self, key: FileId) {
        let mut set = crate::sys::lock(self.shard(&key));
        set.insert(key);
        self.any.store(true, Ordering::Relaxed);
    }

    /// Whether the entry `name` (not a directory) with inode number `ino`,
    /// in a directory on `dev`, is a further name of an inode already
    /// recorded: then it needs no stat.
    pub fn counted(&self, dev: u64, ino: u64, name: &[u8]) -> bool {
        if !self.any.load(Ordering::Relaxed) {
            return false;
        }
        let key = FileId { dev, ino };
        let hit = crate::sys::lock(self.shard(&key)).contains(&key);
        hit && !self.mount_names.contains(name)
    }
}

/// One worker's memory of the devices it has seen and their filesystem
/// type (`None` where `fstatfs` failed): one `fstatfs` per device and
/// worker, whatever is asked of the type.
#[derive(Debug, Default)]
pub(crate) struct Trust(Vec<(u64, Option<libc::c_long>)>);

impl Trust {
    /// `dev` if the directory `fd` on it is on a filesystem whose `d_ino`s
    /// can be trusted ([`trusts_d_ino`]).
    pub(crate) fn link_dev(&mut self, dev: u64, fd: BorrowedFd<'_>) -> Option<u64> {
        self.fs_type(dev, fd)
            .is_some_and(trusts_d_ino)
            .then_some(dev)
    }

    /// The type of the filesystem on `dev`, asked through the directory
    /// `fd` on it the first time.
    pub(crate) fn fs_type(&mut self, dev: u64, fd: BorrowedFd<'_>) -> Option<libc::c_long> {
        if let Some(&(_, fs_type)) = self.0.iter().find(|(d, _)| *d == dev) {
            return fs_type;
        }
        let fs_type = sys::fs_type(fd).ok();
        self.0.push((dev, fs_type));
        fs_type
    }

    /// The last `d_off` that ends a read of the directory `fd` on `dev`
    /// ([`end_of_listing`]), if its filesystem has one.
    pub(crate) fn listing_end(&mut self, dev: Option<u64>, fd: BorrowedFd<'_>) -> Option<u64> {
        self.fs_type(dev?, fd).and_then(end_of_listing)
    }
}

/// Whether a filesystem, by its `statfs` type, returns each entry's
/// `st_ino` as its `d_ino`.
pub(crate) fn trusts_d_ino(fs_type: libc::c_long) -> bool {
    matches!(
        fs_type,
        libc::EXT4_SUPER_MAGIC // ext2, ext3 and ext4
            | libc::XFS_SUPER_MAGIC
            | libc::BTRFS_SUPER_MAGIC
            | libc::TMPFS_MAGIC
            | libc::F2FS_SUPER_MAGIC
    )
}

/// The last component of every mount point in a `mountinfo` text (the
/// fifth field, with `\NNN` octal escapes for space, tab, newline and
/// backslash).
fn mount_point_names(mountinfo: &[u8]) -> FxHashSet<Box<[u8]>> {
    let mut names = FxHashSet::default();
    for line in mountinfo.split(|&b| b == b'\n') {
        let Some(field) = line.split(|&b| b == b' ').nth(4) else {
            continue;
        };
        let path = unescape(field);
        let last = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
        if !last.is_empty() {
            names.insert(last.into());
        }
    }
    names
}

fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let digits = field.get(i + 1..i + 4);
        match digits {
            Some(d) if field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)) => {
                let value = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            _ => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &[u8] = b"\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw
40 22 254:0 /srv/hosts /etc/hosts rw,relatime shared:1 - ext4 /dev/vda rw
41 22 0:30 / /mnt/my\\040disk rw - tmpfs tmpfs rw
42 22 0:31 / /mnt/back\\134slash rw - tmpfs tmpfs rw
";

    #[test]
    fn mount_point_names_are_last_components_unescaped() {
        let names = mount_point_names(MOUNTINFO);
        let mut got: Vec<&[u8]> = names.iter().map(|n| &n[..]).collect();
        got.sort();
        let want: [&[u8]; 4] = [b"back\\slash", b"hosts", b"my disk", b"proc"];
        assert_eq!(got, want);
    }

    #[test]
    fn a_backslash_without_three_octal_digits_is_kept() {
        assert_eq!(unescape(b"a\\09b\\"), b"a\\09b\\");
        assert_eq!(unescape(b"\\011x"), b"\tx");
    }

    #[test]
    fn only_recorded_inodes_on_the_same_device_are_counted() {
        let links = Links {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            any: AtomicBool::new(false),
            mount_names: Arc::new(mount_point_names(MOUNTINFO)),
        };
        assert!(!links.counted(1, 7, b"a"));
        links.insert(FileId { dev: 1, ino: 7 });
        assert!(links.counted(1, 7, b"a"));
        assert!(!links.counted(2, 7, b"a"), "same number, other device");
        assert!(!links.counted(1, 8, b"a"));
        assert!(!links.counted(1, 7, b"hosts"), "a mount point's name");
        for ino in 0..10_000 {
            links.insert(FileId { dev: 3, ino });
        }
        assert!((0..10_000).all(|ino| links.counted(3, ino, b"x")));
        assert!(!links.counted(3, 10_000, b"x"));
    }

    #[test]
    fn fuse_and_overlayfs_are_not_trusted() {
        assert!(trusts_d_ino(libc::EXT4_SUPER_MAGIC));
        assert!(trusts_d_ino(libc::TMPFS_MAGIC));
        assert!(!trusts_d_ino(libc::FUSE_SUPER_MAGIC));
        assert!(!trusts_d_ino(libc::OVERLAYFS_SUPER_MAGIC));
    }
}
