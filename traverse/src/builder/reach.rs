//! What a walk reaches: how deep it lists and descends, and whether it
//! follows symbolic links.

use super::WalkBuilder;

impl WalkBuilder {
    /// Walks at most `depth` levels below the root (the root is level 0,
    /// its entries level 1): deeper entries are neither counted nor
    /// listed, and directories at level `depth` are counted but not read.
    /// `max_depth(0)` counts the root only. With
    /// [`Walk::run_dirs`](crate::Walk::run_dirs), the directories at level
    /// `depth` count in their parent's totals and are not handed over
    /// themselves.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir_all(dir.path().join("a/b/c"))?;
    /// std::fs::write(dir.path().join("a/b/c/deep"), b"1")?;
    /// std::fs::write(dir.path().join("a/top"), b"1")?;
    ///
    /// let totals = |depth| {
    ///     let walk = traverse::WalkBuilder::new().max_depth(depth).build();
    ///     let t = walk.totals(dir.path()).totals;
    ///     (t.dirs, t.files)
    /// };
    /// assert_eq!(totals(0), (1, 0)); // the root
    /// assert_eq!(totals(1), (2, 0)); // a, not read
    /// assert_eq!(totals(2), (3, 1)); // a/b and a/top
    /// assert_eq!(totals(4), (4, 2)); // everything
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn max_depth(mut self, depth: usize) -> WalkBuilder {
        self.max_depth = Some(depth.max(self.min_depth));
        self
    }

    /// In a listing ([`list`](Self::list)), entries shallower than `depth`
    /// (the root is 0) are walked and counted but not handed to the
    /// visitor: walkdir's `min_depth`, and like it never above
    /// [`max_depth`](Self::max_depth): the later of the two settings wins.
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir_all(dir.path().join("a/b"))?;
    /// let walk = WalkBuilder::new().list(true).min_depth(2).build();
    /// let mut listed = Vec::new();
    /// let summary = walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         listed.push(e.path().to_owned());
    ///     }
    /// });
    /// assert_eq!(listed, [dir.path().join("a/b")]);
    /// assert_eq!(summary.totals.dirs, 3);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn min_depth(mut self, depth: usize) -> WalkBuilder {
        self.min_depth = self.max_depth.map_or(depth, |max| depth.min(max));
        self
    }

    /// Follows symbolic links (`du -L`, `find -L`): a link is counted as
    /// what it points to, and a link to a directory is walked like the
    /// directory. A link that cannot be followed (dangling, or a chain too
    /// long) is an error ([`Op::Stat`](crate::Op::Stat)) and is not
    /// counted, as `du -L` reports it. A directory reached again below
    /// itself (a link to an ancestor, or a bind mount of one) is not
    /// descended into: it is an error ([`Op::Loop`](crate::Op::Loop)) whose
    /// [`Error::loop_ancestor`](crate::Error::loop_ancestor) names the
    /// ancestor, found by (device, inode) among the directory's ancestors.
    /// As `du -L`, every directory and file is counted once however many
    /// links lead to it, here and under the roots of earlier
    /// [`run_next`](crate::Walk::run_next)s: reached again, it is passed
    /// over silently. In the totals and a listing, the path a worker
    /// reaches first counts it; in per-directory totals
    /// ([`Walk::run_dirs`](crate::Walk::run_dirs)) the one du meets first,
    /// as du, a directory with its subtree, once the walk is over. With
    /// [`count_links`](Self::count_links), as `du -L -l`, each is counted
    /// every time.
    /// Also follows the root ([`follow_root_links`](Self::follow_root_links)).
    /// Only the parallel engines (`threads`, `uring`) follow links below
    /// the root. Off by default: a walk never leaves its tree.
    ///
    /// ```
    /// use traverse::{Event, Op, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("real"))?;
    /// std::fs::write(dir.path().join("real/f"), b"12345")?;
    /// std::os::unix::fs::symlink("real", dir.path().join("link"))?;
    /// std::os::unix::fs::symlink("..", dir.path().join("real/up"))?;
    ///
    /// let walk = WalkBuilder::new().follow_links(true).build();
    /// let mut ancestors = Vec::new();
    /// let summary = walk.run_with(dir.path(), |event| {
    ///     if let Event::Error(e) = event {
    ///         assert_eq!(e.op(), Op::Loop);
    ///         ancestors.push(e.loop_ancestor().unwrap().to_owned());
    ///     }
    /// });
    /// // `real` and `link` are one directory, read once: `real/f` once.
    /// assert_eq!(summary.totals.files, 1);
    /// // `up` leads back to the root.
    /// assert_eq!(ancestors, [dir.path()]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn follow_links(mut self, yes: bool) -> WalkBuilder {
        self.follow_links = yes;
        self
    }

    /// Follows the root when it is a symbolic link, and only the root
    /// (`du -H`, `find -H`): a link to a directory given as the root is
    /// walked under the link's own path, symlinks below it are not
    /// followed. Implied by [`follow_links`](Self::follow_links).
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("real"))?;
    /// std::os::unix::fs::symlink("real", dir.path().join("link"))?;
    /// let link = dir.path().join("link");
    /// // Not followed: the link itself is counted, as du counts it.
    /// let plain = traverse::WalkBuilder::new().build();
    /// assert_eq!(plain.totals(&link).totals.symlinks, 1);
    /// let follow = traverse::WalkBuilder::new().follow_root_links(true).build();
    /// assert_eq!(follow.totals(&link).totals.dirs, 1);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn follow_root_links(mut self, yes: bool) -> WalkBuilder {
        self.follow_root_links = yes;
        self
    }
}
