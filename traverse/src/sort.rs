//! A listing's order: each directory's entries sorted
//! ([`WalkBuilder::sort_by`](crate::WalkBuilder::sort_by)), a directory
//! after its contents
//! ([`WalkBuilder::contents_first`](crate::WalkBuilder::contents_first)),
//! or both. Entries are held until their directory is read whole (every
//! part of it, by whichever workers) or, contents first, until its whole
//! subtree is: then handed to the visitor of the worker that ended it,
//! sorted and one after another. Only the directories being read (or
//! whose subtrees are) hold entries, never the whole walk.

use std::cmp::Ordering;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use io_uring_getdents::dirent::FileType;
use rustc_hash::FxHashMap;

use crate::node::{DirNode, ListingPlace};
use crate::sys::Stat;
use crate::visit::{Entry, Visitor};

/// The order of [`WalkBuilder::sort_by`](crate::WalkBuilder::sort_by),
/// shared by every worker.
#[derive(Clone)]
pub(crate) enum SortBy {
    /// By name, bytewise: compared on the names the walk holds, with no
    /// `Path::file_name` parse per comparison.
    FileName,
    By(Arc<Compare>),
}

type Compare = dyn Fn(&Entry<'_>, &Entry<'_>) -> Ordering + Send + Sync;

impl SortBy {
    pub(crate) fn new<F>(cmp: F) -> SortBy
    where
        F: Fn(&Entry<'_>, &Entry<'_>) -> Ordering + Send + Sync + 'static,
    {
        SortBy::By(Arc::new(cmp))
    }
}

impl fmt::Debug for SortBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SortBy(..)")
    }
}

/// A listed entry held until its directory ends.
#[derive(Debug)]
struct Held {
    path: Box<[u8]>,
    /// Where the name starts in `path`.
    name_at: usize,
    file_type: FileType,
    depth: usize,
    stat: Option<Stat>,
    /// A symbolic link the walk followed.
    followed: bool,
    place: Option<ListingPlace>,
}

impl Held {
    /// `entry`, at a path whose last `name_len` bytes are its name.
    fn new(entry: &Entry<'_>, name_len: usize, st: Option<&Stat>) -> Held {
        let path = entry.path().as_os_str().as_bytes();
        Held {
            path: path.into(),
            name_at: path.len() - name_len,
            file_type: entry.file_type(),
            depth: entry.depth(),
            stat: st.copied(),
            followed: entry.link_followed(),
            place: entry.listing_place(),
        }
    }

    fn entry(&self) -> Entry<'_> {
        let path = Path::new(OsStr::from_bytes(&self.path));
        let entry = Entry::new(path, self.file_type, self.depth)
            .followed(self.followed)
            .at(self.place);
        entry.with_stat(self.stat.as_ref())
    }
}

/// What a directory holds while it, or contents first its subtree, is
/// not done.
#[derive(Debug, Default)]
struct Pending {
    held: Vec<Held>,
    /// Contents first: subdirectories read below it whose subtrees are not
    /// done. Their ends may come before the worker that queued them adds
    /// them here, so the count may be below zero for a while; it is
    /// complete once the directory's reading has ended.
    subtrees: isize,
    read: bool,
}

/// One walk's order: the sort, whether contents come first, and the held
/// entries of the directories not done, by directory.
#[derive(Debug)]
pub(crate) struct Order {
    by: Option<SortBy>,
    contents_first: bool,
    /// Keyed by the directory's node address: a node lives while it is
    /// read or, contents first, while its subdirectories' nodes do; a key
    /// is removed when its directory is done.
    pending: Mutex<FxHashMap<usize, Pending>>,
    /// Contents first: the root, listed when everything else is.
    root: Mutex<Option<Held>>,
}

/// One worker's held entries of the directory it is in, and contents
/// first how many subdirectories it queued there, handed to the walk's
/// [`Order`] when it leaves the directory (one lock a visit, not one an
/// entry).
#[derive(Debug, Default)]
pub(crate) struct Holding {
    held: Vec<Held>,
    subtrees: isize,
}

impl Holding {
    /// Holds `entry`, whose path's last `name_len` bytes are its name.
    pub fn hold(&mut self, entry: &Entry<'_>, name_len: usize, st: Option<&Stat>) {
        self.held.push(Held::new(entry, name_len, st));
    }

    /// A subdirectory of the current directory is queued to be read.
    pub fn subtree(&mut self) {
        self.subtrees += 1;
    }
}

impl Order {
    /// The order of a listing, if it has one: none without a sort or
    /// contents first.
    pub fn new(by: Option<SortBy>, contents_first: bool) -> Option<Order> {
        (by.is_some() || contents_first).then(|| Order {
            by,
            contents_first,
            pending: Mutex::default(),
            root: Mutex::default(),
        })
    }

    /// Whether a listed entry is held rather than handed over at once:
    /// every entry of a sorted listing; contents first, a directory the
    /// walk `descends` into.
    pub fn holds(&self, descends: bool) -> bool {
        self.by.is_some() || (self.contents_first && descends)
    }

    /// Whether the walk counts the subdirectories it reads (contents first).
    pub fn contents_first(&self) -> bool {
        self.contents_first
    }

    /// Contents first, the root's entry: held until the walk's end.
    pub fn hold_root(&self, root: &Entry<'_>, st: Option<&Stat>) {
        *crate::sys::lock(&self.root) = Some(Held::new(root, 0, st));
    }

    /// Adds what the worker held of `dir` to the directory's.
    pub fn keep(&self, dir: &Arc<DirNode>, holding: &mut Holding) {
        if holding.held.is_empty() && holding.subtrees == 0 {
            return;
        }
        let mut pending = crate::sys::lock(&self.pending);
        let p = pending.entry(Arc::as_ptr(dir) as usize).or_default();
        if p.held.is_empty() {
            std::mem::swap(&mut p.held, &mut holding.held);
        } else {
            p.held.append(&mut holding.held);
        }
        p.subtrees += std::mem::take(&mut holding.subtrees);
    }

    /// `dir` is read whole: its entries go to `visitor`, sorted, unless
    /// contents first its subtree is not done yet. Contents first, a
    /// directory done counts one subtree done in its parent, up to the
    /// root, whose entry comes last. Handed over under the lock, so that a
    /// directory's entries reach a visitor that forwards them elsewhere
    /// after everything its subtree handed over before.
    pub fn end(&self, dir: &DirNode, visitor: &mut dyn Visitor) {
        let key = |node: &DirNode| node as *const DirNode as usize;
        let mut pending = crate::sys::lock(&self.pending);
        if !self.contents_first {
            // Nothing waits on another directory: handed over unlocked.
            let held = pending.remove(&key(dir));
            drop(pending);
            self.hand_over(held.map(|p| p.held).unwrap_or_default(), visitor);
            return;
        }
        let (mut cur, mut read) = (dir, true);
        loop {
            let p = pending.entry(key(cur)).or_default();
            if read {
                p.read = true;
            } else {
                p.subtrees -= 1;
            }
            if !p.read || p.subtrees != 0 {
                return;
            }
            let held = pending.remove(&key(cur)).map(|p| p.held);
            self.hand_over(held.unwrap_or_default(), visitor);
            match cur.parent() {
                Some(parent) => (cur, read) = (parent, false),
                None => {
                    if let Some(root) = crate::sys::lock(&self.root).take() {
                        visitor.visit_entry(&root.entry());
                    }
                    return;
                }
            }
        }
    }

    /// Hands `held` to `visitor`, sorted (a stable sort: entries the order
    /// calls equal stay in the order read).
    fn hand_over(&self, mut held: Vec<Held>, visitor: &mut dyn Visitor) {
        if let Some(SortBy::FileName) = self.by {
            held.sort_by(|a, b| a.path[a.name_at..].cmp(&b.path[b.name_at..]));
        }
        let mut entries: Vec<Entry<'_>> = held.iter().map(Held::entry).collect();
        if let Some(SortBy::By(cmp)) = &self.by {
            entries.sort_by(|a, b| cmp(a, b));
        }
        for entry in &entries {
            visitor.visit_entry(entry);
        }
    }
}
