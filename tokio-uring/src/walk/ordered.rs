//! The walk in walkdir's order, for the options that need an order or a
//! path through symbolic links: sorting, `contents_first`,
//! `follow_links`, ignore rules. One thread of the blocking pool walks the
//! tree depth first with plain system calls (each directory opened
//! relative to its parent, read whole with `getdents64`, sorted, its
//! ignore files read), and hands the entries to the stream in batches
//! over a bounded channel; it stops when the stream is dropped.
//!
//! `dfs.rs` is the thread's side.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::mem;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::sync::mpsc;

use super::builder::{FilterFn, SortFn};
use super::entry::DirName;
use super::IgnoreRules;
use super::WalkEntry;
use crate::error::PathError;
use crate::fs::FileType;

mod dfs;
mod sys;

/// The metadata of the path `name`, following symbolic links.
pub(super) fn statx_followed(name: &std::ffi::CStr, mask: u32) -> io::Result<crate::fs::Metadata> {
    let stx = sys::statx(None, name, true, mask | crate::fs::STATX_TYPE)?;
    Ok(crate::fs::Metadata::from_statx(&stx))
}

type Item = io::Result<WalkEntry>;

/// Batches in the channel: the walker runs at most this far ahead.
const BATCHES: usize = 8;
/// Entries per batch.
const BATCH: usize = 512;

/// The settings of a walk in order.
pub(super) struct Settings {
    pub(super) root: PathBuf,
    pub(super) follow_links: bool,
    pub(super) follow_root_links: bool,
    pub(super) contents_first: bool,
    pub(super) sort: Option<SortFn>,
    pub(super) ignore: Option<IgnoreRules>,
    pub(super) filter: Option<FilterFn>,
    pub(super) max_depth: usize,
    pub(super) max_open: usize,
    pub(super) mask: Option<u32>,
}

/// What the stream and the walker share: the stop, and the directories
/// `skip_current_dir` left out (parent and name).
struct Shared {
    stop: AtomicBool,
    skips: AtomicUsize,
    skipped: Mutex<Vec<(Arc<DirName>, OsString)>>,
}

/// The stream's side.
pub(super) struct Ordered {
    settings: Option<Settings>,
    shared: Arc<Shared>,
    rx: Option<mpsc::Receiver<Vec<Item>>>,
    current: VecDeque<Item>,
    /// The directory yielded last, if the walk will enter it: its parent,
    /// name and depth.
    last_dir: Option<(Arc<DirName>, OsString, usize)>,
    /// Entries deeper than this are dropped: they are below a skipped
    /// directory (in walkdir's order they all come right after it).
    dropping: Option<usize>,
}

impl Ordered {
    pub(super) fn new(settings: Settings) -> Ordered {
        Ordered {
            settings: Some(settings),
            shared: Arc::new(Shared {
                stop: AtomicBool::new(false),
                skips: AtomicUsize::new(0),
                skipped: Mutex::new(Vec::new()),
            }),
            rx: None,
            current: VecDeque::new(),
            last_dir: None,
            dropping: None,
        }
    }

    /// Starts the walker on the first poll, where a runtime is certain.
    fn start(&mut self) {
        let Some(settings) = self.settings.take() else {
            return;
        };
        let (tx, rx) = mpsc::channel(BATCHES);
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || dfs::Dfs::new(settings, shared, tx).run());
        self.rx = Some(rx);
    }

    pub(super) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.start();
        loop {
            let Some(item) = self.current.pop_front() else {
                let rx = self.rx.as_mut().expect("started above");
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(batch)) => {
                        self.current = VecDeque::from(batch);
                        continue;
                    }
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                }
            };
            let depth = match &item {
                Ok(e) => e.depth(),
                Err(e) => PathError::of(e).and_then(PathError::depth).unwrap_or(0),
            };
            if let Some(skipped) = self.dropping {
                if depth > skipped {
                    continue;
                }
                self.dropping = None;
            }
            self.last_dir = match &item {
                Ok(e) if e.file_type() == FileType::Directory => e
                    .dir
                    .clone()
                    .map(|parent| (parent, e.file_name().to_os_string(), e.depth())),
                _ => None,
            };
            return Poll::Ready(Some(item));
        }
    }

    /// Leaves out what is below the directory yielded last: dropped here
    /// as it comes, and the walker stops reading it.
    pub(super) fn skip_current_dir(&mut self) {
        let Some((parent, name, depth)) = self.last_dir.take() else {
            return;
        };
        self.dropping = Some(depth);
        let mut skipped = self
            .shared
            .skipped
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        skipped.push((parent, name));
        self.shared.skips.store(skipped.len(), Ordering::Release);
    }
}

impl Drop for Ordered {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // The walker sees the closed channel at its next send.
        drop(self.rx.take());
        drop(mem::take(&mut self.current));
    }
}
