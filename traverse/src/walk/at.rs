//! Walking a directory the caller already holds open.

use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::Arc;

use crate::breakdown::DirVisitor;
use crate::visit::VisitorBuilder;
use crate::walk::{Summary, Walk};

impl Walk {
    /// Walks the directory open as `dir` like [`run_dirs`](Walk::run_dirs),
    /// but starting afresh like [`run`](Walk::run), and never looking
    /// `root` up: `root` only names the tree (in errors, in
    /// paths handed to visitors, as the ncdu tree's name). The walk opens
    /// `.` relative to `dir` (a descriptor of its own, so `dir`'s offset is
    /// untouched) and everything below relative to that, so it shows
    /// exactly the directory the caller holds, whatever happens to the
    /// path meanwhile: a program that acts on the tree later through the
    /// same descriptor acts on what was shown.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use traverse::{DirTotals, DirVisitor, Ignore, WalkBuilder};
    ///
    /// /// The total of the root.
    /// #[derive(Default)]
    /// struct Root(Mutex<u64>);
    /// impl DirVisitor for Root {
    ///     fn dir(&self, dir: &DirTotals<'_>) {
    ///         if dir.depth() == 0 {
    ///             *self.0.lock().unwrap() = dir.totals().files;
    ///         }
    ///     }
    /// }
    ///
    /// let tree = tempfile::tempdir()?;
    /// std::fs::write(tree.path().join("f"), b"12345")?;
    /// let dir = std::fs::File::open(tree.path())?;
    /// // The path given names the tree, and is not opened.
    /// let name = std::path::Path::new("/nowhere/tree");
    /// let root = Arc::new(Root::default());
    /// use std::os::fd::AsFd;
    /// let summary = WalkBuilder::new().build().run_dirs_at(dir.as_fd(), name, &Ignore, root.clone());
    /// assert_eq!((summary.totals.files, *root.0.lock().unwrap()), (1, 1));
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn run_dirs_at(
        &self,
        dir: BorrowedFd<'_>,
        root: &Path,
        visitors: &dyn VisitorBuilder,
        dirs: Arc<dyn DirVisitor>,
    ) -> Summary {
        self.forget();
        self.next(Some(dir), root, visitors, Some(dirs))
    }
}
