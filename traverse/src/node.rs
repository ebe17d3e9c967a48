//! Directories waiting to be read, and the descriptors that open them.
//!
//! A walk never opens a directory by its full path (that fails past
//! `PATH_MAX` and can be redirected by a rename): every directory is
//! opened relative to its parent's descriptor with `O_NOFOLLOW`. A parent
//! keeps its descriptor while some of its subdirectories are still queued,
//! as long as the descriptor budget allows; past the budget it closes it,
//! and a child is then opened by walking down from the nearest ancestor
//! that kept one (the root is opened by its path). So open descriptors stay
//! within `ulimit -n` however deep or wide the tree is.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::sys::{self, Stat};

/// Opens a directory `name` relative to a parent descriptor, or `name` as
/// a path when there is no parent.
pub(crate) type Opener = fn(Option<BorrowedFd<'_>>, &CStr) -> io::Result<OwnedFd>;

/// A directory of the tree: queued, being read, or a parent of queued ones.
#[derive(Debug)]
pub(crate) struct DirNode {
    parent: Option<Arc<DirNode>>,
    /// The name in the parent, or the root's path.
    name: CString,
    /// Kept open while subdirectories wait, if the budget allowed.
    fd: Mutex<Option<Arc<OwnedFd>>>,
    /// Subdirectories not yet opened.
    pending: AtomicUsize,
}

impl DirNode {
    /// The root of a walk, opened by `path`.
    pub fn root(path: CString) -> Arc<DirNode> {
        Arc::new(DirNode {
            parent: None,
            name: path,
            fd: Mutex::new(None),
            pending: AtomicUsize::new(0),
        })
    }

    /// A subdirectory `name` of `parent`.
    pub fn child(parent: &Arc<DirNode>, name: &CStr) -> Arc<DirNode> {
        Arc::new(DirNode {
            parent: Some(Arc::clone(parent)),
            name: name.to_owned(),
            fd: Mutex::new(None),
            pending: AtomicUsize::new(0),
        })
    }

    /// The path for messages and listings: the root's path and the names
    /// below it.
    pub fn path(&self) -> PathBuf {
        let mut names = Vec::new();
        let mut cur = Some(self);
        while let Some(node) = cur {
            names.push(node.name.to_bytes());
            cur = node.parent.as_deref();
        }
        let mut bytes = Vec::with_capacity(names.iter().map(|n| n.len() + 1).sum());
        for name in names.iter().rev() {
            push_name(&mut bytes, name);
        }
        PathBuf::from(OsStr::from_bytes(&bytes))
    }

    /// Opens this directory for reading, relative to its parent. Counts
    /// the open against the parent's queued children, so the parent closes
    /// its descriptor once the last one is open.
    pub fn open(&self, opener: Opener, budget: &FdBudget) -> io::Result<OwnedFd> {
        let Some(parent) = &self.parent else {
            return opener(None, &self.name);
        };
        let result = parent
            .descriptor(opener)
            .and_then(|pfd| opener(Some(pfd.as_fd()), &self.name));
        parent.release(budget);
        result
    }

    /// Opens this directory like [`open`](Self::open), for a walk that
    /// stats a directory through its descriptor once open instead of by
    /// name before: when the open fails, the name is stat'ed in the parent
    /// (as `du` would have, to count its size) and that result comes with
    /// the error. No stat for the root, or when the parent cannot be
    /// reopened.
    pub fn open_or_stat(
        &self,
        opener: Opener,
        budget: &FdBudget,
    ) -> Result<OwnedFd, (io::Error, Option<io::Result<Stat>>)> {
        let Some(parent) = &self.parent else {
            return opener(None, &self.name).map_err(|cause| (cause, None));
        };
        let result = match parent.descriptor(opener) {
            Ok(pfd) => opener(Some(pfd.as_fd()), &self.name)
                .map_err(|cause| (cause, Some(sys::statx(Some(pfd.as_fd()), &self.name)))),
            Err(cause) => Err((cause, None)),
        };
        parent.release(budget);
        result
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

    /// This directory's descriptor: the kept one, or a new one opened down
    /// from the nearest ancestor that kept one.
    fn descriptor(&self, opener: Opener) -> io::Result<Arc<OwnedFd>> {
        if let Some(fd) = self.lock_fd().clone() {
            return Ok(fd);
        }
        let mut chain = vec![self];
        let mut base = None;
        let mut cur = self;
        while let Some(parent) = &cur.parent {
            if let Some(fd) = parent.lock_fd().clone() {
                base = Some(fd);
                break;
            }
            chain.push(parent);
            cur = parent;
        }
        let mut fd = base;
        for node in chain.iter().rev() {
            let next = opener(fd.as_deref().map(|f| f.as_fd()), &node.name)?;
            fd = Some(Arc::new(next));
        }
        Ok(fd.expect("the chain holds at least this node"))
    }
}

/// Appends `name` to a path being built, with a `/` unless the path is
/// empty or already ends with one.
pub(crate) fn push_name(path: &mut Vec<u8>, name: &[u8]) {
    if !path.is_empty() && path.last() != Some(&b'/') {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// How many directory descriptors the walk may keep open for queued
/// children, from `ulimit -n`.
#[derive(Debug)]
pub(crate) struct FdBudget {
    free: AtomicIsize,
}

impl FdBudget {
    /// Descriptors left for queued parents once each worker has room for
    /// the directory it reads, a reopened ancestor chain (two at a time)
    /// and what `std::fs::read_dir` opens, plus stdio and runtime fds.
    pub fn new(jobs: usize, limit: u64) -> FdBudget {
        let reserve = 16 + 4 * jobs as u64;
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

/// One entry of a directory being read, its name kept in a shared names
/// buffer with a NUL after it (one allocation per directory, not per entry).
#[derive(Clone, Copy)]
pub(crate) struct Ent {
    pub ino: u64,
    start: u32,
    len: u8,
    pub d_type: u8,
}

impl Ent {
    /// Appends `name` to `names` and returns the entry that refers to it.
    pub fn push(names: &mut Vec<u8>, ino: u64, name: &[u8], d_type: u8) -> Ent {
        let ent = Ent {
            ino,
            start: names.len() as u32,
            // The kernel caps names at 255 bytes (NAME_MAX).
            len: name.len().min(255) as u8,
            d_type,
        };
        names.extend_from_slice(name);
        names.push(0);
        ent
    }

    /// The entry's name in `names`, with its NUL.
    pub fn name<'n>(&self, names: &'n [u8]) -> &'n CStr {
        let start = self.start as usize;
        CStr::from_bytes_with_nul(&names[start..=start + usize::from(self.len)])
            .expect("names are stored with one NUL after them")
    }
}
