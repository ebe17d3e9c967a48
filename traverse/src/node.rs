//! Directories waiting to be read: the tree of [`DirNode`]s (names,
//! depths, identities for loop detection, a breakdown's tally), and the
//! entries of a directory being read ([`Ent`]), parsed from the records
//! of a read ([`push_entries`]). How a node gets its
//! descriptor, within a budget of them, is in [`open`].

mod open;
mod place;

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use io_uring_getdents::dirent::DirentIter;

use crate::ignore_rules::DirRules;
use crate::listing_order::ListingRule;
use crate::sys::{FileId, Stat};
use crate::tally::Tally;

pub(crate) use open::{Cursor, FdBudget, OpenFailed, Opener};
pub use place::ListingPlace;

/// A directory of the tree: queued, being read, or a parent of queued ones.
#[derive(Debug)]
pub(crate) struct DirNode {
    parent: Option<Arc<DirNode>>,
    /// The name in the parent, or the root's path.
    name: CString,
    /// Levels below the root (the root is 0): set again when it or an
    /// ancestor moves ([`move_to`](Self::move_to)).
    depth: AtomicUsize,
    /// The root's descriptor, kept for the whole walk: the root is opened
    /// by its path once, so a rename of PATH during the walk cannot swap
    /// another tree in.
    anchor: Option<Arc<OwnedFd>>,
    /// (device, inode), once a stat has told it: for loop detection and
    /// to check a parent reached through `..`.
    id: OnceLock<FileId>,
    /// Kept open while subdirectories wait, if the budget allowed.
    fd: Mutex<Option<Arc<OwnedFd>>>,
    /// Subdirectories not yet opened.
    pending: AtomicUsize,
    /// Its subtree's totals, when a breakdown was asked for (boxed: the
    /// plain walk pays one pointer).
    tally: Option<Box<Tally>>,
    /// Its stat, made before it was opened, said [`small_leaf`].
    small_leaf: bool,
    /// With ignore rules: its own, read when first asked for.
    ignore: OnceLock<Box<DirRules>>,
    /// Where its entry came in its parent's listing (the root's is unused).
    place: ListingPlace,
    /// Once it is read whole: how many entries it has, where `du` would
    /// sort some of them by inode ([`crate::listing_order`]); else 0.
    inode_sorted: AtomicU64,
    /// Under -L, once the walk is over: where du walks it, when that is
    /// another name than the one this walk read it by.
    moved: OnceLock<Box<Moved>>,
}

/// Another name of a directory: its parent, name and place there.
#[derive(Debug)]
struct Moved {
    parent: Arc<DirNode>,
    name: CString,
    place: ListingPlace,
}

/// Largest directory (`st_size`) taken for a small one by [`small_leaf`]:
/// one block on ext4 and XFS, a hundred names or two (tmpfs counts 20
/// bytes a name).
const SMALL_DIR: u64 = 4096;

/// `DirNode::inode_sorted`'s value until the directory is read whole.
const NOT_READ: u64 = u64::MAX;

/// Whether the directory stat'ed as `st` has no subdirectory (`nlink` 2, on
/// the filesystems that count them) and at most one block of names: its
/// files, created in it, have their inodes side by side on disk.
pub(crate) fn small_leaf(st: &Stat) -> bool {
    st.nlink == 2 && st.size <= SMALL_DIR
}

impl DirNode {
    /// The root of a walk: `path`, already opened as `fd` (with
    /// `O_NOFOLLOW | O_DIRECTORY`), whose stat gave `id`; with `tally`
    /// when a breakdown was asked for.
    pub fn root(path: CString, fd: OwnedFd, id: FileId, tally: Option<Tally>) -> Arc<DirNode> {
        Arc::new(DirNode {
            parent: None,
            name: path,
            depth: AtomicUsize::new(0),
            anchor: Some(Arc::new(fd)),
            id: OnceLock::from(id),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(0),
            tally: tally.map(Box::new),
            small_leaf: false,
            ignore: OnceLock::new(),
            place: ListingPlace::default(),
            inode_sorted: AtomicU64::new(NOT_READ),
            moved: OnceLock::new(),
        })
    }

    /// A subdirectory `name` of `parent`, at `place` in its listing, not
    /// stat'ed yet.
    pub fn child(parent: &Arc<DirNode>, name: &CStr, place: ListingPlace) -> Arc<DirNode> {
        DirNode::child_with_stat(parent, name, None, place)
    }

    /// A subdirectory `name` of `parent`, at `place` in its listing, with
    /// its stat if it was made (its identity, and with a breakdown its own
    /// size, counted in its subtree rather than in the parent's entries).
    pub fn child_with_stat(
        parent: &Arc<DirNode>,
        name: &CStr,
        st: Option<&Stat>,
        place: ListingPlace,
    ) -> Arc<DirNode> {
        let tally = parent.tally.as_ref().map(|pt| {
            pt.hold();
            Box::new(Tally::new(st, name.to_bytes(), pt.ncdu(), pt.time()))
        });
        let id = st.map(Stat::id);
        let node = DirNode {
            parent: Some(Arc::clone(parent)),
            name: name.to_owned(),
            depth: AtomicUsize::new(parent.depth() + 1),
            anchor: None,
            id: OnceLock::new(),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(0),
            tally,
            small_leaf: st.is_some_and(small_leaf),
            ignore: OnceLock::new(),
            place,
            inode_sorted: AtomicU64::new(NOT_READ),
            moved: OnceLock::new(),
        };
        if let Some(id) = id {
            let _ = node.id.set(id);
        }
        Arc::new(node)
    }

    /// Whether the stat made before it was opened said [`small_leaf`]
    /// (false where none was made).
    pub fn small_leaf(&self) -> bool {
        self.small_leaf
    }

    /// Its identity, once a stat of it is recorded.
    pub fn id(&self) -> Option<FileId> {
        self.id.get().copied()
    }

    /// Records this directory's identity (a later stat of it, through its
    /// descriptor); the first one recorded stays.
    pub fn set_id(&self, id: FileId) {
        let _ = self.id.set(id);
    }

    /// The nearest of this directory and its ancestors whose identity is
    /// `id`: a directory found again below itself is a loop (a bind mount
    /// of an ancestor), as `find` reports it.
    pub fn same_as(&self, id: FileId) -> Option<&DirNode> {
        let mut cur = Some(self);
        while let Some(node) = cur {
            if node.id.get() == Some(&id) {
                return Some(node);
            }
            // The chain walked: nothing moves before the walk is over.
            cur = node.parent.as_deref();
        }
        None
    }

    /// The parent, if this is not the root.
    pub fn parent(&self) -> Option<&Arc<DirNode>> {
        match self.moved.get() {
            Some(moved) => Some(&moved.parent),
            None => self.parent.as_ref(),
        }
    }

    /// Levels below the root (the root is 0).
    pub fn depth(&self) -> usize {
        self.depth.load(Ordering::Relaxed)
    }

    /// The name in the parent, or the root's path.
    pub fn name(&self) -> &CStr {
        self.moved.get().map_or(&self.name, |moved| &moved.name)
    }

    /// Under -L, once the walk is over: this directory, read as a
    /// subdirectory of its parent, is counted as `name` at `place` of
    /// `parent` instead, where du walks it. False (nothing done) when
    /// `parent` is this directory or below it, or it moved already. The
    /// depths below it are then stale: see [`set_depth`](Self::set_depth).
    pub fn move_to(&self, parent: &Arc<DirNode>, name: &CStr, place: ListingPlace) -> bool {
        let below = std::iter::successors(Some(&**parent), |d| d.parent().map(|p| &**p))
            .any(|d| std::ptr::eq(d, self));
        let moved = Moved {
            parent: Arc::clone(parent),
            name: name.to_owned(),
            place,
        };
        !below && self.parent.is_some() && self.moved.set(Box::new(moved)).is_ok()
    }

    /// Counts its depth again from its chain of parents, after a move.
    pub fn set_depth(&self) {
        let depth = std::iter::successors(self.parent(), |d| d.parent()).count();
        self.depth.store(depth, Ordering::Relaxed);
    }

    /// Its subtree's totals, when a breakdown was asked for.
    pub fn tally(&self) -> Option<&Tally> {
        self.tally.as_deref()
    }

    /// Where its entry came in its parent's listing.
    pub fn place(&self) -> ListingPlace {
        self.moved.get().map_or(self.place, |moved| moved.place)
    }

    /// How `du` orders its entries ([`ListingRule::AS_LISTED`] while it is
    /// not read whole).
    pub fn listing_rule(&self) -> ListingRule {
        match self.inode_sorted.load(Ordering::Relaxed) {
            NOT_READ => ListingRule::AS_LISTED,
            n => ListingRule::sorting(n),
        }
    }

    /// Whether it was read whole ([`listing_read`](Self::listing_read)):
    /// [`listing_rule`](Self::listing_rule) is final.
    pub fn read_whole(&self) -> bool {
        self.inode_sorted.load(Ordering::Relaxed) != NOT_READ
    }

    /// It was read whole: records how `du` orders its entries
    /// ([`Shared::listing_rule`](crate::engine::Shared::listing_rule)).
    pub fn listing_read(&self, rule: ListingRule) {
        self.inode_sorted
            .store(rule.sorted_entries(), Ordering::Relaxed);
    }

    /// Its ignore rules, once read ([`crate::ignore_rules`]).
    pub fn ignore_rules(&self) -> &OnceLock<Box<DirRules>> {
        &self.ignore
    }

    /// The path for messages and listings: the root's path and the names
    /// below it.
    pub fn path(&self) -> PathBuf {
        let mut names = Vec::new();
        let mut cur = Some(self);
        while let Some(node) = cur {
            names.push(node.name().to_bytes());
            cur = node.parent().map(|p| &**p);
        }
        let mut bytes = Vec::with_capacity(names.iter().map(|n| n.len() + 1).sum());
        for name in names.iter().rev() {
            push_name(&mut bytes, name);
        }
        PathBuf::from(OsStr::from_bytes(&bytes))
    }
}

impl Drop for DirNode {
    /// Drops the chain of ancestors no one else holds one by one: the
    /// default drop would recurse once per level, and a tree thousands of
    /// levels deep would overflow a worker thread's stack.
    fn drop(&mut self) {
        // A moved directory's other parent: its chain goes the same way.
        let moved = self.moved.take().map(|moved| moved.parent);
        for mut parent in [self.parent.take(), moved] {
            while let Some(node) = parent {
                parent = Arc::into_inner(node).and_then(|mut node| node.parent.take());
            }
        }
    }
}

/// Appends `name` to a path being built, with a `/` unless the path is
/// empty or already ends with one.
pub(crate) fn push_name(path: &mut Vec<u8>, name: &[u8]) {
    if !path.is_empty() && path.last() != Some(&b'/') {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// One entry of a directory being read, its name kept in a shared names
/// buffer with a NUL after it (one allocation per directory, not per entry).
#[derive(Clone, Copy)]
pub(crate) struct Ent {
    pub ino: u64,
    /// Where the name starts in the names buffer.
    start: usize,
    /// The name's length, NUL excluded: kept, so that only a name that is
    /// opened or stat'ed by name is scanned for its NUL again. No limit
    /// below 4 GiB (FUSE allows names of up to 1 024 bytes, ntfs-3g gives
    /// up to 765).
    len: u32,
    /// Its position in the directory's listing ([`ListingPlace`]).
    seq: u32,
    pub d_type: u8,
}

impl Ent {
    /// Appends `name` (which holds no NUL: it comes from a C string) to
    /// `names` and returns the entry at `place` that refers to it.
    pub fn push(names: &mut Vec<u8>, place: ListingPlace, name: &[u8], d_type: u8) -> Ent {
        let ent = Ent {
            ino: place.ino,
            start: names.len(),
            len: u32::try_from(name.len()).expect("a name shorter than 4 GiB"),
            seq: place.seq,
            d_type,
        };
        names.extend_from_slice(name);
        names.push(0);
        ent
    }

    /// Where it came in its directory's listing.
    pub fn place(&self) -> ListingPlace {
        ListingPlace {
            seq: self.seq,
            ino: self.ino,
        }
    }

    /// The entry's name in `names`, with its NUL.
    pub fn name<'n>(&self, names: &'n [u8]) -> &'n CStr {
        CStr::from_bytes_with_nul(&names[self.start..=self.start + self.len as usize])
            .expect("names are stored with one NUL after them")
    }

    /// The entry's name in `names`, without its NUL and without a scan.
    pub fn name_bytes<'n>(&self, names: &'n [u8]) -> &'n [u8] {
        &names[self.start..self.start + self.len as usize]
    }
}

/// Appends the records of one getdents buffer (but "." and "..") to
/// `names`/`ents`, numbered from `*seq` on ([`ListingPlace::next`]), up to a
/// record that does not parse (its error); returns
/// the last record's `d_off` (`None` for an empty buffer). Every plain
/// read of both parallel engines parses here, so they see the same
/// entries.
pub(crate) fn push_entries(
    buf: &[u8],
    names: &mut Vec<u8>,
    ents: &mut Vec<Ent>,
    seq: &mut u32,
) -> io::Result<Option<u64>> {
    let mut offset = None;
    for record in DirentIter::new(buf) {
        let entry = record?;
        offset = Some(entry.offset());
        if entry.is_dot_or_dotdot() {
            continue;
        }
        ents.push(Ent::push(
            names,
            ListingPlace::next(seq, entry.ino()),
            entry.name_bytes(),
            entry.d_type(),
        ));
    }
    Ok(offset)
}

/// The `d_off` a filesystem of type `fs_type` gives the last record of a
/// read only when that read reached the end of the directory, so that the
/// next `getdents64` would return nothing (one system call fewer per
/// directory). ext4 (ext2 and ext3 too, under the ext4 driver) ends a
/// hashed listing at `EXT4_HTREE_EOF_64BIT`, 2^63 - 1, an odd number that no
/// entry's position can be: a hash position is at most
/// (2^31 - 2) * 2^32 + 2^32 - 1 (the major hash is even and never
/// 0xfffffffe), a linear one a multiple of 4, and a 32-bit caller's end
/// (2^31 - 1) is never this one. Elsewhere (tmpfs, XFS, btrfs) the end's
/// position can also be an entry's on some kernel: `None`, the walk reads
/// until a read returns nothing.
pub(crate) fn end_of_listing(fs_type: libc::c_long) -> Option<u64> {
    (fs_type == libc::EXT4_SUPER_MAGIC).then_some(i64::MAX as u64)
}

/// For tests: `path` opened as the root of a walk, with its (device,
/// inode), as a walk opens a root.
#[cfg(test)]
pub(crate) fn test_root(path: &std::path::Path) -> Arc<DirNode> {
    use crate::sys;
    use std::os::fd::AsFd;
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    let fd = sys::open_dir(None, &c).unwrap();
    let id = sys::fstatx(fd.as_fd(), sys::STATX_MASK).unwrap().id();
    DirNode::root(c, fd, id, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reads of a directory of `n` names with a `buf_len` buffer:
    /// (entries, last `d_off`) per read, up to the read that returned
    /// nothing, whose absence `getdents64` itself reports.
    fn reads(dir: &std::path::Path, n: usize, buf_len: usize) -> Vec<(usize, Option<u64>)> {
        use std::os::fd::AsFd;
        for i in 0..n {
            std::fs::write(dir.join(format!("entry-{i}")), b"").unwrap();
        }
        let c = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let fd = crate::sys::open_dir(None, &c).unwrap();
        let mut buf = vec![0; buf_len];
        let mut out = Vec::new();
        loop {
            let len = io_uring_getdents::syscall::getdents64(fd.as_fd(), &mut buf).unwrap();
            let (mut names, mut ents, mut seq) = (Vec::new(), Vec::new(), 0);
            let last = push_entries(&buf[..len], &mut names, &mut ents, &mut seq).unwrap();
            out.push((ents.len(), last));
            if len == 0 {
                return out;
            }
        }
    }

    /// ext4's end position is the last `d_off` of the read that reached the
    /// end, and of no other: the next `getdents64` returns nothing, for a
    /// directory read in one call and for one read in many (hash order,
    /// whatever the size). On another filesystem the test says so and
    /// checks only that no end position is claimed.
    #[test]
    fn the_end_position_ends_the_listing_and_no_read_before() {
        let tmp = tempfile::tempdir().unwrap();
        let fd = crate::sys::open_dir(
            None,
            &CString::new(tmp.path().as_os_str().as_bytes()).unwrap(),
        )
        .unwrap();
        let fs_type = crate::sys::fs_type(std::os::fd::AsFd::as_fd(&fd)).unwrap();
        let Some(end) = end_of_listing(fs_type) else {
            assert_ne!(fs_type, libc::EXT4_SUPER_MAGIC);
            eprintln!("not ext4 (type {fs_type:#x}): no end position to check");
            return;
        };
        for (n, buf_len) in [
            (0, 4096),
            (1, 4096),
            (40, 4096),
            (3000, 4096),
            (3000, 1 << 20),
        ] {
            let dir = tmp.path().join(format!("d-{n}-{buf_len}"));
            std::fs::create_dir(&dir).unwrap();
            let reads = reads(&dir, n, buf_len);
            let (last_read, before) = reads[..reads.len() - 1].split_last().unwrap();
            assert_eq!(last_read.1, Some(end), "{n} names, {buf_len}: {reads:?}");
            assert!(
                before.iter().all(|r| r.1 != Some(end)),
                "{n} names, {buf_len}: an earlier read ends at the end: {reads:?}"
            );
            let listed: usize = reads.iter().map(|r| r.0).sum();
            assert_eq!(listed, n, "{reads:?}");
            assert_eq!(reads.len() > 2, buf_len == 4096 && n == 3000, "{reads:?}");
        }
    }

    #[test]
    fn dropping_a_very_deep_chain_does_not_overflow_the_stack() {
        let tmp = tempfile::tempdir().unwrap();
        let mut node = test_root(tmp.path());
        for _ in 0..200_000 {
            node = DirNode::child(&node, c"d", ListingPlace::default());
        }
        // A thread with a small stack: a recursive drop would need far more.
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || drop(node))
            .unwrap()
            .join()
            .unwrap();
    }

    /// A directory moved to another name takes its subtree along: paths,
    /// places and, once counted again, depths; the chain it was read by
    /// still drops whole. Below itself it does not move.
    #[test]
    fn a_moved_directory_carries_its_subtree() {
        let tmp = tempfile::tempdir().unwrap();
        let root = test_root(tmp.path());
        let at = |seq| ListingPlace { seq, ino: 0 };
        let a = DirNode::child(&root, c"a", at(0));
        let b = DirNode::child(&a, c"b", at(3));
        let c = DirNode::child(&b, c"c", at(0));
        let d = DirNode::child(&root, c"d", at(1));
        let f = DirNode::child(&d, c"f", at(0));
        assert!(!a.move_to(&c, c"x", at(0)), "below itself");
        assert!(b.move_to(&f, c"e", at(5)));
        assert!(!b.move_to(&a, c"b", at(3)), "moved already");
        assert_eq!(c.path(), tmp.path().join("d/f/e/c"));
        assert_eq!((b.name(), b.place()), (c"e", at(5)));
        assert_eq!(c.depth(), 3, "not counted again yet");
        b.set_depth();
        c.set_depth();
        assert_eq!((b.depth(), c.depth()), (3, 4));
        assert!(std::ptr::eq(&**b.parent().unwrap(), &*f));
        drop((root, a, d, f, b));
        assert_eq!(c.path(), tmp.path().join("d/f/e/c"));
    }

    /// Names longer than `NAME_MAX` (FUSE allows 1 024 bytes) come back
    /// whole.
    #[test]
    fn names_of_any_length_are_stored_whole() {
        let mut names = Vec::new();
        let lengths = [1, 255, 256, 300, 1024, 4000];
        let ents: Vec<(Ent, Vec<u8>)> = lengths
            .iter()
            .map(|&len| {
                let name = vec![b'n'; len];
                (
                    Ent::push(
                        &mut names,
                        ListingPlace::next(&mut 0, 7),
                        &name,
                        libc::DT_REG,
                    ),
                    name,
                )
            })
            .collect();
        for (ent, name) in &ents {
            assert_eq!(ent.name(&names).to_bytes(), &name[..]);
            assert_eq!(ent.name_bytes(&names), &name[..]);
        }
    }
}
