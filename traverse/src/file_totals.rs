//! What a [`DirVisitor`](crate::DirVisitor) sees of an entry that is not a
//! directory, when it asks for them (`du -a`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use std::sync::Arc;

use crate::listing_order::ListingOrder;
use crate::node::{DirNode, ListingPlace};
use crate::timestamp::Timestamp;
use crate::totals::Totals;

/// An entry that is not a directory (a file, a symlink, a FIFO...), as
/// [`DirVisitor::file`](crate::DirVisitor::file) sees it: its path, its
/// depth and its totals.
///
/// # Example
///
/// ```
/// use traverse::{DirTotals, DirVisitor, FileTotals};
/// struct All;
/// impl DirVisitor for All {
///     fn dir(&self, dir: &DirTotals<'_>) {
///         println!("{}\t{}", dir.totals().bytes, dir.path().display());
///     }
///     fn files_to(&self) -> Option<usize> {
///         Some(usize::MAX)
///     }
///     fn file(&self, file: &FileTotals<'_>) {
///         println!("{}\t{}", file.totals().bytes, file.path().display());
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct FileTotals<'a> {
    path: &'a [u8],
    depth: usize,
    totals: Totals,
    /// Its directory and its place in it.
    dir: &'a Arc<DirNode>,
    place: ListingPlace,
}

impl<'a> FileTotals<'a> {
    /// The entry `path` of `dir`, at `place` in its listing, of type
    /// `mode` (`st_mode`), sizes `size` and `blocks` (`st_size`,
    /// `st_blocks`) and the time the walk keeps, if it keeps one.
    pub(crate) fn new(
        path: &'a [u8],
        (dir, place): (&'a Arc<DirNode>, ListingPlace),
        mode: u32,
        (size, blocks): (u64, u64),
        time: Option<Timestamp>,
    ) -> FileTotals<'a> {
        let mut totals = Totals::default();
        totals.add_kind(mode);
        totals.add_sizes(size, blocks);
        totals.add_time(time);
        FileTotals {
            path,
            depth: dir.depth() + 1,
            totals,
            dir,
            place,
        }
    }

    /// Where it comes in `du`'s output order, among the lines of its walk.
    pub fn listing_order(&self) -> ListingOrder {
        ListingOrder::file(self.dir, self.place)
    }

    /// The entry's path: the root's path and the names below it.
    pub fn path(&self) -> &'a Path {
        Path::new(OsStr::from_bytes(self.path))
    }

    /// Levels below the root (an entry of the root is at 1).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The entry alone: one of `files`, `symlinks` or `other` counts it,
    /// `bytes` and `disk_bytes` are its sizes (`du -ab`, `du -aB1`),
    /// `latest` its time when the walk keeps one.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }
}
