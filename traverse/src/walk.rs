//! A configured walk: opens each root once, counts it, hands the rest to
//! the engine, and merges what the workers counted into a [`Summary`].

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use io_uring_getdents::dirent::FileType;

use crate::breakdown::{Breakdown, DirVisitor};
use crate::config::{Config, Engine, UringUnavailable};
use crate::dispatch;
use crate::engine::{DirSet, Shared};
use crate::error::{Error, Op};
use crate::links::MountNames;
use crate::node::{DirNode, FdBudget};
use crate::sort::Order;
use crate::spare::Spares;
use crate::sys::Stat;
use crate::sys::{self, FileId};
use crate::tally::Tally;
use crate::totals::{Accumulator, Progress, Totals};
use crate::visit::{Closure, Entry, Event, Ignore, Visitor, VisitorBuilder};

mod at;
mod root;

/// The result of walking one root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// What was counted.
    pub totals: Totals,
    /// True when the walk was interrupted ([`WalkBuilder::interrupt`](crate::WalkBuilder::interrupt)):
    /// the totals cover only part of the tree.
    pub partial: bool,
    /// True when the root was counted under an earlier root, with
    /// [`WalkBuilder::count_once`](crate::WalkBuilder::count_once): nothing
    /// was walked or counted (`du A A` prints nothing for the second `A`).
    pub repeated: bool,
}

/// A configured walk. Each [`run`](Walk::run) starts afresh (hard links,
/// progress); [`run_next`](Walk::run_next) goes on from the runs before it,
/// as `du` does with several arguments.
///
/// A run blocks the calling thread until the walk ends, so async code
/// calls it through `spawn_blocking`. Every engine works inside an async
/// runtime: with `reference-engines`, a run inside a tokio runtime's
/// context moves to a thread of its own, where the `tokio` engine can
/// start its runtime.
#[derive(Debug)]
pub struct Walk {
    pub(crate) config: Config,
    pub(crate) fallback: Option<UringUnavailable>,
    pub(crate) limit: u64,
    pub(crate) interrupt: Arc<AtomicBool>,
    pub(crate) seen: Mutex<HashSet<FileId>>,
    /// With `count_once`: the directories counted by the runs so far.
    /// Shared with a run's workers, and grown (unshared again) after it.
    pub(crate) dirs_seen: Mutex<Arc<DirSet>>,
    /// Files given as roots, or counted by the caller
    /// ([`count_file_once`](Walk::count_file_once)): later runs leave them
    /// out.
    pub(crate) files_seen: Mutex<Arc<DirSet>>,
    /// With `count_once`: the entries the runs' filters left out.
    pub(crate) skipped: Mutex<DirSet>,
    /// With links followed: see [`Shared::reached`].
    pub(crate) reached: Arc<[Mutex<DirSet>]>,
    /// Read once for the runs from one [`run`](Walk::run) to the next.
    pub(crate) mount_names: Mutex<Arc<MountNames>>,
    pub(crate) progress: Arc<Progress>,
    /// Buffers and rings kept from one root to the next.
    pub(crate) spares: Arc<Spares>,
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

    /// Why [`Engine::Uring`] was asked for but [`Engine::Threads`] runs;
    /// `None` when the engine asked for runs.
    ///
    /// ```
    /// let walk = traverse::WalkBuilder::new().build();
    /// // `auto` picks an engine that runs: it never falls back.
    /// assert!(walk.fallback().is_none());
    /// ```
    pub fn fallback(&self) -> Option<&UringUnavailable> {
        self.fallback.as_ref()
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
    /// is not followed, a device...) is counted and listed as the walk's
    /// one entry, at depth 0, as du counts it. Write `link/` to walk the
    /// directory a symlink `link` points to: the kernel follows a symlink
    /// before a trailing slash.
    ///
    /// Every call starts afresh: hard-linked inodes and [`progress`](Walk::progress)
    /// counted by earlier runs are forgotten, so running one `Walk` twice
    /// over the same tree gives the same totals twice. Run one root at a
    /// time on a `Walk`: concurrent runs share those counts.
    ///
    /// ```
    /// let walk = traverse::WalkBuilder::new().build();
    /// let first = walk.run(std::path::Path::new("."), &traverse::Ignore);
    /// let again = walk.run(std::path::Path::new("."), &traverse::Ignore);
    /// assert_eq!(first.totals.dirs, again.totals.dirs);
    /// ```
    pub fn run(&self, root: &Path, visitors: &dyn VisitorBuilder) -> Summary {
        self.forget();
        self.run_next(root, visitors)
    }

    /// Forgets what earlier runs counted.
    fn forget(&self) {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clear();
        *self.dirs_seen.lock().unwrap_or_else(|p| p.into_inner()) = Arc::default();
        *self.files_seen.lock().unwrap_or_else(|p| p.into_inner()) = Arc::default();
        self.skipped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        for shard in self.reached.iter() {
            shard.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
        *self.mount_names.lock().unwrap_or_else(|p| p.into_inner()) = Arc::default();
        self.progress.reset();
    }

    /// Walks `root` as the next of several roots, like [`run`](Walk::run)
    /// but keeping what the runs before it counted: a hard-linked inode
    /// counted under an earlier root is not counted again (as `du a b`
    /// does), and [`progress`](Walk::progress) goes on from their counts.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("a"))?;
    /// std::fs::create_dir(dir.path().join("b"))?;
    /// std::fs::write(dir.path().join("a/file"), b"12345")?;
    /// std::fs::hard_link(dir.path().join("a/file"), dir.path().join("b/link"))?;
    ///
    /// let walk = traverse::WalkBuilder::new().build();
    /// let a = walk.run(&dir.path().join("a"), &traverse::Ignore);
    /// let b = walk.run_next(&dir.path().join("b"), &traverse::Ignore);
    /// let b_alone = walk.run(&dir.path().join("b"), &traverse::Ignore);
    /// // Every name is a file; the inode's 5 bytes count under `a` only.
    /// assert_eq!((a.totals.files, b.totals.files), (1, 1));
    /// assert_eq!(b_alone.totals.bytes - b.totals.bytes, 5);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn run_next(&self, root: &Path, visitors: &dyn VisitorBuilder) -> Summary {
        self.next(None, root, visitors, None)
    }

    /// Walks `root` like [`run_next`](Self::run_next) (keeping what the
    /// runs before it counted, as `du a b` does), and hands each directory to
    /// `dirs` once the totals of its subtree are final (a breakdown, as
    /// `du -d N` prints it): from the same parallel walk, with every
    /// engine. A hard-linked inode whose names sit in several directories
    /// is counted in the directory of the name GNU du meets first
    /// ([`ListingOrder`](crate::ListingOrder)), so two runs give the same figures; such inodes are
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
        self.next(None, root, visitors, Some(dirs))
    }

    /// [`run_next`](Self::run_next), with a breakdown when `dirs` is given,
    /// from the directory open as `at` (named `root`) when given.
    fn next(
        &self,
        at: Option<BorrowedFd<'_>>,
        root: &Path,
        visitors: &dyn VisitorBuilder,
        dirs: Option<Arc<dyn DirVisitor>>,
    ) -> Summary {
        if !in_async_runtime() {
            return self.walk_root(at, root, visitors, dirs);
        }
        // Inside an async runtime: the tokio engine starts a runtime of its
        // own, which tokio refuses on a thread that already runs one.
        std::thread::scope(|scope| {
            let thread = std::thread::Builder::new()
                .name("traverse-walk".into())
                .spawn_scoped(scope, || self.walk_root(at, root, visitors, dirs));
            match thread {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(cause) => {
                    let cause = std::io::Error::new(
                        cause.kind(),
                        format!("cannot start a thread for the walk: {cause}"),
                    );
                    visitors.build().error(Error::new(root, Op::Read, cause));
                    let mut acc =
                        Accumulator::new(self.config.count_links, self.config.latest_time);
                    acc.totals.errors += 1;
                    self.finish(acc)
                }
            }
        })
    }

    /// Walks `root` with a closure as the visitor: it gets every
    /// [`Event`], from one worker at a time (the workers take turns
    /// through a lock; for per-worker visitors without one, use
    /// [`run`](Walk::run) with a [`VisitorBuilder`]). Starts afresh like
    /// [`run`](Walk::run).
    ///
    /// ```
    /// use traverse::{Event, FileType, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("notes.txt"), b"hi")?;
    /// std::fs::write(dir.path().join("data.csv"), b"1,2")?;
    ///
    /// let mut txt = 0;
    /// let summary = WalkBuilder::new().list(true).build().run_with(dir.path(), |event| {
    ///     if let Event::Entry(entry) = event {
    ///         let txt_file = entry.file_type() == FileType::Regular
    ///             && entry.path().extension().is_some_and(|e| e == "txt");
    ///         txt += u32::from(txt_file);
    ///     }
    /// });
    /// assert_eq!(txt, 1);
    /// assert_eq!(summary.totals.files, 2);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn run_with<F>(&self, root: &Path, visitor: F) -> Summary
    where
        F: FnMut(Event<'_>) + Send,
    {
        self.run(root, &Closure::new(visitor))
    }

    /// Lists the root, in a listing from depth 0.
    pub(super) fn list_root(&self, visitor: &mut dyn Visitor, root: &Path, st: &Stat) {
        if self.config.list && self.config.min_depth == 0 {
            let meta = Some(st).filter(|_| self.config.list_metadata);
            let file_type = FileType::from_mode(st.mode);
            visitor.visit_entry(&Entry::new(root, file_type, 0).with_stat(meta));
        }
    }

    /// Contents first: the root, to be listed (from depth 0) last.
    pub(super) fn hold_root(&self, order: &Order, root: &Path, st: &Stat) {
        if self.config.min_depth == 0 {
            let meta = Some(st).filter(|_| self.config.list_metadata);
            let file_type = FileType::from_mode(st.mode);
            order.hold_root(&Entry::new(root, file_type, 0), meta);
        }
    }

    /// Whether the file `path` (not a directory), whose `st_dev` and
    /// `st_ino` are `dev` and `ino`, is counted for the first time since
    /// the last [`run`](Walk::run), as `du` with several PATHs counts every
    /// inode once; if so, it now counts as seen, and later runs
    /// ([`run_next`](Walk::run_next)) leave it out. Counted before: a file
    /// given so before, a hard-linked file counted by a run (or any file,
    /// with links followed: `du -L` remembers every inode), or a file in
    /// a directory a run counted with
    /// [`count_once`](crate::WalkBuilder::count_once), unless that run's
    /// filter left it out (du counts such a file when it is given later).
    ///
    /// ```
    /// use std::os::unix::fs::MetadataExt;
    /// let dir = tempfile::tempdir()?;
    /// let file = dir.path().join("f");
    /// std::fs::write(&file, b"x")?;
    /// let m = std::fs::metadata(&file)?;
    /// let walk = traverse::WalkBuilder::new().count_once(true).build();
    /// walk.run_next(dir.path(), &traverse::Ignore);
    /// assert!(!walk.count_file_once(&file, m.dev(), m.ino()));
    /// walk.run(std::path::Path::new("/nonexistent"), &traverse::Ignore);
    /// assert!(walk.count_file_once(&file, m.dev(), m.ino()));
    /// assert!(!walk.count_file_once(&file, m.dev(), m.ino()));
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn count_file_once(&self, path: &Path, dev: u64, ino: u64) -> bool {
        let id = FileId { dev, ino };
        let counted = self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&id);
        let shard = &self.reached[crate::links::shard_of(&id)];
        if counted
            || shard
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&id)
        {
            return false;
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dirs_seen = Arc::clone(&self.dirs_seen.lock().unwrap_or_else(|p| p.into_inner()));
        let in_counted_dir = std::fs::metadata(parent).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            dirs_seen.contains(&FileId {
                dev: m.dev(),
                ino: m.ino(),
            })
        }) && !self
            .skipped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&id);
        let mut files_seen = self.files_seen.lock().unwrap_or_else(|p| p.into_inner());
        !in_counted_dir && Arc::make_mut(&mut files_seen).insert(id)
    }

    pub(super) fn finish(&self, mut acc: Accumulator) -> Summary {
        if !acc.dirs.is_empty() {
            let mut dirs_seen = self.dirs_seen.lock().unwrap_or_else(|p| p.into_inner());
            // The run's workers are gone, so this copy is the only one
            // left and grows in place.
            Arc::make_mut(&mut dirs_seen).extend(acc.dirs.drain(..));
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        Summary {
            totals: acc.finish(&mut seen),
            partial: self.interrupt.load(Ordering::Relaxed),
            repeated: false,
        }
    }
}

/// Whether this thread is inside a tokio runtime's context (a worker, a
/// `block_on`, a `spawn_blocking` thread). Only the `tokio` engine needs to
/// know, so builds without it answer no.
fn in_async_runtime() -> bool {
    #[cfg(feature = "reference-engines")]
    return tokio::runtime::Handle::try_current().is_ok();
    #[cfg(not(feature = "reference-engines"))]
    false
}
