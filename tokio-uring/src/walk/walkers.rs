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
//!
//! Here, what the walkers and the stream share: the queue of entries, the
//! work, the kept descriptors' slots. `stream.rs` is the stream's side,
//! `walker.rs` a walker's loop, `walker/read.rs` its reads.

use std::any::Any;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use super::entry::{DirName, WalkEntry};
use super::{FilterFn, READY_HIGH};
use crate::fd::SharedFd;

mod stream;
mod walker;

pub(super) use stream::Walkers;

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
