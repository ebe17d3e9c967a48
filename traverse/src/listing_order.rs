//! The order in which GNU du prints a tree, which is fts's: a directory
//! after everything below it, and the entries of a directory in the order
//! `getdents64` listed them, except that fts reads a directory in
//! batches of 100 000 entries and sorts a batch of more than 10 000 by
//! inode number (on the filesystems where that helps: not tmpfs, NFS nor
//! CIFS). The walk records each entry's place in its listing
//! ([`crate::node::ListingPlace`]) and each large directory's rule
//! ([`ListingRule`]); [`ListingOrder`] compares two entries by them.

use std::cmp::Ordering;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::node::{DirNode, ListingPlace};

/// fts sorts a batch of more than this many entries by inode number
/// (gnulib's `_FTS_INODE_SORT_DIR_ENTRIES_THRESHOLD`).
const INODE_SORT_ABOVE: u64 = 10_000;

/// fts reads a directory this many entries at a time
/// (`FTS_MAX_READDIR_ENTRIES`), and sorts each batch on its own.
const BATCH: u64 = 100_000;

/// Filesystems on which fts never sorts (gnulib's
/// `dirent_inode_sort_may_be_useful`): tmpfs, NFS, CIFS.
const UNSORTED_FS: [libc::c_long; 3] = [0x0102_1994, 0x6969, 0xFF53_4D42];

/// Whether `du` sorts some of the `entries` entries of the directory open
/// as `fd` by inode number (its first batch at least).
fn sorts_by_inode(entries: u64, fd: BorrowedFd<'_>) -> bool {
    entries > INODE_SORT_ABOVE && crate::sys::fs_type(fd).is_ok_and(|t| !UNSORTED_FS.contains(&t))
}

/// Where a directory or file comes in `du`'s output order, from
/// [`DirTotals::listing_order`](crate::DirTotals::listing_order) or
/// [`FileTotals::listing_order`](crate::FileTotals::listing_order): ordered
/// as GNU du prints the walk's lines (entries of one root only).
///
/// # Example
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use traverse::{DirTotals, DirVisitor, Ignore, ListingOrder, WalkBuilder};
///
/// #[derive(Default)]
/// struct Lines(Mutex<Vec<(ListingOrder, std::path::PathBuf)>>);
/// impl DirVisitor for Lines {
///     fn dir(&self, dir: &DirTotals<'_>) {
///         self.0.lock().unwrap().push((dir.listing_order(), dir.path()));
///     }
/// }
///
/// let tree = tempfile::tempdir()?;
/// std::fs::create_dir_all(tree.path().join("a/b"))?;
/// let lines = Arc::new(Lines::default());
/// WalkBuilder::new().build().run_dirs(tree.path(), &Ignore, lines.clone());
/// let mut lines = std::mem::take(&mut *lines.0.lock().unwrap());
/// lines.sort_by(|x, y| x.0.cmp(&y.0));
/// let paths: Vec<_> = lines.into_iter().map(|(_, path)| path).collect();
/// assert_eq!(paths, [tree.path().join("a/b"), tree.path().join("a"), tree.path().into()]);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ListingOrder {
    dir: Arc<DirNode>,
    /// For a file: its place in `dir`; for a directory, `None` (it is `dir`).
    file: Option<ListingPlace>,
}

/// One step of a chain of entries: a directory, or a file in one.
#[derive(Clone, Copy)]
enum Step<'a> {
    Dir(&'a DirNode),
    File(&'a DirNode, ListingPlace),
}

impl<'a> Step<'a> {
    fn depth(self) -> usize {
        match self {
            Step::Dir(d) => d.depth(),
            Step::File(d, _) => d.depth() + 1,
        }
    }

    /// The directory it is in (`None` for the root).
    fn up(self) -> Option<Step<'a>> {
        match self {
            Step::Dir(d) => d.parent().map(|p| Step::Dir(p)),
            Step::File(d, _) => Some(Step::Dir(d)),
        }
    }

    fn same(self, other: Step<'_>) -> bool {
        match (self, other) {
            (Step::Dir(a), Step::Dir(b)) => std::ptr::eq(a, b),
            (Step::File(a, x), Step::File(b, y)) => std::ptr::eq(a, b) && x == y,
            _ => false,
        }
    }

    fn place(self) -> ListingPlace {
        match self {
            Step::Dir(d) => d.place(),
            Step::File(_, place) => place,
        }
    }
}

/// How GNU du orders the entries of one directory: as `getdents64` listed
/// them, except that fts reads a directory 100 000 entries at a time and
/// sorts a batch of more than 10 000 by inode number where that helps
/// (not on tmpfs, NFS nor CIFS). Together with each entry's
/// [`ListingPlace`] it gives a key per entry, so that a program that keeps
/// entries apart from the walk (sent between processes, say) can still
/// put them in du's order: [`key`](Self::key) per level of a path,
/// compared level by level from the root.
///
/// ```
/// use traverse::{Event, ListingRule, WalkBuilder};
///
/// let dir = tempfile::tempdir()?;
/// for name in ["x", "y", "z"] {
///     std::fs::write(dir.path().join(name), b"")?;
/// }
/// let mut keyed = Vec::new();
/// WalkBuilder::new().list(true).min_depth(1).build().run_with(dir.path(), |event| {
///     if let Event::Entry(e) = event {
///         let key = ListingRule::AS_LISTED.key(e.listing_place().unwrap());
///         keyed.push((key, e.path().to_owned()));
///     }
/// });
/// keyed.sort();
/// // As getdents64 lists the directory.
/// let listed: Vec<_> = std::fs::read_dir(dir.path())?.map(|e| e.unwrap().path()).collect();
/// assert_eq!(keyed.into_iter().map(|(_, p)| p).collect::<Vec<_>>(), listed);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListingRule {
    /// The directory's entry count when du sorts some of them by inode;
    /// 0 when it takes them as listed.
    sorted_entries: u64,
}

impl ListingRule {
    /// Entries as listed: a directory of at most 10 000 entries, or one on
    /// tmpfs, NFS or CIFS.
    pub const AS_LISTED: ListingRule = ListingRule { sorted_entries: 0 };

    /// The rule of the directory open as `dir`, which lists `entries`
    /// entries (`.` and `..` left out). Only a directory of more than
    /// 10 000 entries costs a system call (`fstatfs`).
    pub fn of(entries: u64, dir: BorrowedFd<'_>) -> ListingRule {
        if sorts_by_inode(entries, dir) {
            ListingRule::sorting(entries)
        } else {
            ListingRule::AS_LISTED
        }
    }

    /// The rule of a directory of `entries` entries in a walk that follows
    /// links (`du -L`): GNU fts walks them logically, with no descriptor
    /// for its working directory, and then asks no filesystem its type,
    /// so it sorts a batch of more than 10 000 by inode on every one, tmpfs
    /// included.
    ///
    /// ```
    /// use traverse::ListingRule;
    ///
    /// assert_eq!(ListingRule::logical(10_000), ListingRule::AS_LISTED);
    /// assert_ne!(ListingRule::logical(10_001), ListingRule::AS_LISTED);
    /// ```
    pub fn logical(entries: u64) -> ListingRule {
        if entries > INODE_SORT_ABOVE {
            ListingRule::sorting(entries)
        } else {
            ListingRule::AS_LISTED
        }
    }

    /// The rule of a directory of `sorted_entries` entries that `du` sorts
    /// by inode (0: as listed), as [`sorted_entries`](Self::sorted_entries)
    /// gave it.
    pub(crate) fn sorting(sorted_entries: u64) -> ListingRule {
        ListingRule { sorted_entries }
    }

    /// The directory's entry count if `du` sorts some of them by inode,
    /// else 0.
    pub(crate) fn sorted_entries(self) -> u64 {
        self.sorted_entries
    }

    /// The rule of the directory at `dir`, as [`of`](Self::of), opening it
    /// only for more than 10 000 entries (the only case that asks its
    /// filesystem): for a program that has the path, not a descriptor.
    pub fn of_path(entries: u64, dir: &std::path::Path) -> std::io::Result<ListingRule> {
        if entries <= INODE_SORT_ABOVE {
            return Ok(ListingRule::AS_LISTED);
        }
        let dir = std::fs::File::open(dir)?;
        Ok(ListingRule::of(entries, std::os::fd::AsFd::as_fd(&dir)))
    }

    /// The key of the entry at `place` among its siblings: du takes a
    /// directory's entries in the order of their keys (batch, then inode
    /// number in a sorted batch, then place in the listing).
    pub fn key(self, place: ListingPlace) -> u128 {
        let batch = u64::from(place.seq) / BATCH;
        let in_batch = self.sorted_entries.saturating_sub(batch * BATCH).min(BATCH);
        let ino = if in_batch > INODE_SORT_ABOVE {
            place.ino
        } else {
            0
        };
        (u128::from(batch) << 96) | (u128::from(ino) << 32) | u128::from(place.seq)
    }
}

impl ListingOrder {
    pub(crate) fn dir(dir: &Arc<DirNode>) -> ListingOrder {
        ListingOrder {
            dir: Arc::clone(dir),
            file: None,
        }
    }

    pub(crate) fn file(dir: &Arc<DirNode>, place: ListingPlace) -> ListingOrder {
        ListingOrder {
            dir: Arc::clone(dir),
            file: Some(place),
        }
    }

    fn step(&self) -> Step<'_> {
        match self.file {
            Some(place) => Step::File(&self.dir, place),
            None => Step::Dir(&self.dir),
        }
    }
}

impl ListingOrder {
    /// How `self` and `other` compare, and whether that is final: it is
    /// not while the directory where their paths part is still being read
    /// (it may turn out to have more than 10 000 entries, which du sorts).
    pub(crate) fn cmp_known(&self, other: &ListingOrder) -> (Ordering, bool) {
        let (a, b) = (self.step(), other.step());
        let (mut x, mut y) = (a, b);
        while x.depth() > y.depth() {
            x = x.up().expect("a deeper entry has a parent");
        }
        while y.depth() > x.depth() {
            y = y.up().expect("a deeper entry has a parent");
        }
        if x.same(y) {
            return (b.depth().cmp(&a.depth()), true);
        }
        loop {
            match (x.up(), y.up()) {
                (Some(Step::Dir(p)), Some(q)) if q.same(Step::Dir(p)) => {
                    let rule = p.listing_rule();
                    let order = rule.key(x.place()).cmp(&rule.key(y.place()));
                    return (order, p.read_whole());
                }
                (Some(px), Some(py)) => (x, y) = (px, py),
                // Two roots: not one walk's; any fixed answer will do.
                _ => return (Ordering::Equal, true),
            }
        }
    }
}

impl Ord for ListingOrder {
    /// Climbs both chains to their common directory and compares the two
    /// entries of it they go through; one below the other comes first.
    fn cmp(&self, other: &ListingOrder) -> Ordering {
        self.cmp_known(other).0
    }
}

impl PartialOrd for ListingOrder {
    fn partial_cmp(&self, other: &ListingOrder) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for ListingOrder {
    fn eq(&self, other: &ListingOrder) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ListingOrder {}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seq: u32, ino: u64) -> ListingPlace {
        ListingPlace { seq, ino }
    }

    /// How du orders two entries of a directory of `entries` entries that
    /// it sorts by inode (0: as listed).
    fn siblings(entries: u64, a: ListingPlace, b: ListingPlace) -> Ordering {
        let rule = ListingRule::sorting(entries);
        rule.key(a).cmp(&rule.key(b))
    }

    /// Two files of subdirectories of a directory still being read compare
    /// as listed, not for good; once it is read whole (20 000 entries),
    /// for good, by the rule its filesystem gives (by inode where du sorts).
    #[test]
    fn a_comparison_is_final_once_the_common_directory_is_read() {
        use std::os::fd::AsFd;
        let tmp = tempfile::tempdir().unwrap();
        let root = crate::node::test_root(tmp.path());
        let a = DirNode::child(&root, c"a", at(1, 90));
        let b = DirNode::child(&root, c"b", at(2, 10));
        let (fa, fb) = (
            ListingOrder::file(&a, at(0, 5)),
            ListingOrder::file(&b, at(0, 6)),
        );
        assert_eq!(fa.cmp_known(&fb), (Ordering::Less, false));
        let fd = std::fs::File::open(tmp.path()).unwrap();
        let rule = ListingRule::of(20_000, fd.as_fd());
        root.listing_read(rule);
        let want = rule.key(at(1, 90)).cmp(&rule.key(at(2, 10)));
        assert_eq!(fa.cmp_known(&fb), (want, true));
        // One below the other: final at once.
        let below = ListingOrder::file(&DirNode::child(&a, c"c", at(0, 1)), at(0, 2));
        assert!(below.cmp_known(&ListingOrder::dir(&a)).1);
    }

    /// The batches of a 100 050-entry directory: the first (100 000) by
    /// inode, the last (50) as listed; a small directory as listed.
    #[test]
    fn batches_of_more_than_10000_entries_go_by_inode() {
        let sorted = 100_050;
        assert_eq!(siblings(sorted, at(5, 90), at(7, 10)), Ordering::Greater);
        assert_eq!(
            siblings(sorted, at(99_999, 1), at(100_000, 0)),
            Ordering::Less
        );
        assert_eq!(
            siblings(sorted, at(100_001, 5), at(100_002, 1)),
            Ordering::Less
        );
        assert_eq!(siblings(0, at(5, 90), at(7, 10)), Ordering::Less);
        // Two names of one inode: as listed.
        assert_eq!(siblings(sorted, at(3, 10), at(2, 10)), Ordering::Greater);
        // A last batch of more than 10 000 is sorted too.
        assert_eq!(
            siblings(210_001, at(200_001, 9), at(200_002, 3)),
            Ordering::Greater
        );
    }
}
