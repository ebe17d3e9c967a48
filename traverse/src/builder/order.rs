//! The order of a listing: each directory's entries sorted (walkdir's
//! `sort_by`), a directory after its contents (walkdir's
//! `contents_first`), from the same parallel walk.

use std::cmp::Ordering;

use super::WalkBuilder;
use crate::sort::SortBy;
use crate::visit::Entry;

impl WalkBuilder {
    /// In a listing ([`list`](Self::list)), hands each directory's
    /// entries to the visitor together, sorted by `cmp`, once the
    /// directory is read whole (walkdir's `sort_by`). Directories still
    /// come in the parallel walk's order, each as soon as it is read, and
    /// only the directories being read are held in memory, not the walk.
    /// The root comes first. Without a listing there is nothing to sort.
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// for name in ["b", "c", "a"] {
    ///     std::fs::write(dir.path().join(name), b"")?;
    /// }
    /// // Largest name first.
    /// let walk = WalkBuilder::new()
    ///     .list(true)
    ///     .min_depth(1)
    ///     .sort_by(|a, b| b.path().cmp(a.path()))
    ///     .build();
    /// let mut names = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         names.push(e.path().file_name().unwrap().to_owned());
    ///     }
    /// });
    /// assert_eq!(names, ["c", "b", "a"]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn sort_by<F>(mut self, cmp: F) -> WalkBuilder
    where
        F: Fn(&Entry<'_>, &Entry<'_>) -> Ordering + Send + Sync + 'static,
    {
        self.sort = Some(SortBy::new(cmp));
        self
    }

    /// [`sort_by`](Self::sort_by) a key of each entry (walkdir's
    /// `sort_by_key`).
    ///
    /// ```
    /// use traverse::{Event, FileType, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("z"))?;
    /// std::fs::write(dir.path().join("a"), b"")?;
    /// // Directories first.
    /// let walk = WalkBuilder::new()
    ///     .list(true)
    ///     .min_depth(1)
    ///     .sort_by_key(|e| e.file_type() != FileType::Directory)
    ///     .build();
    /// let mut names = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         names.push(e.path().file_name().unwrap().to_owned());
    ///     }
    /// });
    /// assert_eq!(names, ["z", "a"]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn sort_by_key<K, F>(self, key: F) -> WalkBuilder
    where
        K: Ord,
        F: Fn(&Entry<'_>) -> K + Send + Sync + 'static,
    {
        self.sort_by(move |a, b| key(a).cmp(&key(b)))
    }

    /// [`sort_by`](Self::sort_by) file name, bytewise (walkdir's
    /// `sort_by_file_name`).
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// for name in ["b", "C", "a"] {
    ///     std::fs::write(dir.path().join(name), b"")?;
    /// }
    /// let walk = WalkBuilder::new().list(true).min_depth(1).sort_by_file_name().build();
    /// let mut names = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         names.push(e.path().file_name().unwrap().to_owned());
    ///     }
    /// });
    /// assert_eq!(names, ["C", "a", "b"]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn sort_by_file_name(mut self) -> WalkBuilder {
        self.sort = Some(SortBy::FileName);
        self
    }

    /// In a listing ([`list`](Self::list)), hands a directory to the
    /// visitor after everything below it, the root last (walkdir's
    /// `contents_first`, the order a tree is deleted in). Each directory
    /// that is read is held until its whole subtree is listed; with
    /// [`sort_by`](Self::sort_by), so are all of a directory's entries,
    /// which then come together, sorted, after everything below them. The
    /// order holds between the calls of one visitor and across the
    /// workers' visitors (calls made after the directory's subtree's). Only
    /// the directories whose subtrees are not done hold entries.
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir_all(dir.path().join("a/b"))?;
    /// std::fs::write(dir.path().join("a/b/f"), b"")?;
    /// let walk = WalkBuilder::new().list(true).contents_first(true).build();
    /// let mut paths = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         paths.push(e.path().to_owned());
    ///     }
    /// });
    /// let root = dir.path();
    /// assert_eq!(paths, [root.join("a/b/f"), root.join("a/b"), root.join("a"), root.into()]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn contents_first(mut self, yes: bool) -> WalkBuilder {
        self.contents_first = yes;
        self
    }
}
