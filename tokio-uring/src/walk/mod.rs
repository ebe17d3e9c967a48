//! A recursive walk of a directory tree, as a [`Stream`] of entries.
//!
//! [`WalkBuilder::build`] gives a [`Walk`] for a tokio-uring runtime
//! (`!Send`, like [`Dir`]); [`WalkBuilder::spawn`] runs the same walk on a
//! thread of its own and gives a [`WalkReceiver`], which is `Send` and
//! works under `#[tokio::main]` or any other executor.
//!
//! Every directory below the root is opened relative to its parent's
//! descriptor with `O_NOFOLLOW | O_DIRECTORY` ([`DirHandle::open_at`]), so
//! the walk never follows a symbolic link and never leaves the tree. At
//! most [`max_open`](WalkBuilder::max_open) descriptors are open at once:
//! when there is no room to keep a parent open until all its
//! subdirectories are opened, it is closed and opened again later, name by
//! name, from the nearest ancestor still open (the root always is).
//! DESIGN.md explains why the walk cannot deadlock.

mod bridge;

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use std::cell::{Cell, RefCell};

use crate::fs::{Dir, DirBuilder, DirEntry, DirHandle, FileType, Metadata, STATX_TYPE};

pub use bridge::WalkReceiver;

/// What the walk does with a directory after the filter has seen it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    /// Yield the entry and, for a directory, walk into it.
    Continue,
    /// Yield the entry but do not walk into it (for a directory: its
    /// subtree is pruned and never opened).
    Skip,
}

type FilterFn = Box<dyn FnMut(&WalkEntry) -> Visit + Send>;

/// The settings of a walk.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::FileType;
/// use tokio_uring_getdents::walk::{Visit, WalkBuilder};
///
/// tokio_uring::start(async {
///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR"))
///         .max_open(32)
///         .filter(|entry| {
///             if entry.file_name() == "target" { Visit::Skip } else { Visit::Continue }
///         })
///         .build();
///     let mut files = 0;
///     while let Some(entry) = walk.next().await {
///         if entry?.file_type() == FileType::Regular {
///             files += 1;
///         }
///     }
///     assert!(files > 0);
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
pub struct WalkBuilder {
    root: PathBuf,
    dir: DirBuilder,
    max_open: usize,
    concurrency: usize,
    max_depth: usize,
    mask: Option<u32>,
    filter: Option<FilterFn>,
}

/// The default of [`WalkBuilder::max_open`].
pub const DEFAULT_MAX_OPEN: usize = 128;
/// The default of [`WalkBuilder::concurrency`].
pub const DEFAULT_CONCURRENCY: usize = 8;

impl WalkBuilder {
    /// A walk of `root` and everything below it, with
    /// [`DEFAULT_MAX_OPEN`] descriptors, [`DEFAULT_CONCURRENCY`]
    /// directories read at once, no depth limit, no `statx` and no filter.
    pub fn new(root: impl AsRef<Path>) -> WalkBuilder {
        WalkBuilder {
            root: root.as_ref().to_path_buf(),
            dir: DirBuilder::new(),
            max_open: DEFAULT_MAX_OPEN,
            concurrency: DEFAULT_CONCURRENCY,
            max_depth: usize::MAX,
            mask: None,
            filter: None,
        }
    }

    /// How the root is opened: buffer size, backend, and
    /// [`nofollow`](DirBuilder::nofollow) to refuse a root that is a
    /// symbolic link. Directories below the root inherit the buffer size
    /// and backend and are always opened without following links.
    pub fn dir_builder(mut self, dir: DirBuilder) -> WalkBuilder {
        self.dir = dir;
        self
    }

    /// The most directory descriptors the walk holds at once (at least 3).
    /// Descriptors the rest of the process uses are not counted: keep this
    /// below `ulimit -n` minus those.
    pub fn max_open(mut self, descriptors: usize) -> WalkBuilder {
        self.max_open = descriptors.max(3);
        self
    }

    /// The most directories being opened or read at once (at least 1; also
    /// limited to a quarter of [`max_open`](Self::max_open), so that
    /// parents can stay open).
    pub fn concurrency(mut self, directories: usize) -> WalkBuilder {
        self.concurrency = directories.max(1);
        self
    }

    /// Entries deeper than `depth` are not yielded (the root is depth 0,
    /// its entries depth 1); directories at `depth` are not opened.
    pub fn max_depth(mut self, depth: usize) -> WalkBuilder {
        self.max_depth = depth;
        self
    }

    /// `statx` every entry (relative to its directory, not following
    /// links) with `mask` (`fs::STATX_*` bits); the result is
    /// [`WalkEntry::metadata`]. An entry whose `statx` fails (it was
    /// removed in between) comes as an error instead.
    pub fn statx(mut self, mask: u32) -> WalkBuilder {
        self.mask = Some(mask);
        self
    }

    /// Called on each entry before it is yielded, in the order entries are
    /// yielded; [`Visit::Skip`] on a directory prunes its subtree. `Send`
    /// because with [`spawn`](Self::spawn) it runs on the walk's thread.
    pub fn filter(
        mut self,
        filter: impl FnMut(&WalkEntry) -> Visit + Send + 'static,
    ) -> WalkBuilder {
        self.filter = Some(Box::new(filter));
        self
    }

    /// The walk, for a tokio-uring runtime. Nothing is opened before it is
    /// first polled.
    pub fn build(self) -> Walk {
        let concurrency = self.concurrency.min((self.max_open / 4).max(1));
        // The root's descriptor and two per directory in progress (a
        // reopened ancestor and the child) are reserved; the rest keeps
        // parents open.
        let keep = self.max_open.saturating_sub(1 + 2 * concurrency);
        let root = Rc::new(Node {
            parent: None,
            name: OsString::new(),
            path: self.root.clone(),
            depth: 0,
            handle: RefCell::new(None),
            children_left: Cell::new(0),
        });
        let running: FuturesUnordered<Job> = FuturesUnordered::new();
        running.push(Box::pin(open_root(self.dir, Rc::clone(&root), self.mask)));
        Walk {
            root,
            root_dir: None,
            mask: self.mask,
            max_depth: self.max_depth,
            filter: self.filter,
            concurrency,
            keep,
            kept: Rc::new(Cell::new(0)),
            running,
            pending: Vec::new(),
            ready: VecDeque::new(),
            deferred: None,
        }
    }

    /// Runs the walk on a new thread with a tokio-uring runtime of its own
    /// and streams the entries back, for applications on another runtime
    /// (`#[tokio::main]`). Dropping the [`WalkReceiver`] stops the walk.
    ///
    /// # Errors
    ///
    /// When the thread cannot be created. When io_uring cannot be set up or
    /// entered in this process ([`io_uring_usable`](crate::io_uring_usable)),
    /// the receiver yields one error naming the root and the system call,
    /// then ends.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> std::io::Result<()> {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).spawn()?;
    ///     let mut n = 0;
    ///     while let Some(entry) = walk.next().await {
    ///         entry?;
    ///         n += 1;
    ///     }
    ///     assert!(n > 1);
    ///     Ok(())
    /// }
    /// ```
    pub fn spawn(self) -> io::Result<WalkReceiver> {
        bridge::spawn(self)
    }
}

impl std::fmt::Debug for WalkBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkBuilder")
            .field("root", &self.root)
            .field("max_open", &self.max_open)
            .field("concurrency", &self.concurrency)
            .field("max_depth", &self.max_depth)
            .field("statx", &self.mask)
            .field("filter", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

/// One entry of a walk.
#[derive(Clone, Debug)]
pub struct WalkEntry {
    path: PathBuf,
    depth: usize,
    file_type: FileType,
    ino: u64,
    metadata: Option<Metadata>,
}

impl WalkEntry {
    /// The root joined with the names down to this entry.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last component of [`path`](Self::path) (for the root, the
    /// whole path).
    pub fn file_name(&self) -> &OsStr {
        self.path.file_name().unwrap_or(self.path.as_os_str())
    }

    /// 0 for the root, 1 for its entries, and so on.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The type the directory entry gives (no `statx` needed); where the
    /// file system reports `DT_UNKNOWN`, the walk asks `statx`. Symbolic
    /// links are reported as such, never followed.
    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// The inode number from the directory entry.
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The `statx` result, when the walk was built with
    /// [`WalkBuilder::statx`].
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }
}

/// A directory of the walk: enough to open it again from an ancestor.
struct Node {
    parent: Option<Rc<Node>>,
    name: OsString,
    path: PathBuf,
    depth: usize,
    /// Kept open while subdirectories wait to be opened, if there was room.
    handle: RefCell<Option<DirHandle>>,
    /// Subdirectories not yet opened (or pruned).
    children_left: Cell<usize>,
}

type Job = Pin<Box<dyn Future<Output = Done>>>;

enum Done {
    Root(Rc<Node>, io::Result<Box<(Dir, WalkEntry)>>),
    Read {
        node: Rc<Node>,
        handle: Option<DirHandle>,
        items: Vec<io::Result<WalkEntry>>,
    },
}

/// The walk of a tree: a [`Stream`] of `io::Result<WalkEntry>`, the root
/// first (depth 0), each directory before its entries, in no particular
/// order otherwise. An error is an item (naming the path, see
/// [`PathError`](crate::PathError)); the walk goes on with the rest of the
/// tree.
///
/// Needs a tokio-uring runtime, like [`Dir`]; see
/// [`WalkBuilder::spawn`] for other runtimes. See [`WalkBuilder`] for an
/// example.
pub struct Walk {
    root: Rc<Node>,
    /// The open root, until its read starts.
    root_dir: Option<Dir>,
    mask: Option<u32>,
    max_depth: usize,
    filter: Option<FilterFn>,
    concurrency: usize,
    /// How many parents may be kept open, and how many are.
    keep: usize,
    kept: Rc<Cell<usize>>,
    running: FuturesUnordered<Job>,
    /// Directories to open, last in first out (depth first, so the number
    /// waiting stays near depth times fan-out).
    pending: Vec<Rc<Node>>,
    ready: VecDeque<(Option<Rc<Node>>, io::Result<WalkEntry>)>,
    /// The directory yielded last: it joins `pending` on the next poll,
    /// unless [`skip_current_dir`](Walk::skip_current_dir) comes first.
    deferred: Option<Rc<Node>>,
}

/// Entries buffered before the walk stops starting new directories.
const READY_HIGH: usize = 4096;

impl Walk {
    /// The next entry, or `None` at the end.
    pub async fn next(&mut self) -> Option<io::Result<WalkEntry>> {
        StreamExt::next(self).await
    }

    /// Ends the walk early: starts nothing more, lets the directories in
    /// progress finish (each is one open and one listing), and closes every
    /// descriptor.
    ///
    /// Dropping a `Walk` also closes everything, as the operations in
    /// flight complete, while the runtime runs; but a descriptor being
    /// opened when the runtime itself ends is not closed (see the crate's
    /// "Cancellation" notes). So a walk abandoned right before its runtime
    /// ends, as on a thread of its own, should be closed this way.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new("/usr").build();
    ///     let first = walk.next().await.unwrap()?;
    ///     assert_eq!(first.depth(), 0);
    ///     walk.close().await;
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn close(mut self) {
        self.pending.clear();
        self.deferred = None;
        self.ready.clear();
        // Each result is dropped as it comes: descriptors close then.
        while self.running.next().await.is_some() {}
    }

    /// Do not walk into the directory yielded last (no effect if the last
    /// entry was not a directory, or was pruned already).
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::walk::WalkBuilder;
    ///
    /// tokio_uring::start(async {
    ///     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).build();
    ///     let root = walk.next().await.unwrap()?;
    ///     assert_eq!(root.depth(), 0);
    ///     walk.skip_current_dir();
    ///     assert!(walk.next().await.is_none());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn skip_current_dir(&mut self) {
        if let Some(node) = self.deferred.take() {
            match &node.parent {
                Some(parent) => child_done(parent, &self.kept),
                None => self.root_dir = None,
            }
        }
    }

    fn start_jobs(&mut self) {
        while self.running.len() < self.concurrency && self.ready.len() < READY_HIGH {
            let Some(node) = self.pending.pop() else {
                return;
            };
            let dir = if node.parent.is_none() {
                self.root_dir.take()
            } else {
                None
            };
            self.running.push(Box::pin(read(node, dir, self.mask)));
        }
    }

    fn finish(&mut self, done: Done) {
        match done {
            Done::Root(node, Ok(opened)) => {
                let (dir, entry) = *opened;
                *node.handle.borrow_mut() = Some(dir.handle());
                self.root_dir = Some(dir);
                self.ready.push_back((Some(node), Ok(entry)));
            }
            Done::Root(_, Err(e)) => self.ready.push_back((None, Err(e))),
            Done::Read {
                node,
                handle,
                items,
            } => {
                if let Some(parent) = &node.parent {
                    child_done(parent, &self.kept);
                }
                let dirs = items
                    .iter()
                    .filter(|i| matches!(i, Ok(e) if e.file_type == FileType::Directory))
                    .count();
                node.children_left.set(dirs);
                if node.parent.is_some() && dirs > 0 && self.kept.get() < self.keep {
                    *node.handle.borrow_mut() = handle;
                    self.kept.set(self.kept.get() + 1);
                }
                for item in items {
                    self.ready.push_back((Some(Rc::clone(&node)), item));
                }
            }
        }
    }

    /// Applies the filter and the depth limit to an entry about to be
    /// yielded; a directory to walk into becomes `deferred`.
    fn admit(&mut self, parent: Option<Rc<Node>>, entry: &WalkEntry) {
        let visit = match &mut self.filter {
            Some(filter) => filter(entry),
            None => Visit::Continue,
        };
        let is_dir = entry.file_type == FileType::Directory;
        let enter = is_dir && visit == Visit::Continue && entry.depth < self.max_depth;
        let Some(parent) = parent else { return };
        if entry.depth == 0 {
            // The root: `parent` is its own node.
            if enter {
                self.deferred = Some(parent);
            } else {
                self.root_dir = None;
            }
            return;
        }
        if enter {
            self.deferred = Some(Rc::new(Node {
                name: entry.file_name().to_os_string(),
                path: entry.path.clone(),
                depth: entry.depth,
                parent: Some(parent),
                handle: RefCell::new(None),
                children_left: Cell::new(0),
            }));
        } else if is_dir {
            child_done(&parent, &self.kept);
        }
    }
}

impl Stream for Walk {
    type Item = io::Result<WalkEntry>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(node) = this.deferred.take() {
            this.pending.push(node);
        }
        loop {
            this.start_jobs();
            if let Some((parent, item)) = this.ready.pop_front() {
                if let Ok(entry) = &item {
                    this.admit(parent, entry);
                }
                return Poll::Ready(Some(item));
            }
            match this.running.poll_next_unpin(cx) {
                Poll::Ready(Some(done)) => this.finish(done),
                Poll::Ready(None) if this.pending.is_empty() => return Poll::Ready(None),
                Poll::Ready(None) => {}
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl std::fmt::Debug for Walk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walk")
            .field("root", &self.root.path)
            .field("running", &self.running.len())
            .field("pending", &self.pending.len())
            .field("ready", &self.ready.len())
            .field("kept_open", &self.kept.get())
            .finish_non_exhaustive()
    }
}

/// One subdirectory of `parent` is opened or pruned; the parent's
/// descriptor closes once none is left.
fn child_done(parent: &Node, kept: &Cell<usize>) {
    let left = parent.children_left.get().saturating_sub(1);
    parent.children_left.set(left);
    if left == 0 && parent.parent.is_some() && parent.handle.borrow_mut().take().is_some() {
        kept.set(kept.get() - 1);
    }
}

async fn open_root(builder: DirBuilder, node: Rc<Node>, mask: Option<u32>) -> Done {
    let result = async {
        let dir = builder.open(&node.path).await?;
        let metadata = match mask {
            Some(mask) => Some(dir.metadata(mask | STATX_TYPE).await?),
            None => None,
        };
        let ino = match &metadata {
            Some(m) => m.ino(),
            None => dir.file_id()?.ino,
        };
        let entry = WalkEntry {
            path: node.path.clone(),
            depth: 0,
            file_type: FileType::Directory,
            ino,
            metadata,
        };
        Ok(Box::new((dir, entry)))
    }
    .await;
    Done::Root(node, result)
}

/// Opens `node` relative to its parent, or, if the parent was closed,
/// through the names from the nearest ancestor still open. Holds at most
/// two descriptors at a time of its own (the ancestor's clone counts as
/// one: the walk may close that ancestor meanwhile).
async fn open(node: &Node) -> io::Result<Dir> {
    let parent = node.parent.as_ref().expect("only the root has no parent");
    let mut chain: Vec<&Node> = Vec::new();
    let mut at = parent.as_ref();
    let start = loop {
        if let Some(handle) = at.handle.borrow().as_ref() {
            break handle.clone();
        }
        chain.push(at);
        at = at
            .parent
            .as_ref()
            .expect("the root's handle is kept while the walk runs");
    };
    let mut current = start;
    for step in chain.iter().rev() {
        let dir = current.open_at(&step.name).await?;
        current = dir.handle();
    }
    current.open_at(&node.name).await
}

async fn read(node: Rc<Node>, dir: Option<Dir>, mask: Option<u32>) -> Done {
    let dir = match dir {
        Some(dir) => Ok(dir),
        None => open(&node).await,
    };
    let mut dir = match dir {
        Ok(dir) => dir,
        Err(e) => {
            return Done::Read {
                node,
                handle: None,
                items: vec![Err(e)],
            }
        }
    };
    let handle = dir.handle();
    let mut entries: Vec<DirEntry> = Vec::new();
    let mut failure = None;
    while let Some(item) = dir.next().await {
        match item {
            Ok(entry) => entries.push(entry),
            Err(e) => failure = Some(e),
        }
    }
    let mut items = Vec::with_capacity(entries.len() + 1);
    // Bounded batches of statx in flight, so a huge directory does not
    // put a million operations on the ring at once.
    for batch in entries.chunks(64) {
        let stats: Vec<Option<io::Result<Metadata>>> = match mask {
            Some(mask) => futures_util::future::join_all(
                batch.iter().map(|e| handle.statx(e, mask | STATX_TYPE)),
            )
            .await
            .into_iter()
            .map(Some)
            .collect(),
            None => {
                let handle = &handle;
                let unknown = batch.iter().map(|e| async move {
                    if e.file_type() == FileType::Unknown {
                        Some(handle.statx(e, STATX_TYPE).await)
                    } else {
                        None
                    }
                });
                futures_util::future::join_all(unknown).await
            }
        };
        for (entry, stat) in batch.iter().zip(stats) {
            let path = node.path.join(entry.file_name());
            items.push(match stat {
                Some(Err(e)) => Err(e),
                Some(Ok(meta)) => Ok(WalkEntry {
                    path,
                    depth: node.depth + 1,
                    file_type: if entry.file_type() == FileType::Unknown {
                        meta.file_type()
                    } else {
                        entry.file_type()
                    },
                    ino: entry.ino(),
                    metadata: mask.map(|_| meta),
                }),
                None => Ok(WalkEntry {
                    path,
                    depth: node.depth + 1,
                    file_type: entry.file_type(),
                    ino: entry.ino(),
                    metadata: None,
                }),
            });
        }
    }
    items.extend(failure.map(Err));
    if let Err(e) = dir.close().await {
        items.push(Err(e));
    }
    Done::Read {
        node,
        handle: Some(handle),
        items,
    }
}
