//! Pruning a walk: the entry a [`WalkBuilder::filter_entry`](crate::WalkBuilder::filter_entry)
//! closure decides on, and the closure as the settings keep it.

use std::ffi::OsStr;
use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;

use io_uring_getdents::dirent::FileType;

use crate::node::{push_name, DirNode};

/// An entry below the root, as a [`filter_entry`](crate::WalkBuilder::filter_entry)
/// closure sees it before the walk stats, counts or opens it: its name,
/// its type from the directory entry, its depth. The path is built only
/// when asked for ([`path`](FilterEntry::path)).
///
/// ```
/// use traverse::{FileType, WalkBuilder};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir_all(dir.path().join("src/target"))?;
/// std::fs::write(dir.path().join("src/target/big"), vec![0; 4096])?;
/// std::fs::write(dir.path().join("src/lib.rs"), b"fn f() {}")?;
///
/// // Leave out directories named `target` at any depth.
/// let walk = WalkBuilder::new()
///     .filter_entry(|entry| {
///         !(entry.file_type() == FileType::Directory && entry.name() == "target")
///     })
///     .build();
/// let totals = walk.totals(dir.path()).totals;
/// assert_eq!((totals.dirs, totals.files), (2, 1));
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct FilterEntry<'a> {
    dir: &'a DirNode,
    name: &'a [u8],
    file_type: FileType,
}

impl<'a> FilterEntry<'a> {
    pub(crate) fn new(dir: &'a DirNode, name: &'a [u8], d_type: u8) -> FilterEntry<'a> {
        FilterEntry {
            dir,
            name,
            file_type: FileType::from_d_type(d_type),
        }
    }

    /// The entry's name in its directory.
    pub fn name(&self) -> &'a OsStr {
        OsStr::from_bytes(self.name)
    }

    /// The type the directory entry gives (`d_type`), before any stat:
    /// [`FileType::Unknown`] on filesystems that do not fill it in.
    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// Levels below the root: 1 for the root's entries (the root itself is
    /// never filtered).
    pub fn depth(&self) -> usize {
        self.dir.depth() + 1
    }

    /// The root's path followed by the names below it. Built on each call,
    /// from the directory's chain of names: a filter that needs only the
    /// name or the type does not pay for it.
    pub fn path(&self) -> PathBuf {
        let mut bytes = self.dir.path().into_os_string().into_vec();
        push_name(&mut bytes, self.name);
        PathBuf::from(OsString::from_vec(bytes))
    }
}

impl fmt::Debug for FilterEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilterEntry")
            .field("name", &self.name())
            .field("file_type", &self.file_type)
            .field("depth", &self.depth())
            .finish()
    }
}

/// The closure of [`WalkBuilder::filter_entry`](crate::WalkBuilder::filter_entry),
/// shared by every worker.
#[derive(Clone)]
pub(crate) struct EntryFilter(Arc<dyn Fn(&FilterEntry<'_>) -> bool + Send + Sync>);

impl EntryFilter {
    pub(crate) fn new<F>(f: F) -> EntryFilter
    where
        F: Fn(&FilterEntry<'_>) -> bool + Send + Sync + 'static,
    {
        EntryFilter(Arc::new(f))
    }

    /// Whether `entry` is walked.
    pub(crate) fn keeps(&self, entry: &FilterEntry<'_>) -> bool {
        (self.0)(entry)
    }
}

impl fmt::Debug for EntryFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EntryFilter(..)")
    }
}
