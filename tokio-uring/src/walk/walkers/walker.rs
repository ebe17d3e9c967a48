//! A walker's loop on the blocking pool: tasks taken from the shared
//! queue, a task's tree walked depth first from a stack of frames,
//! directories shared with hungry walkers, and the skips seen.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use io_uring_getdents::syscall::open_dir_at;

use super::{lock, Anchor, Held, Item, Shared, Task, BUFFER};
use crate::error::PathError;
use crate::walk::entry::DirName;

mod read;

/// A directory read whose subdirectories are still to be walked.
struct Frame {
    dir: Arc<DirName>,
    depth: usize,
    /// Kept open if there was room; otherwise opened again when needed.
    fd: Option<Arc<Held>>,
    /// Walked from the end; shared from the front with hungry walkers.
    subdirs: Vec<CString>,
}

/// A directory open for reading: a fresh descriptor, or an anchor's.
enum Open {
    Own(OwnedFd),
    Held(Arc<Held>),
}

impl Open {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Open::Own(fd) => fd.as_fd(),
            Open::Held(held) => held.fd(),
        }
    }
}

pub(super) struct Walker {
    shared: Arc<Shared>,
    buf: Vec<u8>,
    /// The task's anchor, above every frame.
    anchor: Option<Anchor>,
    /// Ancestors of the directory being walked that have subdirectories
    /// left, nearest last. A walker holds at most two descriptors of its
    /// own beyond the kept ones: the directory it reads, and while it
    /// opens one again, the step before.
    stack: Vec<Frame>,
    items: Vec<Item>,
    skips_seen: usize,
    skipped: Vec<(Arc<DirName>, OsString)>,
}

impl Walker {
    pub(super) fn new(shared: Arc<Shared>) -> Walker {
        Walker {
            shared,
            buf: Vec::new(),
            anchor: None,
            stack: Vec::new(),
            items: Vec::new(),
            skips_seen: 0,
            skipped: Vec::new(),
        }
    }

    pub(super) fn run(mut self) {
        let shared = Arc::clone(&self.shared);
        let ran = catch_unwind(AssertUnwindSafe(|| {
            self.buf.resize(BUFFER, 0);
            let mut had = false;
            while let Some(task) = self.next_task(had) {
                had = true;
                self.walk(task);
            }
        }));
        if let Err(panic) = ran {
            let mut state = lock(&shared);
            state.panic.get_or_insert(panic);
            shared.stop.store(true, Ordering::Relaxed);
            let waker = state.waker.take();
            shared.work_cv.notify_all();
            shared.room_cv.notify_all();
            drop(state);
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    /// The next directory to walk, or `None` when the walk is over or
    /// stopped. `had` says this walker just finished one.
    fn next_task(&self, had: bool) -> Option<Task> {
        let mut state = lock(&self.shared);
        if had {
            state.busy -= 1;
        }
        loop {
            if self.shared.stopped() {
                return None;
            }
            if let Some(task) = state.work.pop() {
                state.busy += 1;
                return Some(task);
            }
            if state.busy == 0 {
                state.done = true;
                self.shared.work_cv.notify_all();
                let waker = state.waker.take();
                drop(state);
                if let Some(waker) = waker {
                    waker.wake();
                }
                return None;
            }
            // Idle now: what is queued should not wait for the others.
            if !state.out.is_empty() {
                if let Some(waker) = state.waker.take() {
                    waker.wake();
                }
            }
            self.shared.hungry.fetch_add(1, Ordering::Relaxed);
            state = self
                .shared
                .work_cv
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            self.shared.hungry.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn walk(&mut self, task: Task) {
        self.check_skips();
        if self.left_out(&task.dir) {
            return;
        }
        let opened = if Arc::ptr_eq(&task.dir, &task.anchor.dir) {
            Ok(Open::Held(Arc::clone(&task.anchor.fd)))
        } else {
            open_down(&task.anchor.dir, &task.anchor.fd, &task.dir).map(Open::Own)
        };
        self.anchor = Some(task.anchor);
        self.enter(opened, task.dir, task.depth);
        while !self.shared.stopped() {
            self.check_skips();
            self.share();
            let Some(top) = self.stack.last_mut() else {
                break;
            };
            let Some(name) = top.subdirs.pop() else {
                self.stack.pop();
                continue;
            };
            let dir = DirName::child(&top.dir, OsStr::from_bytes(name.to_bytes()));
            let depth = top.depth + 1;
            let last = top.subdirs.is_empty();
            let opened = self.open_child(&name).map(Open::Own);
            if last {
                // Its descriptor closes before the child's is kept.
                self.stack.pop();
            }
            self.enter(opened, dir, depth);
        }
        self.stack.clear();
        self.anchor = None;
    }

    /// Opens `name` in the directory on top of the stack, opening that
    /// directory again first if it was not kept.
    fn open_child(&mut self, name: &CStr) -> io::Result<OwnedFd> {
        let top = self.stack.len() - 1;
        if let Some(held) = &self.stack[top].fd {
            return open_dir_at(Some(held.fd()), name);
        }
        let (anchor_dir, anchor_fd) = self.stack[..top]
            .iter()
            .rev()
            .find_map(|f| f.fd.as_ref().map(|fd| (&f.dir, fd)))
            .unwrap_or_else(|| {
                let anchor = self.anchor.as_ref().expect("a task has an anchor");
                (&anchor.dir, &anchor.fd)
            });
        let parent = open_down(anchor_dir, anchor_fd, &self.stack[top].dir)?;
        let child = open_dir_at(Some(parent.as_fd()), name);
        if !self.stack[top].subdirs.is_empty() {
            self.stack[top].fd = self.shared.keep(parent);
        }
        child
    }

    /// Reads a directory just opened (or the error of its open) and, if it
    /// has subdirectories to walk, puts it on the stack.
    fn enter(&mut self, opened: io::Result<Open>, dir: Arc<DirName>, depth: usize) {
        let open = match opened {
            Ok(open) => open,
            Err(e) => {
                let err = PathError::wrap_at("open directory", dir.join(None), e, depth);
                self.items.push(Err(err));
                self.emit(&dir, depth + 1, &mut Vec::new());
                return;
            }
        };
        if let Err(err) = self.check_loop(open.fd(), &dir, depth) {
            self.items.push(Err(err));
            self.emit(&dir, depth + 1, &mut Vec::new());
            return;
        }
        let subdirs = self.read(open.fd(), &dir, depth);
        if subdirs.is_empty() {
            return;
        }
        let fd = match open {
            Open::Held(held) => Some(held),
            Open::Own(fd) => self.shared.keep(fd),
        };
        self.stack.push(Frame {
            dir,
            depth,
            fd,
            subdirs,
        });
    }

    /// Records the identity of `dir`, just opened as `fd`; an error if an
    /// ancestor has the same (a bind mount of it below itself).
    fn check_loop(&self, fd: BorrowedFd<'_>, dir: &DirName, depth: usize) -> io::Result<()> {
        let id = dir_id(fd).map_err(|e| PathError::wrap_at("stat", dir.join(None), e, depth))?;
        match dir.opened_as(id) {
            Some(ancestor) => Err(PathError::walk_loop(
                dir.join(None),
                ancestor.join(None),
                depth,
            )),
            None => Ok(()),
        }
    }

    /// Gives directories to walkers waiting for work, the shallowest first
    /// (their subtrees are the largest), keeping one for itself.
    fn share(&mut self) {
        if self.shared.hungry.load(Ordering::Relaxed) == 0 {
            return;
        }
        let top = self.stack.len().saturating_sub(1);
        let spare = |(at, f): (usize, &Frame)| f.subdirs.len() > usize::from(at == top);
        if !self.stack.iter().enumerate().any(spare) {
            return;
        }
        let want = {
            let state = lock(&self.shared);
            self.shared
                .hungry
                .load(Ordering::Relaxed)
                .saturating_sub(state.work.len())
        };
        let mut given = Vec::new();
        for at in 0..self.stack.len() {
            let keep_one = usize::from(at == top);
            while given.len() < want && self.stack[at].subdirs.len() > keep_one {
                let name = self.stack[at].subdirs.swap_remove(0);
                let frame = &self.stack[at];
                let anchor = match &frame.fd {
                    Some(fd) => Anchor {
                        dir: Arc::clone(&frame.dir),
                        fd: Arc::clone(fd),
                    },
                    None => self.anchor_above(at),
                };
                given.push(Task {
                    anchor,
                    dir: DirName::child(&frame.dir, OsStr::from_bytes(name.to_bytes())),
                    depth: frame.depth + 1,
                });
            }
        }
        if given.is_empty() {
            return;
        }
        self.stack.retain(|f| !f.subdirs.is_empty());
        let tasks = given.len();
        lock(&self.shared).work.extend(given);
        for _ in 0..tasks {
            self.shared.work_cv.notify_one();
        }
    }

    /// The nearest open directory above the frame at `at`.
    fn anchor_above(&self, at: usize) -> Anchor {
        let kept = self.stack[..at].iter().rev().find_map(|f| {
            f.fd.as_ref().map(|fd| Anchor {
                dir: Arc::clone(&f.dir),
                fd: Arc::clone(fd),
            })
        });
        kept.unwrap_or_else(|| self.anchor.clone().expect("a task has an anchor"))
    }

    /// Drops the frames that `skip_current_dir` left out since the last
    /// look.
    fn check_skips(&mut self) {
        if self.shared.skips.load(Ordering::Acquire) == self.skips_seen {
            return;
        }
        self.skipped = lock(&self.shared).skipped.clone();
        self.skips_seen = self.skipped.len();
        let (skipped, epoch) = (&self.skipped, self.skips_seen);
        if let Some(at) = self
            .stack
            .iter()
            .position(|f| f.dir.is_left_out(skipped, epoch))
        {
            self.stack.truncate(at);
        }
    }

    fn left_out(&self, dir: &DirName) -> bool {
        self.skips_seen > 0 && dir.is_left_out(&self.skipped, self.skips_seen)
    }
}

/// A directory's device and inode, through its descriptor.
fn dir_id(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let flags = libc::AT_EMPTY_PATH | libc::AT_STATX_DONT_SYNC;
    let stx = io_uring_getdents::syscall::statx(Some(fd), c"", flags, libc::STATX_INO)?;
    Ok((
        libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
        stx.stx_ino,
    ))
}

/// Opens `target` from its ancestor `anchor` (open as `fd`), name by name,
/// holding at most two descriptors of its own at a time.
fn open_down(anchor: &Arc<DirName>, fd: &Held, target: &Arc<DirName>) -> io::Result<OwnedFd> {
    let mut names: Vec<&OsStr> = Vec::new();
    let mut at = target;
    while !Arc::ptr_eq(at, anchor) {
        names.push(at.name());
        at = at.parent().expect("an anchor is an ancestor");
    }
    let (first, below) = names.split_last().expect("the target is below its anchor");
    let mut opened = open_dir_at(Some(fd.fd()), *first)?;
    for name in below.iter().rev() {
        opened = open_dir_at(Some(opened.as_fd()), *name)?;
    }
    Ok(opened)
}
