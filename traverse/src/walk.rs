//! A configured walk: opens each root once, counts it, hands the rest to
//! the engine, and merges what the workers counted into a [`Summary`].

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::breakdown::{Breakdown, DirVisitor, Tally};
use crate::config::{Config, Engine};
use crate::dispatch;
use crate::engine::{self, Shared};
use crate::error::{Error, Op};
use crate::node::{DirNode, FdBudget};
use crate::sys;
use crate::totals::{Accumulator, InodeKey, Progress, Totals};
use crate::visit::{Ignore, VisitorBuilder};

/// The result of walking one root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// What was counted.
    pub totals: Totals,
    /// True when the walk was interrupted ([`WalkBuilder::interrupt`](crate::WalkBuilder::interrupt)):
    /// the totals cover only part of the tree.
    pub partial: bool,
}

/// A configured walk. Run it on one root after another: a hard-linked
/// inode counted under one root is not counted again under the next, as
/// `du` does with several arguments.
#[derive(Debug)]
pub struct Walk {
    pub(crate) config: Config,
    pub(crate) fallback: Option<String>,
    pub(crate) limit: u64,
    pub(crate) interrupt: Arc<AtomicBool>,
    pub(crate) seen: Mutex<HashSet<InodeKey>>,
    pub(crate) progress: Arc<Progress>,
}

impl Walk {
    /// The engine that runs (never [`Engine::Auto`]).
    pub fn engine(&self) -> Engine {
        self.config.engine.into()
    }

    /// Worker threads at the start.
    pub fn jobs(&self) -> usize {
        self.config.jobs
    }

    /// Why [`Engine::Uring`] was asked for but [`Engine::Threads`] runs.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Live counts for a progress display.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Walks `root` with no visitor: errors are only counted.
    pub fn totals(&self, root: &Path) -> Summary {
        self.run(root, &Ignore)
    }

    /// Walks `root`, handing listed paths and errors to visitors from
    /// `visitors`. A root that is not a directory (a file, a symlink, which
    /// is not followed, a device...) is an error ([`Op::Open`], "Not a
    /// directory") and counts nothing else. Write `link/` to walk the
    /// directory a symlink `link` points to: the kernel follows a symlink
    /// before a trailing slash.
    pub fn run(&self, root: &Path, visitors: &dyn VisitorBuilder) -> Summary {
        self.walk(root, visitors, None)
    }

    /// Walks `root` like [`run`](Self::run), and hands each directory to
    /// `dirs` once the totals of its subtree are final (a breakdown, as
    /// `du -d N` prints it): from the same parallel walk, with every
    /// engine. A hard-linked inode whose names sit in several directories
    /// is counted in the directory of the name whose path sorts first
    /// (bytewise), so two runs give the same figures; such inodes are
    /// settled at the end of the walk. No directory is handed over when
    /// the root cannot be read or the walk is interrupted before it ends.
    /// Not in listing mode ([`WalkBuilder::list`](crate::WalkBuilder::list)),
    /// which counts no sizes: `dirs` then gets nothing.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use traverse::{DirTotals, DirVisitor, Ignore, WalkBuilder};
    ///
    /// /// The largest subtree below the root.
    /// #[derive(Default)]
    /// struct Largest(Mutex<u128>);
    /// impl DirVisitor for Largest {
    ///     fn dir(&self, dir: &DirTotals<'_>) {
    ///         if dir.depth() > 0 {
    ///             let mut max = self.0.lock().unwrap();
    ///             *max = (*max).max(dir.totals().bytes);
    ///         }
    ///     }
    /// }
    ///
    /// let tree = tempfile::tempdir()?;
    /// std::fs::create_dir_all(tree.path().join("a/b"))?;
    /// std::fs::write(tree.path().join("a/b/f"), vec![0; 10_000])?;
    /// let largest = Arc::new(Largest::default());
    /// WalkBuilder::new().build().run_dirs(tree.path(), &Ignore, largest.clone());
    /// assert!(*largest.0.lock().unwrap() >= 10_000);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn run_dirs(
        &self,
        root: &Path,
        visitors: &dyn VisitorBuilder,
        dirs: Arc<dyn DirVisitor>,
    ) -> Summary {
        self.walk(root, visitors, Some(dirs))
    }

    fn walk(
        &self,
        root: &Path,
        visitors: &dyn VisitorBuilder,
        dirs: Option<Arc<dyn DirVisitor>>,
    ) -> Summary {
        let mut acc = Accumulator::new(self.config.count_links);
        let mut visitor = visitors.build();
        let croot = match CString::new(root.as_os_str().as_bytes()) {
            Ok(c) => c,
            Err(_) => {
                let cause = std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the path contains a NUL byte",
                );
                visitor.error(Error::new(root, Op::Stat, cause));
                acc.totals.errors += 1;
                return self.finish(acc);
            }
        };
        // The root is opened once, never through a symlink, and kept for
        // the whole walk: every later open is relative to it, so a rename
        // of PATH (or of a directory above it) during the walk cannot lead
        // the walk into another tree.
        let (opened, st) = match sys::open_dir(None, &croot) {
            Ok(fd) => match sys::fstatx(fd.as_fd()) {
                Ok(st) => (Ok(fd), st),
                Err(cause) => {
                    visitor.error(Error::new(root, Op::Stat, cause));
                    acc.totals.errors += 1;
                    return self.finish(acc);
                }
            },
            // Why: a stat by name tells a missing PATH, a file or a
            // symlink from a directory that cannot be opened.
            Err(cause) => match sys::statx(None, &croot) {
                Ok(st) => (Err(cause), st),
                Err(cause) => {
                    visitor.error(Error::new(root, Op::Stat, cause));
                    acc.totals.errors += 1;
                    return self.finish(acc);
                }
            },
        };
        if !st.is_dir() {
            visitor.error(Error::new(root, Op::Open, not_a_directory(st.mode)));
            acc.totals.errors += 1;
            return self.finish(acc);
        }
        if self.config.list {
            acc.add_type(engine::d_type_of(st.mode));
            visitor.visit(root);
        } else {
            acc.add(&st);
        }
        self.progress.add(1, st.size);
        let fd = match opened {
            Ok(fd) => fd,
            Err(cause) => {
                // A directory that cannot be opened (no permission): counted,
                // as du counts it, and reported.
                visitor.error(Error::new(root, Op::Open, cause));
                acc.totals.errors += 1;
                return self.finish(acc);
            }
        };
        drop(visitor);
        if !self.interrupt.load(Ordering::Relaxed) {
            let breakdown = dirs
                .filter(|_| !self.config.list)
                .map(|dirs| Arc::new(Breakdown::new(dirs)));
            let tally = breakdown
                .as_ref()
                .map(|b| Tally::new(Some(&st), croot.to_bytes(), b.ncdu));
            let shared = Arc::new(Shared {
                config: self.config.clone(),
                root_dev: st.dev,
                root_mnt: st.mnt_id,
                budget: FdBudget::new(self.config.max_jobs, self.limit),
                interrupt: Arc::clone(&self.interrupt),
                progress: Arc::clone(&self.progress),
                breakdown,
            });
            let root = DirNode::root(croot, fd, st.id(), tally);
            acc.merge(dispatch::walk(&shared, root, visitors));
            if let Some(breakdown) = &shared.breakdown {
                if !self.interrupt.load(Ordering::Relaxed) {
                    let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
                    breakdown.settle(&seen);
                }
            }
        }
        self.finish(acc)
    }

    fn finish(&self, acc: Accumulator) -> Summary {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        Summary {
            totals: acc.finish(&mut seen),
            partial: self.interrupt.load(Ordering::Relaxed),
        }
    }
}

/// Why a root of this `st_mode` cannot be walked; for a symlink, how to
/// walk its target.
fn not_a_directory(mode: u32) -> std::io::Error {
    if mode & libc::S_IFMT == libc::S_IFLNK {
        std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "Not a directory: a symbolic link, not followed (add a trailing / to follow it)",
        )
    } else {
        std::io::Error::from_raw_os_error(libc::ENOTDIR)
    }
}
