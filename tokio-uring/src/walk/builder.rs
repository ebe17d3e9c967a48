//! The walk's settings: [`WalkBuilder`], its defaults, the filter's answer
//! ([`Visit`]), and `build`, which turns them into a [`Walk`].

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use futures_util::stream::FuturesUnordered;

use super::entry::DirName;
use super::node::Node;
use super::ordered::{self, Ordered};
use super::IgnoreRules;
use super::{bridge, ring, Done, Job, Walk, WalkEntry, WalkReceiver};
use crate::fs::DirBuilder;

mod order;

/// What the walk does with an entry after the filter has seen it.
/// Non-exhaustive: more ways to treat an entry may come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Visit {
    /// Yield the entry and, for a directory, walk into it.
    Continue,
    /// Yield the entry but do not walk into it (a directory's subtree is
    /// never opened; the directory itself is still yielded).
    Prune,
    /// Neither yield the entry nor walk into it, as if it were not there
    /// (what `filter_entry` does in walkdir and in traverse).
    Skip,
}

pub(super) type FilterFn = Box<dyn Fn(&WalkEntry) -> Visit + Send + Sync>;
pub(super) type SortFn = Box<dyn Fn(&WalkEntry, &WalkEntry) -> std::cmp::Ordering + Send + Sync>;

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
    pub(super) root: PathBuf,
    dir: DirBuilder,
    max_open: usize,
    concurrency: usize,
    max_depth: usize,
    min_depth: usize,
    mask: Option<u32>,
    filter: Option<FilterFn>,
    follow_links: bool,
    follow_root_links: bool,
    contents_first: bool,
    sort: Option<SortFn>,
    ignore: Option<IgnoreRules>,
}

/// The default of [`WalkBuilder::max_open`], or half the soft
/// `RLIMIT_NOFILE` when that is lower. With 128, a walk of /usr (17 100
/// directories) closed and reopened parents 26 800 times, which cost it
/// more CPU than the rest of its overhead over a `read_dir` recursion.
pub const DEFAULT_MAX_OPEN: usize = 512;

/// [`DEFAULT_MAX_OPEN`], or half the soft descriptor limit if lower.
fn default_max_open() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable `struct rlimit`.
    let half = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        usize::try_from(lim.rlim_cur / 2).unwrap_or(usize::MAX)
    } else {
        DEFAULT_MAX_OPEN
    };
    DEFAULT_MAX_OPEN.min(half).max(3)
}
/// The default of [`WalkBuilder::concurrency`].
pub const DEFAULT_CONCURRENCY: usize = 8;

impl WalkBuilder {
    /// A walk of `root` and everything below it, with
    /// [`DEFAULT_MAX_OPEN`] descriptors (fewer under a low `ulimit -n`),
    /// [`DEFAULT_CONCURRENCY`] directories read at once, no depth limit, no
    /// `statx` and no filter.
    pub fn new(root: impl AsRef<Path>) -> WalkBuilder {
        WalkBuilder {
            root: root.as_ref().to_path_buf(),
            dir: DirBuilder::new(),
            max_open: default_max_open(),
            concurrency: DEFAULT_CONCURRENCY,
            max_depth: usize::MAX,
            min_depth: 0,
            mask: None,
            filter: None,
            follow_links: false,
            follow_root_links: true,
            contents_first: false,
            sort: None,
            ignore: None,
        }
    }

    /// How the root is opened: buffer size, backend, and
    /// [`nofollow`](DirBuilder::nofollow) to refuse a root that is a
    /// symbolic link. Directories below the root inherit the buffer size
    /// and backend and are always opened without following links.
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn dir_builder(mut self, dir: DirBuilder) -> WalkBuilder {
        self.dir = dir;
        self
    }

    /// The most directory descriptors the walk holds at once (at least 3).
    /// Descriptors the rest of the process uses are not counted: keep this
    /// below `ulimit -n` minus those.
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn max_open(mut self, descriptors: usize) -> WalkBuilder {
        self.max_open = descriptors.max(3);
        self
    }

    /// The most directories being opened or read at once (at least 1; also
    /// limited to a quarter of [`max_open`](Self::max_open), so that
    /// parents can stay open).
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn concurrency(mut self, directories: usize) -> WalkBuilder {
        self.concurrency = directories.max(1);
        self
    }

    /// Entries deeper than `depth` are not yielded (the root is depth 0,
    /// its entries depth 1); directories at `depth` are not opened. Never
    /// below [`min_depth`](Self::min_depth), as in walkdir: the later of
    /// the two settings wins.
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn max_depth(mut self, depth: usize) -> WalkBuilder {
        self.max_depth = depth.max(self.min_depth);
        self
    }

    /// `statx` every entry (relative to its directory, not following
    /// links) with `mask` (`fs::STATX_*` bits); the result is
    /// [`WalkEntry::metadata`]. An entry whose `statx` fails (it was
    /// removed in between) comes as an error instead. Where the kernel
    /// has readdirplus, the metadata comes with each directory's reads
    /// ([`DirBuilder::entry_metadata`]) and no call is made per entry.
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn statx(mut self, mask: u32) -> WalkBuilder {
        self.mask = Some(mask);
        self
    }

    /// Called on each entry before it is yielded, one call at a time, in
    /// the order entries are yielded; [`Visit::Skip`] on a directory prunes
    /// its subtree. `Send + Sync` because it may run on another thread
    /// (and so that the builder is `Send + Sync`, as walkdir's is): with
    /// [`spawn`](Self::spawn), the walk's; on kernels without GETDENTS,
    /// and in a walk in order, the blocking threads that read the
    /// directories (the root's call excepted), so that a directory is never
    /// opened before the filter has seen it. State it keeps goes in a
    /// `Mutex` or an atomic. A panic in it comes out of the stream's next
    /// poll (or, in a walk in order, ends the walk).
    #[must_use = "a setter returns the changed builder, which does nothing until built or spawned"]
    pub fn filter(
        mut self,
        filter: impl Fn(&WalkEntry) -> Visit + Send + Sync + 'static,
    ) -> WalkBuilder {
        self.filter = Some(Box::new(filter));
        self
    }

    /// The walk, for a tokio-uring runtime. Nothing is opened before it is
    /// first polled.
    pub fn build(self) -> Walk {
        if self.follow_links || self.contents_first || self.sort.is_some() || self.ignore.is_some()
        {
            return self.build_ordered();
        }
        let concurrency = self.concurrency.min((self.max_open / 4).max(1));
        // The root's descriptor and two per directory in progress (a
        // reopened ancestor and the child) are reserved; the rest keeps
        // parents open.
        let keep = self.max_open.saturating_sub(1 + 2 * concurrency);
        let root = Node::new(None, DirName::root(&self.root), 0);
        let running: FuturesUnordered<Job> = FuturesUnordered::new();
        let (node, builder, mask) = (Rc::clone(&root), self.dir, self.mask);
        let follow = self.follow_root_links;
        running.push(Box::pin(async move {
            let opened = ring::open_root(builder, &node, mask, follow).await;
            Done::Root(node, opened)
        }));
        Walk {
            root,
            root_dir: None,
            fallback: false,
            mask: self.mask,
            max_depth: self.max_depth,
            min_depth: self.min_depth,
            ordered: None,
            filter: self.filter,
            concurrency,
            keep,
            kept: Rc::new(Cell::new(0)),
            running,
            walkers: None,
            pending: Vec::new(),
            ready: VecDeque::new(),
            deferred: None,
        }
    }

    /// The walk in order: one blocking thread walks depth first.
    fn build_ordered(self) -> Walk {
        let settings = ordered::Settings {
            root: self.root.clone(),
            follow_links: self.follow_links,
            follow_root_links: self.follow_root_links,
            contents_first: self.contents_first,
            sort: self.sort,
            ignore: self.ignore,
            filter: self.filter,
            max_depth: self.max_depth,
            max_open: self.max_open,
            mask: self.mask,
        };
        Walk {
            root: Node::new(None, DirName::root(&self.root), 0),
            root_dir: None,
            fallback: false,
            mask: self.mask,
            max_depth: self.max_depth,
            min_depth: self.min_depth,
            ordered: Some(Ordered::new(settings)),
            filter: None,
            concurrency: 1,
            keep: 0,
            kept: Rc::new(Cell::new(0)),
            running: FuturesUnordered::new(),
            walkers: None,
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
            .field("min_depth", &self.min_depth)
            .field("statx", &self.mask)
            .field("filter", &self.filter.is_some())
            .field("follow_links", &self.follow_links)
            .field("follow_root_links", &self.follow_root_links)
            .field("contents_first", &self.contents_first)
            .field("sorted", &self.sort.is_some())
            .field("ignore_rules", &self.ignore)
            .finish_non_exhaustive()
    }
}
