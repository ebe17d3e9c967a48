//! The `tokio` engine: `tokio::fs` on a multi-threaded runtime, the
//! baseline the benchmarks compare with. Every call is a blocking call on
//! tokio's thread pool; `jobs` directories are read at once.
//!
//! Directories are opened like the `std` engine's, through
//! `/proc/self/fd/N/name`, so no path grows past `PATH_MAX`.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use io_uring_getdents::dirent::FileType;
use tokio::task::JoinSet;

use crate::engine::{window_full, Shared, Worker};
use crate::error::{Error, Op};
use crate::node::{Cursor, DirNode, ListingPlace};
use crate::stdfs::{c_name, open_proc, proc_path, stat_by_statx};
use crate::sys::{self, Stat};
use crate::totals::Accumulator;
use crate::visit::{Entry, Metadata, Visitor, VisitorBuilder};

/// Walks below `root` (already counted) with `jobs` directories at once.
pub(crate) fn walk(
    shared: &Arc<Shared>,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let mut total = Accumulator::new(shared.config.count_links, shared.config.latest_time);
    let mut visitor = visitors.build();
    // The runtime's own threads only pass work around (every `tokio::fs`
    // call runs on the blocking pool, which grows with the `jobs` tasks),
    // so one per CPU at most: `-j 4096` asked for 4 096 of them, and
    // tokio panics when the system refuses one.
    let cpus = crate::sys::cpus();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(shared.config.jobs.min(cpus))
        .build()
    {
        Ok(rt) => rt,
        Err(cause) => {
            visitor.error(Error::new(root.path(), Op::Read, cause));
            total.totals.errors += 1;
            return total;
        }
    };
    // Bounded: a task listing faster than the visitor takes its entries
    // (a directory that never ends) waits for it instead of piling them
    // up.
    let (tx, rx) = mpsc::sync_channel(EVENTS_IN_FLIGHT);
    // One cursor for all tasks (opens are short, on the blocking pool):
    // the directory opened last is where the next reopen starts.
    let cursor = Arc::new(Mutex::new(Cursor::default()));
    let driver = {
        let shared = Arc::clone(shared);
        runtime.spawn(async move {
            let mut tasks = JoinSet::new();
            let mut stack = vec![root];
            loop {
                while tasks.len() < shared.config.jobs && !shared.interrupted() {
                    let Some(dir) = stack.pop() else { break };
                    let task_shared = Arc::clone(&shared);
                    let tx = tx.clone();
                    let cursor = Arc::clone(&cursor);
                    tasks.spawn(async move { read_dir(task_shared, dir, tx, cursor).await });
                }
                let Some(joined) = tasks.join_next().await else {
                    break;
                };
                match joined {
                    Ok((acc, children)) => {
                        total.merge(acc);
                        stack.extend(children);
                    }
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => {}
                }
            }
            total
        })
    };
    // The calling thread hands the tasks' findings to the visitor while
    // they run, until every sender (the driver's, the tasks') is gone.
    for event in rx {
        event.deliver(visitor.as_mut());
    }
    match runtime.block_on(driver).map_err(|e| e.try_into_panic()) {
        Ok(total) => total,
        Err(Ok(panic)) => std::panic::resume_unwind(panic),
        // Cancelled: only a runtime shut down does that, and this one runs
        // until it is dropped here.
        Err(Err(_)) => unreachable!("the driver task is never cancelled"),
    }
}

/// Findings of the tasks waiting for the visitor, at most.
const EVENTS_IN_FLIGHT: usize = 4096;

/// Reads one directory and stats its entries; returns the totals and the
/// subdirectories.
async fn read_dir(
    shared: Arc<Shared>,
    dir: Arc<DirNode>,
    tx: mpsc::SyncSender<Event>,
    cursor: Arc<Mutex<Cursor>>,
) -> (Accumulator, Vec<Arc<DirNode>>) {
    let forward = Forward {
        tx,
        sorted: shared
            .order
            .as_ref()
            .filter(|o| !o.contents_first())
            .map(|_| Vec::new()),
    };
    let mut worker = Worker::new(&shared, Box::new(forward));
    let mut children = Vec::new();
    worker.enter(&dir);
    let opening = {
        let (dir, shared) = (Arc::clone(&dir), Arc::clone(&shared));
        tokio::task::spawn_blocking(move || {
            let mut cursor = cursor.lock().unwrap_or_else(|p| p.into_inner());
            dir.open(open_proc, &shared.budget, &mut cursor)
        })
        .await
    };
    let fd = match opening.unwrap_or_else(|e| Err(io::Error::other(e))) {
        Ok(fd) => fd,
        Err(cause) => {
            worker.dir_error(Op::Open, cause);
            worker.end_dir(&shared);
            return (worker.into_accumulator(), children);
        }
    };
    let mut listing = match tokio::fs::read_dir(proc_path(&fd)).await {
        Ok(read) => Some(read),
        Err(cause) => {
            worker.dir_error(Op::Read, cause);
            None
        }
    };
    let (mut entries, mut seq) = (Vec::new(), 0u32);
    // A window at a time, so that a directory that never ends keeps one in
    // memory at most.
    while let Some(read) = listing.as_mut() {
        let (mut name_bytes, mut ended) = (0, false);
        while !ended && !window_full(entries.len(), name_bytes) {
            if shared.interrupted() {
                ended = true;
                continue;
            }
            match read.next_entry().await {
                Ok(Some(entry)) => {
                    let name = entry.file_name();
                    name_bytes += name.len();
                    let place = ListingPlace::next(&mut seq, entry.ino());
                    entries.push((entry, name, place));
                }
                Ok(None) => ended = true,
                Err(cause) => {
                    worker.dir_error(Op::Read, cause);
                    ended = true;
                }
            }
        }
        if ended {
            listing = None;
            dir.listing_read(shared.listing_rule(u64::from(seq), fd.as_fd()));
        }
        if shared.inode_order(entries.len()) {
            entries.sort_unstable_by_key(|(e, _, _)| e.ino());
        }
        let mask = shared.config.statx_mask();
        for (entry, name, place) in entries.drain(..) {
            // Every entry: one stat may take a long round trip.
            if shared.interrupted() {
                break;
            }
            let d_type = entry
                .file_type()
                .await
                .map_or(libc::DT_UNKNOWN, |ft| FileType::from(ft).d_type());
            if shared.skips((&dir, fd.as_fd()), name.as_bytes(), entry.ino(), d_type) {
                continue;
            }
            let st = if shared.needs_stat(d_type) {
                let stat = if stat_by_statx(&shared, d_type) {
                    let (fd, cname) = (Arc::clone(&fd), c_name(&name));
                    tokio::task::spawn_blocking(move || sys::statx(Some(fd.as_fd()), &cname, mask))
                        .await
                        .unwrap_or_else(|e| Err(io::Error::other(e)))
                } else {
                    entry
                        .metadata()
                        .await
                        .map(|meta| Stat::from_metadata(&meta))
                };
                match stat {
                    Ok(st) => Some(st),
                    Err(cause) => {
                        worker.stat_failed(&shared, name.as_bytes(), d_type, cause);
                        continue;
                    }
                }
            } else {
                None
            };
            worker.at(place);
            if worker.entry(&shared, name.as_bytes(), d_type, st.as_ref()) {
                children.push(DirNode::child_with_stat(
                    &dir,
                    &c_name(&name),
                    st.as_ref(),
                    place,
                ));
            }
        }
    }
    dir.keep(fd, children.len(), &shared.budget);
    worker.end_dir(&shared);
    (worker.into_accumulator(), children)
}

/// What a directory task hands to the driver's visitor.
enum Event {
    /// Path, type, depth, metadata, whether a link was followed, place in
    /// the listing.
    Visit(
        PathBuf,
        FileType,
        usize,
        Option<Metadata>,
        bool,
        Option<ListingPlace>,
    ),
    Error(Error),
    /// A sorted directory's entries, which other tasks' must not split.
    Sorted(Vec<Event>),
}

/// Tasks run on the runtime's threads; they send what they find here and
/// the driver passes it on to its own visitor.
/// In a sorted listing a task's entries (one directory's, sorted) go as
/// one event when it ends. Contents first, every event goes at once: the
/// order hands each directory's entries over under its lock, so they stay
/// together and come after those of their subtree.
struct Forward {
    tx: mpsc::SyncSender<Event>,
    sorted: Option<Vec<Event>>,
}

impl Visitor for Forward {
    fn visit_entry(&mut self, entry: &Entry<'_>) {
        let event = Event::Visit(
            entry.path().to_owned(),
            entry.file_type(),
            entry.depth(),
            entry.metadata().copied(),
            entry.link_followed(),
            entry.listing_place(),
        );
        match &mut self.sorted {
            Some(sorted) => sorted.push(event),
            // The receiver lives until every task has ended.
            None => drop(self.tx.send(event)),
        }
    }

    fn error(&mut self, err: Error) {
        let _ = self.tx.send(Event::Error(err));
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        if let Some(sorted) = self.sorted.take().filter(|s| !s.is_empty()) {
            let _ = self.tx.send(Event::Sorted(sorted));
        }
    }
}

impl Event {
    /// Hands the event to `visitor`.
    fn deliver(self, visitor: &mut dyn Visitor) {
        match self {
            Event::Visit(path, file_type, depth, metadata, followed, place) => {
                let entry = Entry::new(&path, file_type, depth)
                    .followed(followed)
                    .at(place);
                visitor.visit_entry(&entry.with_metadata(metadata));
            }
            Event::Error(err) => visitor.error(err),
            Event::Sorted(events) => events.into_iter().for_each(|e| e.deliver(visitor)),
        }
    }
}
