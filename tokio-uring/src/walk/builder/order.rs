//! The settings walkdir, jwalk and ignore users look for: a minimum depth,
//! the order (sorted, contents first), following links, ignore rules.
//! All but `min_depth` and `follow_root_links` make a walk in order
//! (walkdir's: depth first, a directory's subtree right after it), which
//! one blocking thread reads with plain system calls.

use std::cmp::Ordering;

use super::WalkBuilder;
use crate::walk::{IgnoreRules, WalkEntry};

impl WalkBuilder {
    /// Entries shallower than `depth` are walked but not yielded (the root
    /// is depth 0): walkdir's `min_depth`, and like it never above
    /// [`max_depth`](Self::max_depth): the later of the two settings wins.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).min_depth(1).max_depth(1).build();
    ///     while let Some(entry) = walk.next().await {
    ///         assert_eq!(entry?.depth(), 1);
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn min_depth(mut self, depth: usize) -> WalkBuilder {
        self.min_depth = depth.min(self.max_depth);
        self
    }

    /// Follow symbolic links below the root: a link is yielded with its
    /// target's type and metadata ([`WalkEntry::path_is_symlink`] says it
    /// is one) and a link to a directory is walked into. A link that leads
    /// back to a directory the walk is inside is an error naming that
    /// directory ([`PathError::loop_ancestor`](crate::PathError::loop_ancestor))
    /// instead of an entry; a link that cannot be followed (dangling, or
    /// a loop of links) is an error too. Makes a walk in order.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// let tmp = std::env::temp_dir().join(format!("follow-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(tmp.join("d"))?;
    /// std::fs::write(tmp.join("d/f"), "")?;
    /// std::os::unix::fs::symlink("d", tmp.join("l"))?;
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(&tmp).follow_links(true).build();
    ///     let mut paths = Vec::new();
    ///     while let Some(entry) = walk.next().await {
    ///         paths.push(entry?.path().to_owned());
    ///     }
    ///     assert!(paths.contains(&tmp.join("l/f")));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// std::fs::remove_dir_all(&tmp)?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn follow_links(mut self, yes: bool) -> WalkBuilder {
        self.follow_links = yes;
        self
    }

    /// Whether a root that is a symbolic link is followed (the default,
    /// as walkdir): the root entry has the type `Symlink` (its target's
    /// with [`follow_links`](Self::follow_links)) and the walk goes into
    /// the directory it points to. With `false`, the link is the walk's
    /// only entry.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::FileType;
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// let tmp = std::env::temp_dir().join(format!("root-link-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(tmp.join("d"))?;
    /// std::fs::write(tmp.join("d/f"), "")?;
    /// std::os::unix::fs::symlink("d", tmp.join("l"))?;
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(tmp.join("l")).follow_root_links(false).build();
    ///     assert_eq!(walk.next().await.unwrap()?.file_type(), FileType::Symlink);
    ///     assert!(walk.next().await.is_none());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// std::fs::remove_dir_all(&tmp)?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn follow_root_links(mut self, yes: bool) -> WalkBuilder {
        self.follow_root_links = yes;
        self
    }

    /// Yield a directory after everything below it rather than before
    /// (walkdir's `contents_first`, for deleting a tree). Makes a walk in
    /// order.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).contents_first(true).build();
    ///     let mut last = None;
    ///     while let Some(entry) = walk.next().await {
    ///         last = Some(entry?);
    ///     }
    ///     assert_eq!(last.unwrap().depth(), 0);
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn contents_first(mut self, yes: bool) -> WalkBuilder {
        self.contents_first = yes;
        self
    }

    /// Each directory's entries in the order `cmp` gives, a directory at a
    /// time (never the whole walk held): walkdir's and jwalk's `sort_by`.
    /// Makes a walk in order.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR"))
    ///         .max_depth(1)
    ///         .sort_by(|a, b| b.file_name().cmp(a.file_name()))
    ///         .build();
    ///     walk.next().await.unwrap()?;
    ///     let mut names = Vec::new();
    ///     while let Some(entry) = walk.next().await {
    ///         names.push(entry?.file_name().to_owned());
    ///     }
    ///     assert!(names.windows(2).all(|w| w[0] > w[1]));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn sort_by(
        mut self,
        cmp: impl Fn(&WalkEntry, &WalkEntry) -> Ordering + Send + Sync + 'static,
    ) -> WalkBuilder {
        self.sort = Some(Box::new(cmp));
        self
    }

    /// Each directory's entries ordered by a key: walkdir's `sort_by_key`.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// let walk = WalkBuilder::new("/").sort_by_key(|e| e.file_name().len());
    /// # drop(walk);
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn sort_by_key<K: Ord>(
        self,
        key: impl Fn(&WalkEntry) -> K + Send + Sync + 'static,
    ) -> WalkBuilder {
        self.sort_by(move |a, b| key(a).cmp(&key(b)))
    }

    /// Each directory's entries in the byte order of their names:
    /// walkdir's `sort_by_file_name`, jwalk's `sort(true)`.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).sort_by_file_name().build();
    ///     let mut paths = Vec::new();
    ///     while let Some(entry) = walk.next().await {
    ///         paths.push(entry?.path().to_owned());
    ///     }
    ///     // Depth first, each directory sorted: the paths in order.
    ///     assert!(paths.windows(2).all(|w| w[0] < w[1]));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn sort_by_file_name(self) -> WalkBuilder {
        self.sort_by(|a, b| a.file_name().cmp(b.file_name()))
    }

    /// Leave out what `rules` say, as ripgrep and fd do: hidden entries,
    /// and what `.ignore`, `.gitignore` and git's global excludes name
    /// (the `ignore` crate's matcher). An ignored directory is not walked
    /// into. Makes a walk in order.
    ///
    /// ```
    /// use tokio_uring_getdents::walk::{IgnoreRules, WalkBuilder};
    ///
    /// let tmp = std::env::temp_dir().join(format!("ignore-rules-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(tmp.join("build"))?;
    /// std::fs::write(tmp.join(".ignore"), "build/\n")?;
    /// std::fs::write(tmp.join("kept"), "")?;
    /// tokio_uring::start(async {
    ///     let rules = IgnoreRules::new().hidden(false);
    ///     let mut walk = WalkBuilder::new(&tmp).ignore_rules(rules).build();
    ///     let mut names = Vec::new();
    ///     while let Some(entry) = walk.next().await {
    ///         names.push(entry?.file_name().to_owned());
    ///     }
    ///     // The root, `.ignore` (not hidden from this walk) and `kept`.
    ///     assert_eq!(names.len(), 3);
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// std::fs::remove_dir_all(&tmp)?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn ignore_rules(mut self, rules: IgnoreRules) -> WalkBuilder {
        self.ignore = Some(rules);
        self
    }
}
