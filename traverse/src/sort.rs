//! Sorted listings ([`WalkBuilder::sort_by`](crate::WalkBuilder::sort_by)):
//! a directory's entries are held until the directory is read whole (every
//! part of it, by whichever workers), then handed to the visitor of the
//! worker that ended it, sorted and one after another. Only the
//! directories being read are held, never the whole walk.

use std::cmp::Ordering;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use io_uring_getdents::dirent::FileType;
use rustc_hash::FxHashMap;

use crate::node::DirNode;
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
}

/// One walk's sorting: the order, and the held entries of the
/// directories being read, by directory.
#[derive(Debug)]
pub(crate) struct Sorting {
    by: SortBy,
    /// Keyed by the directory's node address: a node lives while it is
    /// read (its workers hold it), and a key is removed when it ends.
    pending: Mutex<FxHashMap<usize, Vec<Held>>>,
}

/// One worker's held entries of the directory it is in, handed to the
/// walk's [`Sorting`] when it leaves the directory (one lock a visit,
/// not one an entry).
#[derive(Debug, Default)]
pub(crate) struct Holding(Vec<Held>);

impl Holding {
    /// Holds the entry at `path`, whose last `name_len` bytes are its name.
    pub fn hold(
        &mut self,
        (path, name_len): (&[u8], usize),
        file_type: FileType,
        depth: usize,
        stat: Option<&Stat>,
    ) {
        self.0.push(Held {
            path: path.into(),
            name_at: path.len() - name_len,
            file_type,
            depth,
            stat: stat.copied(),
        });
    }
}

impl Sorting {
    pub fn new(by: SortBy) -> Sorting {
        Sorting {
            by,
            pending: Mutex::new(FxHashMap::default()),
        }
    }

    /// Adds what the worker held of `dir` to the directory's entries.
    pub fn keep(&self, dir: &Arc<DirNode>, held: &mut Holding) {
        if held.0.is_empty() {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let entries = pending.entry(Arc::as_ptr(dir) as usize).or_default();
        if entries.is_empty() {
            std::mem::swap(entries, &mut held.0);
        } else {
            entries.append(&mut held.0);
        }
    }

    /// `dir` is read whole: its entries go to `visitor`, sorted (a stable
    /// sort: entries the order calls equal stay in the order read).
    pub fn end(&self, dir: &Arc<DirNode>, visitor: &mut dyn Visitor) {
        let held = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.remove(&(Arc::as_ptr(dir) as usize))
        };
        let Some(mut held) = held else {
            return;
        };
        if let SortBy::FileName = self.by {
            held.sort_by(|a, b| a.path[a.name_at..].cmp(&b.path[b.name_at..]));
        }
        let mut entries: Vec<Entry<'_>> = held
            .iter()
            .map(|h| {
                let path = Path::new(OsStr::from_bytes(&h.path));
                Entry::new(path, h.file_type, h.depth).with_stat(h.stat.as_ref())
            })
            .collect();
        if let SortBy::By(cmp) = &self.by {
            entries.sort_by(|a, b| cmp(a, b));
        }
        for entry in &entries {
            visitor.visit_entry(entry);
        }
    }
}
