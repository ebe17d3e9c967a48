//! How a directory of the tree gets its descriptor. A walk never opens a
//! directory by its full path (that fails past `PATH_MAX` and can be
//! redirected by a rename): every directory is opened relative to its
//! parent's descriptor with `O_NOFOLLOW`. A parent keeps its descriptor
//! while some of its subdirectories are still queued, as long as the
//! [`FdBudget`] allows; past the budget it closes it, and a child is then
//! opened from the worker's [`Cursor`] by `..` or by walking down from the
//! nearest ancestor that kept one (the root keeps the descriptor it was
//! opened with). So open descriptors stay within `ulimit -n` however deep
//! or wide the tree is.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use super::DirNode;
use crate::sys::{self, Stat};

/// Opens a directory `name` relative to a parent descriptor, or `name` as
/// a path when there is no parent.
pub(crate) type Opener = fn(Option<BorrowedFd<'_>>, &CStr) -> io::Result<OwnedFd>;

/// The directory a worker opened last, with its descriptor: the start
/// for reaching a parent that kept no descriptor. One per worker; it
/// holds one descriptor.
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    last: Option<(Arc<DirNode>, Arc<OwnedFd>)>,
}

/// Why [`DirNode::open_or_stat`] failed, with the stat of the name when
/// it made one: boxed, as it comes with a failed open only and would make
/// every result large.
pub(crate) type OpenFailed = (io::Error, Option<io::Result<Box<Stat>>>);

impl DirNode {
    /// Opens this directory for reading, relative to its parent (the root
    /// relative to its kept descriptor, as `.`), and makes it the worker's
    /// `cursor`. Counts the open against the parent's queued children, so
    /// the parent closes its descriptor once the last one is open.
    pub fn open(
        self: &Arc<Self>,
        opener: Opener,
        budget: &FdBudget,
        cursor: &mut Cursor,
    ) -> io::Result<Arc<OwnedFd>> {
        self.open_or_stat(opener, budget, cursor)
            .map_err(|(cause, _)| cause)
    }

    /// Opens this directory like [`open`](Self::open), for a walk that
    /// stats a directory through its descriptor once open instead of by
    /// name before: when the open fails, the name is stat'ed in the parent
    /// (as `du` would have, to count its size) and that result comes with
    /// the error. No stat for the root, or when the parent cannot be
    /// reopened. Such a walk counts sizes and lists nothing (see
    /// [`Shared::defers_dirs`](crate::engine::Shared::defers_dirs)), so the
    /// stat asks for what the totals use only.
    pub fn open_or_stat(
        self: &Arc<Self>,
        opener: Opener,
        budget: &FdBudget,
        cursor: &mut Cursor,
    ) -> Result<Arc<OwnedFd>, OpenFailed> {
        let result = match &self.parent {
            None => self.reopen_root(opener).map_err(|cause| (cause, None)),
            Some(parent) => {
                let result = match parent.descriptor(opener, cursor) {
                    Ok(pfd) => opener(Some(pfd.as_fd()), &self.name).map_err(|cause| {
                        let st = sys::statx(Some(pfd.as_fd()), &self.name, sys::STATX_MASK);
                        (cause, Some(st.map(Box::new)))
                    }),
                    Err(cause) => Err((cause, None)),
                };
                parent.release(budget);
                result
            }
        };
        let fd = Arc::new(result?);
        // Set only now: the old cursor was the way up to the parent.
        cursor.last = Some((Arc::clone(self), Arc::clone(&fd)));
        Ok(fd)
    }

    /// A new descriptor of the root: `.` relative to the one kept since
    /// the walk began (a description of its own, so reads through it have
    /// their own position).
    fn reopen_root(&self, opener: Opener) -> io::Result<OwnedFd> {
        opener(Some(self.anchor()?.as_fd()), c".")
    }

    /// The root's kept descriptor (`EBADF` for any other directory).
    fn anchor(&self) -> io::Result<&Arc<OwnedFd>> {
        self.anchor
            .as_ref()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    /// For a directory whose entries several workers stat: keeps `fd` for
    /// its children when the budget allows, with one hold that
    /// [`release`](Self::release) drops once every worker is done.
    /// Children are counted in with [`add_children`](Self::add_children)
    /// before they are queued.
    pub fn hold(&self, fd: Arc<OwnedFd>, budget: &FdBudget) {
        self.pending.store(1, Ordering::Release);
        if budget.take() {
            *self.lock_fd() = Some(fd);
        }
    }

    /// Counts `n` more queued subdirectories (see [`hold`](Self::hold)).
    pub fn add_children(&self, n: usize) {
        self.pending.fetch_add(n, Ordering::AcqRel);
    }

    /// One child opened, or the hold dropped: the last one closes the kept
    /// descriptor.
    pub fn release(&self, budget: &FdBudget) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            let kept = self.lock_fd().take();
            if kept.is_some() {
                budget.give();
            }
        }
    }

    /// Records that `children` subdirectories were queued, and keeps `fd`
    /// for them when the budget allows. Call before queueing them.
    pub fn keep(&self, fd: impl Into<Arc<OwnedFd>>, children: usize, budget: &FdBudget) {
        self.pending.store(children, Ordering::Release);
        if children > 0 && budget.take() {
            *self.lock_fd() = Some(fd.into());
        }
    }

    fn lock_fd(&self) -> std::sync::MutexGuard<'_, Option<Arc<OwnedFd>>> {
        // A poisoned lock only means another worker panicked; the Option
        // inside is still consistent.
        self.fd.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A descriptor this directory keeps: the root's, or one kept for its
    /// queued children.
    fn kept(&self) -> Option<Arc<OwnedFd>> {
        self.anchor.clone().or_else(|| self.lock_fd().clone())
    }

    /// This directory's descriptor: a kept one, or one reached from the
    /// worker's cursor by `..` when the cursor is below it and nearer than
    /// an ancestor that kept one, or else one opened down from the nearest
    /// ancestor that kept one. A depth-first walk thus climbs each edge at
    /// most once on its way back up: the cost stays linear in the tree
    /// however few descriptors `ulimit -n` leaves.
    fn descriptor(&self, opener: Opener, cursor: &Cursor) -> io::Result<Arc<OwnedFd>> {
        if let Some(fd) = self.kept() {
            return Ok(fd);
        }
        // How many levels below this directory the cursor is, if it is.
        let up = cursor.last.as_ref().and_then(|(node, _)| {
            let levels = node.depth().checked_sub(self.depth())?;
            let mut cur = node.as_ref();
            for _ in 0..levels {
                cur = cur.parent.as_deref()?;
            }
            std::ptr::eq(cur, self).then_some(levels)
        });
        if let Some(up) = up {
            if !self.kept_within(up) {
                if let Some(fd) = self.climb(opener, cursor, up) {
                    return Ok(fd);
                }
            }
        }
        self.descend(opener)
    }

    /// Whether an ancestor at most `levels` levels up keeps a descriptor.
    fn kept_within(&self, levels: usize) -> bool {
        let mut cur = self.parent.as_deref();
        for _ in 0..levels {
            match cur {
                Some(node) if node.kept().is_some() => return true,
                Some(node) => cur = node.parent.as_deref(),
                None => return false,
            }
        }
        false
    }

    /// Opens this directory down from the nearest ancestor that kept a
    /// descriptor (the root always keeps one).
    fn descend(&self, opener: Opener) -> io::Result<Arc<OwnedFd>> {
        let mut chain = Vec::new();
        let mut cur = self;
        let mut fd = loop {
            if let Some(fd) = cur.kept() {
                break fd;
            }
            chain.push(cur);
            match &cur.parent {
                Some(parent) => cur = parent,
                None => return Err(io::Error::from_raw_os_error(libc::EBADF)),
            }
        };
        for node in chain.iter().rev() {
            fd = Arc::new(opener(Some(fd.as_fd()), &node.name)?);
        }
        Ok(fd)
    }

    /// This directory reached from the cursor `levels` levels below it by
    /// `..`, each step checked to arrive at the (device, inode) recorded
    /// for that ancestor, as fts does: `None` if any step fails or lands
    /// elsewhere (a directory moved meanwhile).
    fn climb(&self, opener: Opener, cursor: &Cursor, levels: usize) -> Option<Arc<OwnedFd>> {
        let (node, fd) = cursor.last.as_ref()?;
        let mut fd = Arc::clone(fd);
        let mut cur = node.as_ref();
        for _ in 0..levels {
            cur = cur.parent.as_deref()?;
            let want = *cur.id.get()?;
            let up = opener(Some(fd.as_fd()), c"..").ok()?;
            let got = sys::fstatx(up.as_fd(), sys::STATX_MASK).ok()?;
            if got.id() != want {
                return None;
            }
            fd = Arc::new(up);
        }
        Some(fd)
    }
}

/// How many directory descriptors the walk may keep open for queued
/// children, from `ulimit -n`.
#[derive(Debug)]
pub(crate) struct FdBudget {
    free: AtomicIsize,
}

impl FdBudget {
    /// Descriptors left for queued parents once each worker has room for
    /// the directory it reads, its cursor, a reopened ancestor chain (two
    /// at a time) and what `std::fs::read_dir` opens, plus stdio, the
    /// root's and runtime fds.
    pub fn new(jobs: usize, limit: u64) -> FdBudget {
        let reserve = 16 + 5 * jobs as u64;
        let free = limit.saturating_sub(reserve).min(isize::MAX as u64 / 2);
        FdBudget {
            free: AtomicIsize::new(free as isize),
        }
    }

    /// The most workers a limit supports: each may hold four descriptors,
    /// and as many again are left for parents kept open, so that a small
    /// `ulimit -n` does not force every open to start again from the root.
    pub fn max_jobs(limit: u64) -> usize {
        (limit.saturating_sub(16) / 8).clamp(1, 4096) as usize
    }

    /// Descriptors left now.
    pub fn available(&self) -> usize {
        self.free.load(Ordering::Acquire).max(0) as usize
    }

    /// Takes up to `n` descriptors for an engine's own use for the rest
    /// of the walk (the `uring` engine's further directories in flight);
    /// returns how many it got.
    pub fn take_up_to(&self, n: usize) -> usize {
        (0..n).take_while(|_| self.take()).count()
    }

    fn take(&self) -> bool {
        if self.free.fetch_sub(1, Ordering::AcqRel) > 0 {
            true
        } else {
            self.free.fetch_add(1, Ordering::AcqRel);
            false
        }
    }

    fn give(&self) {
        self.free.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::ffi::CString;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    use super::*;
    use crate::node::{test_root, ListingPlace};
    use crate::sys::FileId;

    thread_local! {
        /// The names the test opener was asked for, in order.
        static OPENS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    }

    /// The walk's opener, recording each name it opens.
    fn counting_open(dir: Option<BorrowedFd<'_>>, name: &CStr) -> io::Result<OwnedFd> {
        OPENS.with(|o| o.borrow_mut().push(name.to_bytes().to_vec()));
        sys::open_dir(dir, name)
    }

    /// The names opened since the last call, as strings.
    fn opens() -> Vec<String> {
        OPENS
            .with(|o| std::mem::take(&mut *o.borrow_mut()))
            .into_iter()
            .map(|n| String::from_utf8(n).unwrap())
            .collect()
    }

    /// The (device, inode) of `path`, as `DirNode` records it.
    fn id_of(path: &Path) -> FileId {
        let meta = fs::symlink_metadata(path).unwrap();
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// `path`'s stat, as a walk makes it before queueing a subdirectory.
    fn stat_of(path: &Path) -> Stat {
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        sys::statx(None, &c, sys::STATX_MASK).unwrap()
    }

    /// `a/b/c/d/e/f` below a temporary directory, with the nodes of each level
    /// (identities recorded, as a walk records them once stat'ed).
    fn chain() -> (tempfile::TempDir, Vec<Arc<DirNode>>) {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("a/b/c/d/e/f")).unwrap();
        let mut nodes = vec![test_root(tmp.path())];
        let mut path = tmp.path().to_owned();
        for name in ["a", "b", "c", "d", "e", "f"] {
            path.push(name);
            let c = CString::new(name).unwrap();
            let parent = nodes.last().unwrap();
            nodes.push(DirNode::child_with_stat(
                parent,
                &c,
                Some(&stat_of(&path)),
                ListingPlace::default(),
            ));
        }
        (tmp, nodes)
    }

    /// Whether `fd` is the directory at `path`.
    fn is(fd: &OwnedFd, path: &Path) -> bool {
        sys::fstatx(fd.as_fd(), sys::STATX_MASK).unwrap().id() == id_of(path)
    }

    #[test]
    fn with_no_descriptor_kept_a_directory_is_opened_down_from_the_root() {
        let (tmp, nodes) = chain();
        let budget = FdBudget::new(1, 0);
        let mut cursor = Cursor::default();
        opens();
        let fd = nodes[6].open(counting_open, &budget, &mut cursor).unwrap();
        assert!(is(&fd, &tmp.path().join("a/b/c/d/e/f")));
        // The parent `e` is reached from the root's descriptor, then `f`.
        assert_eq!(opens(), ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(nodes[6].path(), tmp.path().join("a/b/c/d/e/f"));
        assert_eq!(nodes[6].depth(), 6);
    }

    #[test]
    fn a_kept_parent_descriptor_is_used_then_closed_with_its_last_child() {
        let tmp = tempfile::tempdir().unwrap();
        for sub in ["p/x", "p/y"] {
            fs::create_dir_all(tmp.path().join(sub)).unwrap();
        }
        let root = test_root(tmp.path());
        let budget = FdBudget::new(1, 1000);
        let free = budget.available();
        let mut cursor = Cursor::default();
        let p = DirNode::child(&root, c"p", ListingPlace::default());
        let pfd = p.open(counting_open, &budget, &mut cursor).unwrap();
        p.keep(pfd, 2, &budget);
        assert_eq!(budget.available(), free - 1, "p keeps one descriptor");
        opens();
        for (name, left) in [(c"x", free - 1), (c"y", free)] {
            let child = DirNode::child(&p, name, ListingPlace::default());
            let fd = child.open(counting_open, &budget, &mut cursor).unwrap();
            assert!(is(&fd, &tmp.path().join("p").join(name.to_str().unwrap())));
            assert_eq!(budget.available(), left);
        }
        // Both children were opened through the kept descriptor of `p`.
        assert_eq!(opens(), ["x", "y"]);
        assert!(p.kept().is_none(), "the last child closed it");
    }

    /// Opens `a/b/c/d/e/f` (the cursor), runs `between`, then opens
    /// `a/b/c/d/g`; returns the names opened for `g`.
    fn opens_for_g_after_f(between: impl FnOnce(&Path)) -> Vec<String> {
        let (tmp, nodes) = chain();
        fs::create_dir(tmp.path().join("a/b/c/d/g")).unwrap();
        let budget = FdBudget::new(1, 0);
        let mut cursor = Cursor::default();
        nodes[6].open(counting_open, &budget, &mut cursor).unwrap();
        between(tmp.path());
        opens();
        let g = DirNode::child(&nodes[4], c"g", ListingPlace::default());
        let fd = g.open(counting_open, &budget, &mut cursor).unwrap();
        assert!(is(&fd, &tmp.path().join("a/b/c/d/g")));
        opens()
    }

    #[test]
    fn a_parent_is_reached_from_the_cursor_by_dotdot_when_nearer() {
        // `d` is two levels above the cursor (`f`), four below the root.
        assert_eq!(opens_for_g_after_f(|_| ()), ["..", "..", "g"]);
    }

    #[test]
    fn a_parent_moved_away_is_reached_down_from_the_root_instead() {
        // `e` moves away: `..` of `e` is no longer `d`, so the climb stops
        // there (after checking `e`) and `d` is reached from the root.
        let moved = |tmp: &Path| fs::rename(tmp.join("a/b/c/d/e"), tmp.join("e")).unwrap();
        assert_eq!(
            opens_for_g_after_f(moved),
            ["..", "..", "a", "b", "c", "d", "g"]
        );
    }

    #[test]
    fn a_directory_found_again_below_itself_is_named() {
        let (_tmp, nodes) = chain();
        let b = nodes[2].id.get().copied().unwrap();
        let same = nodes[6].same_as(b).expect("b is an ancestor of f");
        assert!(std::ptr::eq(same, nodes[2].as_ref()));
        assert!(nodes[1].same_as(b).is_none(), "b is below a, not above");
    }

    #[test]
    fn the_root_is_reopened_through_its_kept_descriptor() {
        let tmp = tempfile::tempdir().unwrap();
        let root = test_root(tmp.path());
        // Renaming the path away does not change which directory the root is.
        let moved = tmp.path().with_extension("moved");
        fs::rename(tmp.path(), &moved).unwrap();
        fs::create_dir(tmp.path()).unwrap();
        let budget = FdBudget::new(1, 0);
        let fd = root
            .open(counting_open, &budget, &mut Cursor::default())
            .unwrap();
        assert!(is(&fd, &moved));
        fs::remove_dir(&moved).unwrap();
    }
}
