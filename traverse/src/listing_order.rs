//! The order in which GNU du prints a tree, which is fts's: a directory
//! after everything below it, and the entries of a directory in the order
//! `getdents64` listed them, except that fts reads a directory in
//! batches of 100 000 entries and sorts a batch of more than 10 000 by
//! inode number (on the filesystems where that helps: not tmpfs, NFS nor
//! CIFS). The walk records each entry's place in its listing
//! ([`crate::node::Place`]) and each large directory's rule
//! ([`sorts_by_inode`]); [`ListingOrder`] compares two entries by them.

use std::cmp::Ordering;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::node::{DirNode, Place};

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
pub(crate) fn sorts_by_inode(entries: u64, fd: BorrowedFd<'_>) -> bool {
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
    file: Option<Place>,
}

/// One step of a chain of entries: a directory, or a file in one.
#[derive(Clone, Copy)]
enum Step<'a> {
    Dir(&'a DirNode),
    File(&'a DirNode, Place),
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

    fn place(self) -> Place {
        match self {
            Step::Dir(d) => d.place(),
            Step::File(_, place) => place,
        }
    }
}

/// How fts orders two entries of a directory whose
/// [`DirNode::inode_sorted`] is `entries`: batch by batch, each in inode
/// order if it has more than 10 000 entries where fts sorts.
fn siblings(entries: u64, a: Place, b: Place) -> Ordering {
    let (batch_a, batch_b) = (u64::from(a.seq) / BATCH, u64::from(b.seq) / BATCH);
    let sorted = entries.saturating_sub(batch_a * BATCH).min(BATCH) > INODE_SORT_ABOVE;
    if batch_a != batch_b || !sorted {
        return (batch_a, a.seq).cmp(&(batch_b, b.seq));
    }
    (a.ino, a.seq).cmp(&(b.ino, b.seq))
}

impl ListingOrder {
    pub(crate) fn dir(dir: &Arc<DirNode>) -> ListingOrder {
        ListingOrder {
            dir: Arc::clone(dir),
            file: None,
        }
    }

    pub(crate) fn file(dir: &Arc<DirNode>, place: Place) -> ListingOrder {
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

impl Ord for ListingOrder {
    /// Climbs both chains to their common directory and compares the two
    /// entries of it they go through; one below the other comes first.
    fn cmp(&self, other: &ListingOrder) -> Ordering {
        let (a, b) = (self.step(), other.step());
        let (mut x, mut y) = (a, b);
        while x.depth() > y.depth() {
            x = x.up().expect("a deeper entry has a parent");
        }
        while y.depth() > x.depth() {
            y = y.up().expect("a deeper entry has a parent");
        }
        if x.same(y) {
            return b.depth().cmp(&a.depth());
        }
        loop {
            match (x.up(), y.up()) {
                (Some(Step::Dir(p)), Some(q)) if q.same(Step::Dir(p)) => {
                    return siblings(p.inode_sorted(), x.place(), y.place());
                }
                (Some(px), Some(py)) => (x, y) = (px, py),
                // Two roots: not one walk's; any fixed answer will do.
                _ => return Ordering::Equal,
            }
        }
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

    fn at(seq: u32, ino: u64) -> Place {
        Place { seq, ino }
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
