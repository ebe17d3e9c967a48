//! The order of a listing: each directory's entries sorted (walkdir's
//! `sort_by`), from the same parallel walk.

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
}
