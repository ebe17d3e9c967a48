//! Per-directory totals out of the same parallel walk.
//!
//! With a breakdown asked for, every [`DirNode`] carries a
//! [`Tally`](crate::tally::Tally): the
//! sums counted so far in its subtree and how many parts of it are not
//! done yet (its own reading, which the `threads` and `uring` engines may
//! share out in chunks, each subdirectory not final yet, and each name of
//! a hard-linked inode waiting for its attribution). The part that brings
//! that count to zero makes the sums final: it hands the directory to the
//! [`DirVisitor`], adds its sums to its parent's and counts the parent's
//! part done, up to the root. So a directory's totals are known as soon as
//! its last subdirectory is done, and nothing of it is kept afterwards.
//!
//! A hard-linked inode (not a directory) whose names sit in several
//! directories is counted once, in the directory of the name GNU du meets
//! first ([`ListingOrder`]): the same on every run, whatever order the
//! workers met the names in. Those inodes are settled at the end of the
//! walk, which holds back the directories that hold their names (and so
//! their ancestors) until then.

mod names;
mod place;

use std::cell::RefCell;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::dirpath::DirHandle;
use crate::file_totals::FileTotals;
use crate::links::SHARDS;
use crate::listing_order::ListingOrder;
use crate::ncdu_tree::NcduDir;
use crate::node::DirNode;
use crate::sys::FileId;
use crate::timestamp::Timestamp;
use crate::totals::Totals;
use names::{DirNames, LinkNames};

/// Receives each directory of a walk once its whole subtree is counted:
/// children before their parent, the root last. Called from the worker
/// threads, so it takes `&self`.
///
/// # Example
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use traverse::{DirTotals, DirVisitor, Ignore, WalkBuilder};
///
/// #[derive(Default)]
/// struct Depth1(Mutex<Vec<(std::path::PathBuf, u128)>>);
/// impl DirVisitor for Depth1 {
///     fn dir(&self, dir: &DirTotals<'_>) {
///         if dir.depth() <= 1 {
///             self.0.lock().unwrap().push((dir.path(), dir.totals().bytes));
///         }
///     }
/// }
///
/// let tree = tempfile::tempdir()?;
/// std::fs::create_dir(tree.path().join("sub"))?;
/// std::fs::write(tree.path().join("sub/f"), b"12345")?;
/// let lines = Arc::new(Depth1::default());
/// let walk = WalkBuilder::new().build();
/// let summary = walk.run_dirs(tree.path(), &Ignore, lines.clone());
/// let lines = lines.0.lock().unwrap();
/// assert_eq!(lines.len(), 2);
/// assert_eq!(lines[1].0, tree.path());
/// assert_eq!(lines[1].1, summary.totals.bytes);
/// # Ok::<_, std::io::Error>(())
/// ```
pub trait DirVisitor: Send + Sync {
    /// A directory whose subtree is fully counted.
    fn dir(&self, dir: &DirTotals<'_>);

    /// Whether to build the tree of every entry in ncdu's export format
    /// (then [`DirTotals::write_ncdu`] works on the root, and
    /// [`DirTotals::take_tree`] on every directory). Memory grows with the
    /// tree.
    fn ncdu(&self) -> bool {
        false
    }

    /// The deepest level (the root's entries are at 1) down to which each
    /// entry that is not a directory goes to [`file`](Self::file), as
    /// `du -a` prints them; `None` (the default): none does.
    fn files_to(&self) -> Option<usize> {
        None
    }

    /// An entry that is not a directory, no deeper than
    /// [`files_to`](Self::files_to), with its sizes: before its directory.
    /// A hard-linked inode comes once, under the name GNU du meets first
    /// ([`ListingOrder`]; where the breakdown counts it), at the end of the walk;
    /// with `count_links`, under each name.
    fn file(&self, file: &FileTotals<'_>) {
        let _ = file;
    }
}

/// One directory and the totals of its whole subtree, as a
/// [`DirVisitor`] sees it.
///
/// # Example
///
/// ```
/// use traverse::{DirTotals, DirVisitor};
/// struct Print;
/// impl DirVisitor for Print {
///     fn dir(&self, dir: &DirTotals<'_>) {
///         println!("{}\t{}", dir.totals().bytes, dir.path().display());
///     }
/// }
/// ```
pub struct DirTotals<'a> {
    node: &'a Arc<DirNode>,
    totals: &'a Totals,
    /// The latest time of the directory and its entries that are not
    /// directories.
    latest_here: Option<Timestamp>,
    /// Names of hard-linked inodes in the subtree beyond the one counted.
    more_names: u64,
    /// The directory's tree, until [`take_tree`](Self::take_tree) takes it
    /// (otherwise it goes into its parent's).
    tree: RefCell<Option<NcduDir>>,
}

impl DirTotals<'_> {
    /// The directory's path: the root's path and the names below it (built
    /// on each call, from the chain of parents).
    pub fn path(&self) -> PathBuf {
        self.node.path()
    }

    /// Levels below the root (the root is 0).
    pub fn depth(&self) -> usize {
        self.node.depth()
    }

    /// The directory, kept for later without building its path (which
    /// takes time in proportion to the depth): see [`DirHandle`].
    pub fn handle(&self) -> DirHandle {
        DirHandle(Arc::clone(self.node))
    }

    /// Where it comes in `du`'s output order, among the lines of its walk.
    pub fn listing_order(&self) -> ListingOrder {
        ListingOrder::dir(self.node)
    }

    /// The totals of the directory and everything below it.
    pub fn totals(&self) -> &Totals {
        self.totals
    }

    /// The latest time (the one [`WalkBuilder::latest_time`](crate::WalkBuilder::latest_time)
    /// chose) of the directory itself and of its entries that are not
    /// directories, its subdirectories left out: what `du -S --time`
    /// prints. The whole subtree's is [`totals`](Self::totals)`().latest`.
    ///
    /// ```
    /// use traverse::{DirTotals, DirVisitor};
    /// struct Here;
    /// impl DirVisitor for Here {
    ///     fn dir(&self, dir: &DirTotals<'_>) {
    ///         assert!(dir.latest_here() <= dir.totals().latest);
    ///     }
    /// }
    /// ```
    pub fn latest_here(&self) -> Option<Timestamp> {
        self.latest_here
    }

    /// Its entries as `du --inodes` counts them: the directory and every
    /// entry below it, a hard-linked inode once (where its size is
    /// counted) rather than once per name as in [`totals`](Self::totals).
    ///
    /// ```
    /// use traverse::{DirTotals, DirVisitor};
    /// struct Inodes;
    /// impl DirVisitor for Inodes {
    ///     fn dir(&self, dir: &DirTotals<'_>) {
    ///         println!("{}\t{}", dir.inodes(), dir.path().display());
    ///     }
    /// }
    /// ```
    pub fn inodes(&self) -> u64 {
        let t = self.totals;
        (t.files + t.dirs + t.symlinks + t.other).saturating_sub(self.more_names)
    }

    /// Writes the directory's tree in ncdu's JSON export format (the
    /// directory's array, without the file header), when the
    /// [`DirVisitor`] asked for it ([`DirVisitor::ncdu`]) and this is the
    /// root; otherwise returns `Ok(false)` and writes nothing.
    pub fn write_ncdu(&self, w: &mut dyn Write) -> io::Result<bool> {
        match &*self.tree.borrow() {
            Some(tree) if self.node.parent().is_none() => tree.write(w).map(|()| true),
            _ => Ok(false),
        }
    }

    /// Takes the directory's tree, whole and with its totals, when the
    /// [`DirVisitor`] asked for trees ([`DirVisitor::ncdu`]); its parent's
    /// tree then goes on without it (an ncdu export of the root would
    /// lack it). Called a second time, or without trees, gives `None`.
    /// Example: [`NcduDir::name`].
    pub fn take_tree(&self) -> Option<NcduDir> {
        self.tree.borrow_mut().take()
    }
}

/// The breakdown of one root's walk: where finished directories go, and
/// the hard-linked inodes waiting for their attribution.
pub(crate) struct Breakdown {
    visitor: Arc<dyn DirVisitor>,
    pub ncdu: bool,
    /// [`DirVisitor::files_to`], asked once.
    pub files_to: Option<usize>,
    /// Split in locks by inode, as [`crate::links`]: every name of a tree
    /// of hard links comes here.
    links: Box<[Mutex<FxHashMap<FileId, LinkNames>>]>,
    /// Under -L, every directory reached, by identity, split the same way.
    dirs: Box<[Mutex<FxHashMap<FileId, DirNames>>]>,
}

impl std::fmt::Debug for Breakdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Breakdown")
            .field("ncdu", &self.ncdu)
            .finish_non_exhaustive()
    }
}

impl Breakdown {
    pub fn new(visitor: Arc<dyn DirVisitor>) -> Breakdown {
        Breakdown {
            ncdu: visitor.ncdu(),
            files_to: visitor.files_to(),
            visitor,
            links: (0..SHARDS).map(|_| Mutex::default()).collect(),
            dirs: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    /// One part of `dir` is done; when it was the last, hands `dir` to the
    /// visitor and counts it done in its parent, and so on up.
    pub fn done(&self, dir: &Arc<DirNode>) {
        let mut cur = dir;
        loop {
            let tally = cur.tally().expect("a breakdown tallies every directory");
            if !tally.part_done() {
                return;
            }
            let (totals, latest_here, more_names, tree) = tally.take_final();
            let finished = DirTotals {
                node: cur,
                totals: &totals,
                latest_here,
                more_names,
                tree: RefCell::new(tree),
            };
            if !tally.is_left_out() {
                self.visitor.dir(&finished);
            }
            let tree = finished.tree.into_inner();
            let Some(parent) = cur.parent() else {
                return;
            };
            let ptally = parent.tally().expect("a breakdown tallies every directory");
            ptally.add_subdir(&totals);
            ptally.add_more_names(more_names);
            if let (Some(mut ptree), Some(tree)) = (ptally.tree(), tree) {
                ptree.dirs.push(tree);
            }
            cur = parent;
        }
    }

    /// Hands `file` to the visitor if it asked for entries that deep.
    pub fn file(&self, file: &FileTotals<'_>) {
        if self.files_to.is_some_and(|max| file.depth() <= max) {
            self.visitor.file(file);
        }
    }
}
