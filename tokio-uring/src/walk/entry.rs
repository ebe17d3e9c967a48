//! What the walk yields, and the chain of names its paths are built from.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::fs::{FileType, Metadata};

/// A directory's place in the tree: its name and its parent's. The walk
/// keeps one per directory still in progress, so memory grows with the
/// depth, not with the square of it; a path is built only when asked for.
pub(super) struct DirName {
    parent: Option<Arc<DirName>>,
    /// The root's whole path, or one component.
    name: OsString,
    /// How many directories had been skipped when this one was last found
    /// to be below none of them (0: never looked), so that the look goes
    /// up the chain only as far as the last directory looked at.
    clear: AtomicUsize,
    /// Device and inode, once opened: a directory whose identity is an
    /// ancestor's is a loop (a bind mount of the ancestor into itself).
    id: OnceLock<(u64, u64)>,
}

impl DirName {
    pub(super) fn root(path: &Path) -> Arc<DirName> {
        Arc::new(DirName {
            parent: None,
            name: path.as_os_str().to_os_string(),
            clear: AtomicUsize::new(0),
            id: OnceLock::new(),
        })
    }

    pub(super) fn child(parent: &Arc<DirName>, name: &OsStr) -> Arc<DirName> {
        Arc::new(DirName {
            parent: Some(Arc::clone(parent)),
            name: name.to_os_string(),
            clear: AtomicUsize::new(0),
            id: OnceLock::new(),
        })
    }

    /// Records the directory's device and inode, once opened, and returns
    /// the ancestor that has the same, if any: the walk is in a loop.
    pub(super) fn opened_as(&self, id: (u64, u64)) -> Option<&DirName> {
        let _ = self.id.set(id);
        std::iter::successors(self.parent.as_deref(), |d| d.parent.as_deref())
            .find(|d| d.id.get() == Some(&id))
    }

    pub(super) fn name(&self) -> &OsStr {
        &self.name
    }

    pub(super) fn parent(&self) -> Option<&Arc<DirName>> {
        self.parent.as_ref()
    }

    /// Whether this directory is one of `skipped` (each given by its
    /// parent and name) or below one. `skipped` only grows, and its length
    /// marks the directories found clear, so each is looked at once per
    /// skip rather than once per entry.
    pub(super) fn is_left_out(&self, skipped: &[(Arc<DirName>, OsString)], epoch: usize) -> bool {
        let mut looked: Vec<&DirName> = Vec::new();
        let mut at = Some(self);
        while let Some(dir) = at {
            if dir.clear.load(Ordering::Relaxed) == epoch {
                break;
            }
            if let Some(parent) = &dir.parent {
                let is = |(p, name): &(Arc<DirName>, OsString)| {
                    Arc::ptr_eq(p, parent) && *name == dir.name
                };
                if skipped.iter().any(is) {
                    return true;
                }
            }
            looked.push(dir);
            at = dir.parent.as_deref();
        }
        for dir in looked {
            dir.clear.store(epoch, Ordering::Relaxed);
        }
        false
    }

    /// The root joined with every name down to this directory, then `leaf`.
    pub(super) fn join(&self, leaf: Option<&OsStr>) -> PathBuf {
        let mut names: Vec<&OsStr> = leaf.into_iter().collect();
        let mut at = Some(self);
        while let Some(dir) = at {
            names.push(&dir.name);
            at = dir.parent.as_deref();
        }
        let len = names.iter().map(|n| n.len() + 1).sum();
        let mut path = PathBuf::with_capacity(len);
        for name in names.iter().rev() {
            path.push(name);
        }
        path
    }
}

/// Drops the chain of parents one by one: the default drop recurses once
/// per level and overflows a thread's stack on a deep tree.
impl Drop for DirName {
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(parent) = next {
            next = match Arc::into_inner(parent) {
                Some(mut last_owner) => last_owner.parent.take(),
                None => None,
            };
        }
    }
}

/// An entry's name: a slice of a buffer shared by the entries of one read,
/// so that a walk makes no allocation per entry for it.
#[derive(Clone)]
pub(super) struct Name {
    bytes: Arc<[u8]>,
    start: u32,
    len: u32,
}

impl Name {
    /// A name in a buffer of its own.
    pub(super) fn new(name: &OsStr) -> Name {
        let len = u32::try_from(name.len()).expect("a name shorter than 4 GiB");
        Name {
            bytes: Arc::from(name.as_bytes()),
            start: 0,
            len,
        }
    }

    /// The `len` bytes at `start` of a read's shared buffer.
    pub(super) fn within(bytes: &Arc<[u8]>, start: usize, len: usize) -> Name {
        let fits = |n: usize| u32::try_from(n).expect("a read shorter than 4 GiB");
        Name {
            bytes: Arc::clone(bytes),
            start: fits(start),
            len: fits(len),
        }
    }

    pub(super) fn as_os_str(&self) -> &OsStr {
        let start = self.start as usize;
        OsStr::from_bytes(&self.bytes[start..start + self.len as usize])
    }
}

/// One entry of a walk.
#[derive(Clone)]
pub struct WalkEntry {
    /// The directory holding the entry; `None` for the root.
    pub(super) dir: Option<Arc<DirName>>,
    /// The last component (the whole path for the root).
    pub(super) name: Name,
    /// Built on the first call to [`path`](WalkEntry::path).
    pub(super) path: OnceLock<PathBuf>,
    pub(super) depth: usize,
    pub(super) file_type: FileType,
    pub(super) ino: u64,
    pub(super) metadata: Option<Metadata>,
    /// The path is a symbolic link the walk followed.
    pub(super) link: bool,
}

impl WalkEntry {
    pub(super) fn new(
        dir: Option<Arc<DirName>>,
        name: Name,
        depth: usize,
        file_type: FileType,
        ino: u64,
        metadata: Option<Metadata>,
    ) -> WalkEntry {
        WalkEntry {
            dir,
            name,
            path: OnceLock::new(),
            depth,
            file_type,
            ino,
            metadata,
            link: false,
        }
    }

    /// The root joined with the names down to this entry. Built on the
    /// first call (the walk keeps only a name per directory level), then
    /// kept with the entry.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).max_depth(1).build();
    ///     while let Some(entry) = walk.next().await {
    ///         let entry = entry?;
    ///         assert!(entry.path().starts_with(env!("CARGO_MANIFEST_DIR")));
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn path(&self) -> &Path {
        self.path.get_or_init(|| match &self.dir {
            Some(dir) => dir.join(Some(self.name.as_os_str())),
            None => PathBuf::from(self.name.as_os_str()),
        })
    }

    /// The last component of [`path`](Self::path) (for the root, the
    /// last component of the path it was given, or the whole path if it
    /// has none, as for `/`). Needs no path to be built.
    pub fn file_name(&self) -> &OsStr {
        match self.dir {
            Some(_) => self.name.as_os_str(),
            None => {
                let path = self.name.as_os_str();
                Path::new(path).file_name().unwrap_or(path)
            }
        }
    }

    /// 0 for the root, 1 for its entries, and so on.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The type the directory entry gives (no `statx` needed); where the
    /// file system reports `DT_UNKNOWN`, the walk asks `statx`. Symbolic
    /// links are reported as such, never followed.
    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// The inode number from the directory entry.
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The `statx` result, when the walk was built with
    /// [`WalkBuilder::statx`](super::WalkBuilder::statx).
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// Whether the path is a symbolic link: an entry of type
    /// [`FileType::Symlink`], or one the walk followed
    /// ([`follow_links`](super::WalkBuilder::follow_links), or a root given
    /// as a link), whose [`file_type`](Self::file_type) is its target's
    /// (walkdir's `path_is_symlink`).
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// let tmp = std::env::temp_dir().join(format!("is-link-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(tmp.join("d"))?;
    /// std::os::unix::fs::symlink("d", tmp.join("l"))?;
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(tmp.join("l")).build();
    ///     let root = walk.next().await.unwrap()?;
    ///     assert!(root.path_is_symlink());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// std::fs::remove_dir_all(&tmp)?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn path_is_symlink(&self) -> bool {
        self.link || self.file_type == FileType::Symlink
    }

    /// The entry's metadata now, on demand: `statx` of its
    /// [`path`](Self::path) through io_uring, with `mask` (`fs::STATX_*`
    /// bits), following the link if the walk followed it. For the few
    /// entries that need it, where [`WalkBuilder::statx`] would stat
    /// every entry.
    ///
    /// [`WalkBuilder::statx`]: super::WalkBuilder::statx
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::STATX_SIZE;
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).max_depth(1).build();
    ///     while let Some(entry) = walk.next().await {
    ///         let entry = entry?;
    ///         if entry.file_name() == "Cargo.toml" {
    ///             assert!(entry.statx(STATX_SIZE).await?.size() > 0);
    ///         }
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn statx(&self, mask: u32) -> std::io::Result<Metadata> {
        if self.link && self.file_type != FileType::Symlink {
            let path = self.path().to_path_buf();
            let meta = tokio::task::spawn_blocking(move || {
                let name = std::ffi::CString::new(path.as_os_str().as_bytes())?;
                super::ordered::statx_followed(&name, mask)
                    .map_err(|e| crate::PathError::wrap("stat", path, e))
            });
            return meta.await.map_err(std::io::Error::other)?;
        }
        crate::fs::statx(self.path(), mask).await
    }
}

impl std::fmt::Debug for WalkEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkEntry")
            .field("path", &self.path())
            .field("depth", &self.depth)
            .field("file_type", &self.file_type)
            .field("ino", &self.ino)
            .field("metadata", &self.metadata)
            .field("path_is_symlink", &self.path_is_symlink())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deep_chain_of_names_drops_on_a_small_stack() {
        // 200 000 levels; a recursive drop needs far more than 256 KiB.
        let dropped = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut dir = DirName::root(Path::new("/r"));
                for _ in 0..200_000 {
                    dir = DirName::child(&dir, OsStr::new("a"));
                }
                drop(dir);
            })
            .unwrap()
            .join();
        assert!(dropped.is_ok());
    }

    #[test]
    fn paths_are_joined_from_the_names() {
        let root = DirName::root(Path::new("/r"));
        let a = DirName::child(&root, OsStr::new("a"));
        let b = DirName::child(&a, OsStr::new("b"));
        assert_eq!(b.join(Some(OsStr::new("c"))), Path::new("/r/a/b/c"));
        assert_eq!(root.join(None), Path::new("/r"));
        let name = Name::new("c".as_ref());
        let entry = WalkEntry::new(Some(b), name, 3, FileType::Regular, 1, None);
        assert_eq!(entry.path(), Path::new("/r/a/b/c"));
        assert_eq!(entry.file_name(), "c");
    }
}
