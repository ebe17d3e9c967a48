//! The walk on kernels without GETDENTS: walkers on tokio's blocking pool,
//! one per job slot for the whole walk, each walking its share of the tree
//! depth first with plain system calls (`openat` relative to the parent
//! with `O_NOFOLLOW | O_DIRECTORY`, `getdents64`, `statx`).
//!
//! Without GETDENTS every read would be a hop to a blocking thread and
//! every STATX one to an io-wq worker, and a walk that hands directories to
//! the pool in groups still pays a wake-up each way per group. A walker
//! never waits for the stream between directories: it appends each read's
//! entries to a queue the stream takes whole, and wakes the stream only
//! once thousands are waiting, a millisecond has passed, or it runs out of
//! work. DESIGN.md ("The walk without GETDENTS") has the measurements.

use std::any::Any;
use std::collections::VecDeque;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::mem;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::{getdents64, open_dir_at, statx};
use tokio::task::JoinHandle;

use super::entry::{DirName, Name, WalkEntry};
use super::{FilterFn, Visit, READY_HIGH};
use crate::error::PathError;
use crate::fd::SharedFd;
use crate::fs::{FileType, Metadata, STATX_TYPE};

type Item = io::Result<WalkEntry>;

/// Entries waiting before a walker wakes the stream: one wake-up per this
/// many entries rather than one per directory.
const WAKE_AT: usize = READY_HIGH / 2;
/// ... or once the oldest of them has waited this long, so a slow tree
/// still shows its entries as they come.
const LATENCY: Duration = Duration::from_millis(1);
/// Each walker's `getdents64` buffer.
const BUFFER: usize = 64 * 1024;

/// What the walkers need to know of the walk's settings.
pub(super) struct Settings {
    pub(super) mask: Option<u32>,
    pub(super) max_depth: usize,
    pub(super) filter: Option<FilterFn>,
    pub(super) walkers: usize,
    /// Descriptors that may be kept open for subdirectories, beyond the
    /// root and two per walker.
    pub(super) keep: usize,
}

/// A directory descriptor walkers share. Its slot among the kept ones is
/// given back when the last holder drops it, after the close, so the
/// budget is never exceeded for an instant.
struct Held {
    fd: Option<SharedFd>,
    slot: Option<Arc<AtomicUsize>>,
}

impl Held {
    fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_ref().expect("taken only on drop").borrow()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.fd.take());
        if let Some(slot) = &self.slot {
            slot.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// An open directory that the directories below it can be opened from.
#[derive(Clone)]
struct Anchor {
    dir: Arc<DirName>,
    fd: Arc<Held>,
}

/// A directory for a walker to walk, with everything below it.
struct Task {
    anchor: Anchor,
    dir: Arc<DirName>,
    depth: usize,
}

/// One read's entries, all of one directory: the stream leaves them out
/// whole when that directory was skipped.
struct Chunk {
    dir: Arc<DirName>,
    items: Vec<Item>,
}

struct Shared {
    state: Mutex<State>,
    /// Walkers wait here for work (or the end, or a stop)...
    work_cv: Condvar,
    /// ... and here for room in the queue.
    room_cv: Condvar,
    /// Walkers waiting for work; read without the lock to decide whether
    /// to share any.
    hungry: AtomicUsize,
    stop: AtomicBool,
    /// How many directories `skip_current_dir` left out so far.
    skips: AtomicUsize,
    /// Free slots for kept descriptors.
    slots: Arc<AtomicUsize>,
    mask: Option<u32>,
    max_depth: usize,
    filtered: bool,
}

struct State {
    /// Entries for the stream, in the order it yields them.
    out: VecDeque<Chunk>,
    queued: usize,
    /// When the stream was last left entries without being woken.
    since: Option<Instant>,
    waker: Option<Waker>,
    /// Called here, under the lock, so that the order of its calls is the
    /// order of `out`.
    filter: Option<FilterFn>,
    work: Vec<Task>,
    /// Walkers with a task; none and no work left is the end of the walk.
    busy: usize,
    done: bool,
    /// A walker's panic (from the filter), for the stream to resume.
    panic: Option<Box<dyn Any + Send>>,
    waiting_for_room: usize,
    /// Emptied vectors, for the walkers' next reads.
    spares: Vec<Vec<Item>>,
    /// Directories left out by `skip_current_dir`: parent and name.
    skipped: Vec<(Arc<DirName>, OsString)>,
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // A walker that panicked left its panic in the state; the state itself
    // stays consistent (every change is made whole under the lock).
    shared.state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Keeps `fd` open for subdirectories if a slot is free.
    fn keep(&self, fd: OwnedFd) -> Option<Arc<Held>> {
        let took = self
            .slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        took.ok().map(|_| {
            Arc::new(Held {
                fd: Some(SharedFd::new(fd)),
                slot: Some(Arc::clone(&self.slots)),
            })
        })
    }
}

/// The stream's side of the walkers.
pub(super) struct Walkers {
    shared: Arc<Shared>,
    jobs: Vec<JoinHandle<()>>,
    taken: VecDeque<Chunk>,
    current: VecDeque<Item>,
    spares: Vec<Vec<Item>>,
    /// The directory yielded last (parent and name), for
    /// [`skip_current_dir`](Self::skip_current_dir).
    last_dir: Option<(Arc<DirName>, OsString)>,
    skipped: Vec<(Arc<DirName>, OsString)>,
}

impl Walkers {
    /// Starts the walkers on the tree below `root`, open as `fd`.
    pub(super) fn start(root: Arc<DirName>, fd: SharedFd, settings: Settings) -> Walkers {
        let filtered = settings.filter.is_some();
        let anchor = Anchor {
            dir: Arc::clone(&root),
            fd: Arc::new(Held {
                fd: Some(fd),
                slot: None,
            }),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                out: VecDeque::new(),
                queued: 0,
                since: None,
                waker: None,
                filter: settings.filter,
                work: vec![Task {
                    anchor,
                    dir: root,
                    depth: 0,
                }],
                busy: 0,
                done: false,
                panic: None,
                waiting_for_room: 0,
                spares: Vec::new(),
                skipped: Vec::new(),
            }),
            work_cv: Condvar::new(),
            room_cv: Condvar::new(),
            hungry: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            skips: AtomicUsize::new(0),
            slots: Arc::new(AtomicUsize::new(settings.keep)),
            mask: settings.mask,
            max_depth: settings.max_depth,
            filtered,
        });
        let jobs = (0..settings.walkers.max(1))
            .map(|_| {
                let walker = Walker::new(Arc::clone(&shared));
                tokio::task::spawn_blocking(move || walker.run())
            })
            .collect();
        Walkers {
            shared,
            jobs,
            taken: VecDeque::new(),
            current: VecDeque::new(),
            spares: Vec::new(),
            last_dir: None,
            skipped: Vec::new(),
        }
    }
}

impl Walkers {
    pub(super) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        loop {
            if let Some(item) = self.current.pop_front() {
                self.last_dir = match &item {
                    Ok(e) if e.file_type() == FileType::Directory => e
                        .dir
                        .clone()
                        .map(|parent| (parent, e.file_name().to_os_string())),
                    _ => None,
                };
                return Poll::Ready(Some(item));
            }
            let emptied = Vec::from(mem::take(&mut self.current));
            if emptied.capacity() > 0 {
                self.spares.push(emptied);
            }
            if let Some(chunk) = self.taken.pop_front() {
                let epoch = self.skipped.len();
                if epoch > 0 && chunk.dir.is_left_out(&self.skipped, epoch) {
                    let mut items = chunk.items;
                    items.clear();
                    self.spares.push(items);
                } else {
                    self.current = VecDeque::from(chunk.items);
                }
                continue;
            }
            let mut state = lock(&self.shared);
            if let Some(panic) = state.panic.take() {
                drop(state);
                resume_unwind(panic);
            }
            // Two spares a walker are enough to read with.
            let room = (2 * self.jobs.len()).saturating_sub(state.spares.len());
            let give = self.spares.len().min(room);
            state.spares.extend(self.spares.drain(..give));
            self.spares.clear();
            if !state.out.is_empty() {
                mem::swap(&mut state.out, &mut self.taken);
                state.queued = 0;
                state.since = None;
                if state.waiting_for_room > 0 {
                    self.shared.room_cv.notify_all();
                }
                continue;
            }
            if state.done {
                return Poll::Ready(None);
            }
            state.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
    }

    /// Leaves out what is below the directory yielded last. The walkers
    /// may have read into it already: what they found is dropped here, and
    /// they stop walking it at their next directory.
    pub(super) fn skip_current_dir(&mut self) {
        let Some(dir) = self.last_dir.take() else {
            return;
        };
        let mut state = lock(&self.shared);
        state.skipped.push(dir.clone());
        self.skipped.push(dir);
        self.shared
            .skips
            .store(self.skipped.len(), Ordering::Release);
    }

    /// Stops the walkers and waits until each has closed its descriptors.
    pub(super) async fn close(mut self) {
        self.stop();
        for job in mem::take(&mut self.jobs) {
            // A walker's panic was for the stream to report; the walk is
            // being abandoned.
            let _ = job.await;
        }
    }

    fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Under the lock, so that no walker is between its check and its
        // wait.
        let _state = lock(&self.shared);
        self.shared.work_cv.notify_all();
        self.shared.room_cv.notify_all();
    }
}

/// Dropping the stream stops the walkers: each sees it at its next
/// directory (or next read of a large one) and closes what it holds.
impl Drop for Walkers {
    fn drop(&mut self) {
        self.stop();
    }
}

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

struct Walker {
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
    fn new(shared: Arc<Shared>) -> Walker {
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

    fn run(mut self) {
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
                let err = PathError::wrap("open directory", dir.join(None), e);
                self.items.push(Err(err));
                self.emit(&dir, depth + 1, &mut Vec::new());
                return;
            }
        };
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

    /// Reads `dir` to its end, handing each read's entries to the stream;
    /// returns the subdirectories to walk.
    fn read(&mut self, fd: BorrowedFd<'_>, dir: &Arc<DirName>, depth: usize) -> Vec<CString> {
        let mut subdirs = Vec::new();
        let mask = self.shared.mask;
        while !self.shared.stopped() {
            let n = match getdents64(fd, &mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let err = PathError::wrap("read directory", dir.join(None), e);
                    self.items.push(Err(err));
                    break;
                }
            };
            // The entries' names are slices of one copy of the read.
            let names: Arc<[u8]> = Arc::from(&self.buf[..n]);
            let mut broken = false;
            for record in DirentIter::new(&names) {
                let record = match record {
                    Ok(record) => record,
                    Err(e) => {
                        let err = PathError::wrap("read directory", dir.join(None), e.into());
                        self.items.push(Err(err));
                        broken = true;
                        break;
                    }
                };
                if record.is_dot_or_dotdot() {
                    continue;
                }
                let name = record.name();
                let start = name.as_ptr() as usize - names.as_ptr() as usize;
                let shared = Name::within(&names, start, name.count_bytes());
                let item = entry(
                    dir,
                    depth,
                    fd,
                    mask,
                    (name, shared),
                    record.file_type(),
                    record.ino(),
                );
                self.items.push(item);
            }
            if broken {
                break;
            }
            self.emit(dir, depth + 1, &mut subdirs);
        }
        self.emit(dir, depth + 1, &mut subdirs);
        subdirs
    }

    /// Hands `self.items` (entries of `dir`, at `depth`) to the stream,
    /// after the filter, and adds the subdirectories to walk to `subdirs`.
    /// Waits while the stream has `READY_HIGH` entries not taken.
    fn emit(&mut self, dir: &Arc<DirName>, depth: usize, subdirs: &mut Vec<CString>) {
        if self.items.is_empty() {
            return;
        }
        let enter = depth < self.shared.max_depth;
        let wants = |e: &WalkEntry| enter && e.file_type() == FileType::Directory;
        let name = |e: &WalkEntry| CString::new(e.file_name().as_bytes()).ok();
        if !self.shared.filtered {
            let dirs = self.items.iter().filter_map(|i| i.as_ref().ok());
            subdirs.extend(dirs.filter(|e| wants(e)).filter_map(name));
        }
        let mut state = lock(&self.shared);
        while state.queued >= READY_HIGH && !self.shared.stopped() {
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
            state.waiting_for_room += 1;
            state = self
                .shared
                .room_cv
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.waiting_for_room -= 1;
        }
        if self.shared.stopped() {
            self.items.clear();
            return;
        }
        if let Some(filter) = state.filter.as_mut() {
            self.items.retain(|item| {
                let Ok(e) = item else {
                    return true;
                };
                let visit = filter(e);
                if visit == Visit::Continue && wants(e) {
                    subdirs.extend(name(e));
                }
                visit != Visit::Skip
            });
        }
        let spare = state.spares.pop().unwrap_or_default();
        let items = mem::replace(&mut self.items, spare);
        if !items.is_empty() {
            state.queued += items.len();
            state.out.push_back(Chunk {
                dir: Arc::clone(dir),
                items,
            });
        }
        let now = Instant::now();
        let since = *state.since.get_or_insert(now);
        if state.queued >= WAKE_AT || now - since >= LATENCY {
            if let Some(waker) = state.waker.take() {
                drop(state);
                waker.wake();
            }
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

/// One entry, stat'ed relative to `fd` when a mask was given or the file
/// system did not say its type.
fn entry(
    dir: &Arc<DirName>,
    depth: usize,
    fd: BorrowedFd<'_>,
    mask: Option<u32>,
    (name, shared): (&CStr, Name),
    file_type: FileType,
    ino: u64,
) -> io::Result<WalkEntry> {
    let stat_mask = match mask {
        Some(mask) => Some(mask | STATX_TYPE),
        None if file_type == FileType::Unknown => Some(STATX_TYPE),
        None => None,
    };
    let (file_type, metadata) = match stat_mask {
        None => (file_type, None),
        Some(stat_mask) => {
            let stx = statx(Some(fd), name, 0, stat_mask)
                .map_err(|e| PathError::wrap("stat", dir.join(Some(shared.as_os_str())), e))?;
            let meta = Metadata::from_statx(&stx);
            let file_type = if file_type == FileType::Unknown {
                meta.file_type()
            } else {
                file_type
            };
            (file_type, mask.map(|_| meta))
        }
    };
    Ok(WalkEntry::new(
        Some(Arc::clone(dir)),
        shared,
        depth + 1,
        file_type,
        ino,
        metadata,
    ))
}
