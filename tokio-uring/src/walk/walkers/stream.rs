//! The stream's side of the walkers: starting them, taking their queued
//! entries whole, `skip_current_dir`, stopping them.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::mem;
use std::panic::resume_unwind;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use super::walker::Walker;
use super::{lock, Anchor, Chunk, Held, Item, Settings, Shared, State, Task};
use crate::fd::SharedFd;
use crate::fs::FileType;
use crate::walk::entry::DirName;

/// The stream's side of the walkers.
pub(in crate::walk) struct Walkers {
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
    pub(in crate::walk) fn start(root: Arc<DirName>, fd: SharedFd, settings: Settings) -> Walkers {
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
    pub(in crate::walk) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Item>> {
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
    pub(in crate::walk) fn skip_current_dir(&mut self) {
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
    pub(in crate::walk) async fn close(mut self) {
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
