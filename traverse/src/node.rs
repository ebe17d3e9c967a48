//! Directories waiting to be read: the tree of [`DirNode`]s (names,
//! depths, identities for loop detection, a breakdown's tally), and the
//! entries of a directory being read ([`Ent`]), parsed from the records
//! of a read ([`push_entries`]). How a node gets its
//! descriptor, within a budget of them, is in [`open`].

mod open;

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

/// A directory of the tree: queued, being read, or a parent of queued ones.
#[derive(Debug)]
pub(crate) struct DirNode {
    parent: Option<Arc<DirNode>>,
    /// The name in the parent, or the root's path.
    name: CString,
    /// Levels below the root (the root is 0).
    depth: usize,
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
}

/// Where an entry came in its directory's listing: its position in the
/// order `getdents64` gave (`.` and `..` left out), and its `d_ino`. What
/// `du`'s output order is made of ([`crate::ListingOrder`],
/// [`crate::ListingRule`]); a listed entry has it
/// ([`Entry::listing_place`](crate::Entry::listing_place)).
///
/// ```
/// use traverse::{Event, WalkBuilder};
///
/// let dir = tempfile::tempdir()?;
/// for name in ["a", "b", "c"] {
///     std::fs::write(dir.path().join(name), b"")?;
/// }
/// let mut seqs = Vec::new();
/// WalkBuilder::new().list(true).build().run_with(dir.path(), |event| {
///     if let Event::Entry(e) = event {
///         seqs.extend(e.listing_place().map(|p| p.seq()));
///     }
/// });
/// seqs.sort();
/// assert_eq!(seqs, [0, 1, 2]);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListingPlace {
    pub(crate) seq: u32,
    pub(crate) ino: u64,
}

impl ListingPlace {
    /// Its position in the listing: 0 for the first entry `getdents64`
    /// gave, not counting `.` and `..`.
    pub fn seq(self) -> u32 {
        self.seq
    }

    /// The entry's `d_ino`.
    pub fn ino(self) -> u64 {
        self.ino
    }

    /// The place of the next entry read, whose `d_ino` is `ino`: the
    /// `*seq`th of its listing (`*seq` counts it).
    pub(crate) fn next(seq: &mut u32, ino: u64) -> ListingPlace {
        let place = ListingPlace { seq: *seq, ino };
        *seq = seq.wrapping_add(1);
        place
    }
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
            depth: 0,
            anchor: Some(Arc::new(fd)),
            id: OnceLock::from(id),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(0),
            tally: tally.map(Box::new),
            small_leaf: false,
            ignore: OnceLock::new(),
            place: ListingPlace::default(),
            inode_sorted: AtomicU64::new(NOT_READ),
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
            depth: parent.depth + 1,
            anchor: None,
            id: OnceLock::new(),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(0),
            tally,
            small_leaf: st.is_some_and(small_leaf),
            ignore: OnceLock::new(),
            place,
            inode_sorted: AtomicU64::new(NOT_READ),
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
            cur = node.parent.as_deref();
        }
        None
    }

    /// The parent, if this is not the root.
    pub fn parent(&self) -> Option<&Arc<DirNode>> {
        self.parent.as_ref()
    }

    /// Levels below the root (the root is 0).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The name in the parent, or the root's path.
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// Its subtree's totals, when a breakdown was asked for.
    pub fn tally(&self) -> Option<&Tally> {
        self.tally.as_deref()
    }

    /// Where its entry came in its parent's listing.
    pub fn place(&self) -> ListingPlace {
        self.place
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
            names.push(node.name.to_bytes());
            cur = node.parent.as_deref();
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
        let mut parent = self.parent.take();
        while let Some(node) = parent {
            parent = Arc::into_inner(node).and_then(|mut node| node.parent.take());
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
