//! How a walk reports what it finds: listed paths and errors go to one
//! [`Visitor`] per worker, made by a [`VisitorBuilder`].

use std::path::Path;
use std::sync::Mutex;

use io_uring_getdents::dirent::FileType;

use crate::error::Error;
use crate::node::ListingPlace;
use crate::sys::Stat;

mod metadata;

pub use metadata::Metadata;

/// Receives what one worker finds: listed entries and errors. Each worker
/// has its own, made by a [`VisitorBuilder`], so a visitor needs no lock;
/// it is dropped when its worker ends (flush output there).
///
/// # Example
///
/// ```
/// use traverse::{Entry, Error, Visitor};
/// struct Print;
/// impl Visitor for Print {
///     fn visit_entry(&mut self, entry: &Entry<'_>) {
///         println!("{}", entry.path().display());
///     }
///     fn error(&mut self, err: Error) {
///         eprintln!("{err}");
///     }
/// }
/// ```
pub trait Visitor: Send {
    /// A listed entry below the root, or the root, with its path, type
    /// and depth, in listing mode
    /// ([`WalkBuilder::list`](crate::WalkBuilder::list)); never called
    /// otherwise.
    ///
    /// ```
    /// use traverse::{Entry, Error, FileType, Visitor};
    /// struct TopDirs(Vec<std::path::PathBuf>);
    /// impl Visitor for TopDirs {
    ///     fn visit_entry(&mut self, entry: &Entry<'_>) {
    ///         if entry.file_type() == FileType::Directory && entry.depth() == 1 {
    ///             self.0.push(entry.path().to_owned());
    ///         }
    ///     }
    ///     fn error(&mut self, _: Error) {}
    /// }
    /// ```
    fn visit_entry(&mut self, entry: &Entry<'_>);
    /// An entry or directory that could not be read.
    fn error(&mut self, err: Error);
}

/// Makes one [`Visitor`] per worker.
///
/// # Example
///
/// ```
/// use traverse::{Error, Visitor, VisitorBuilder};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// struct CountErrors(AtomicU64);
/// struct Counter<'a>(&'a AtomicU64);
/// impl Visitor for Counter<'_> {
///     fn visit_entry(&mut self, _: &traverse::Entry<'_>) {}
///     fn error(&mut self, _: Error) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// impl VisitorBuilder for CountErrors {
///     fn build(&self) -> Box<dyn Visitor + '_> {
///         Box::new(Counter(&self.0))
///     }
/// }
///
/// let errors = CountErrors(AtomicU64::new(0));
/// let walk = traverse::WalkBuilder::new().build();
/// let summary = walk.run(std::path::Path::new("/nonexistent/x"), &errors);
/// assert_eq!(summary.totals.errors, 1);
/// assert_eq!(errors.0.load(Ordering::Relaxed), 1);
/// ```
pub trait VisitorBuilder: Sync {
    /// A visitor for one worker.
    fn build(&self) -> Box<dyn Visitor + '_>;
}

/// A visitor that ignores everything (errors are still counted in the
/// totals).
///
/// ```
/// let walk = traverse::WalkBuilder::new().build();
/// let summary = walk.run(std::path::Path::new("."), &traverse::Ignore);
/// assert!(summary.totals.dirs >= 1);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Ignore;

impl Visitor for Ignore {
    fn visit_entry(&mut self, _: &Entry<'_>) {}
    fn error(&mut self, _: Error) {}
}

impl VisitorBuilder for Ignore {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(Ignore)
    }
}

/// A listed entry ([`WalkBuilder::list`](crate::WalkBuilder::list)), as
/// [`Visitor::visit_entry`] and [`Event::Entry`] hand it out.
///
/// ```
/// use traverse::{Entry, FileType};
/// let entry = Entry::new("root/a/b".as_ref(), FileType::Regular, 2);
/// assert_eq!(entry.path(), std::path::Path::new("root/a/b"));
/// assert_eq!((entry.file_type(), entry.depth()), (FileType::Regular, 2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    path: &'a Path,
    file_type: FileType,
    depth: usize,
    metadata: Option<Metadata>,
    /// A symbolic link the walk followed ([`WalkBuilder::follow_links`](crate::WalkBuilder::follow_links)).
    followed: bool,
    place: Option<ListingPlace>,
}

impl<'a> Entry<'a> {
    /// An entry, for visitors' tests: walks make their own.
    pub fn new(path: &'a Path, file_type: FileType, depth: usize) -> Entry<'a> {
        Entry {
            path,
            file_type,
            depth,
            metadata: None,
            followed: false,
            place: None,
        }
    }

    /// The entry at `place` in its directory's listing.
    pub(crate) fn at(self, place: Option<ListingPlace>) -> Entry<'a> {
        Entry { place, ..self }
    }

    /// The entry as a symbolic link the walk followed (`yes`): its type
    /// and metadata are its target's.
    pub(crate) fn followed(self, yes: bool) -> Entry<'a> {
        Entry {
            followed: yes,
            ..self
        }
    }

    /// Whether the walk followed this symbolic link, as [`followed`](Self::followed)
    /// set it (a visitor that holds or forwards the entry carries it on).
    pub(crate) fn link_followed(&self) -> bool {
        self.followed
    }

    /// The entry with its metadata, as walks with
    /// [`list_metadata`](crate::WalkBuilder::list_metadata) hand it out.
    pub(crate) fn with_stat(self, stat: Option<&Stat>) -> Entry<'a> {
        self.with_metadata(stat.map(|st| Metadata(*st)))
    }

    /// The entry with `metadata`, as another worker saw it.
    pub(crate) fn with_metadata(self, metadata: Option<Metadata>) -> Entry<'a> {
        Entry { metadata, ..self }
    }

    /// The root's path followed by the names below it.
    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// The type: from the directory entry, or from the stat the walk made
    /// where the entry had none (so never [`FileType::Unknown`]).
    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// Levels below the root: 0 for the root, 1 for its entries.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Where the entry came in its directory's listing (the order
    /// `getdents64` gave), in every engine: what GNU du's order is made of
    /// ([`ListingRule`](crate::ListingRule)). `None` for the root and for
    /// entries made with [`Entry::new`]. Example: [`ListingPlace`].
    pub fn listing_place(&self) -> Option<ListingPlace> {
        self.place
    }

    /// Whether the path is a symbolic link (walkdir's `path_is_symlink`):
    /// one of type [`FileType::Symlink`], or with
    /// [`follow_links`](crate::WalkBuilder::follow_links) one the walk
    /// followed, whose type is its target's.
    ///
    /// ```
    /// use traverse::{Entry, FileType};
    /// let entry = Entry::new("root/link".as_ref(), FileType::Symlink, 1);
    /// assert!(entry.path_is_symlink());
    /// ```
    pub fn path_is_symlink(&self) -> bool {
        self.followed || self.file_type == FileType::Symlink
    }

    /// What the entry's stat said. In a walk with
    /// [`list`](crate::WalkBuilder::list) and
    /// [`list_metadata`](crate::WalkBuilder::list_metadata) every listed
    /// entry has it, in every engine: the root, directories, symlinks and
    /// files (an entry whose stat fails is reported as an error, not
    /// listed). `None` only in walks without `list_metadata`, where most
    /// entries are not stat'ed, and for entries made with
    /// [`Entry::new`].
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("sub"))?;
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut without = 0;
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         without += usize::from(e.metadata().is_none());
    ///     }
    /// });
    /// assert_eq!(without, 0);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }
}

/// What a closure visitor ([`Walk::run_with`](crate::Walk::run_with))
/// is handed: what [`Visitor::visit_entry`] and [`Visitor::error`] get.
///
/// ```
/// use traverse::{Entry, Event, FileType};
/// let describe = |event: Event<'_>| match event {
///     Event::Entry(e) => format!("{:?} {} at {}", e.file_type(), e.path().display(), e.depth()),
///     Event::Error(err) => format!("failed: {err}"),
/// };
/// let entry = Entry::new("a/b".as_ref(), FileType::Regular, 1);
/// assert_eq!(describe(Event::Entry(entry)), "Regular a/b at 1");
/// ```
#[derive(Debug)]
pub enum Event<'a> {
    /// A listed entry ([`WalkBuilder::list`](crate::WalkBuilder::list)).
    Entry(Entry<'a>),
    /// An entry or directory that could not be read.
    Error(Error),
}

/// One closure shared by every worker, called under a lock.
pub(crate) struct Closure<F>(Mutex<F>);

impl<F> Closure<F> {
    pub(crate) fn new(f: F) -> Closure<F> {
        Closure(Mutex::new(f))
    }
}

struct ClosureWorker<'a, F>(&'a Mutex<F>);

impl<F: FnMut(Event<'_>) + Send> ClosureWorker<'_, F> {
    fn call(&mut self, event: Event<'_>) {
        // Poisoned when the closure panicked on another worker, which ends
        // the walk with an error: the remaining events still arrive.
        let mut f = crate::sys::lock(self.0);
        f(event);
    }
}

impl<F: FnMut(Event<'_>) + Send> Visitor for ClosureWorker<'_, F> {
    fn visit_entry(&mut self, entry: &Entry<'_>) {
        self.call(Event::Entry(*entry));
    }

    fn error(&mut self, err: Error) {
        self.call(Event::Error(err));
    }
}

impl<F: FnMut(Event<'_>) + Send> VisitorBuilder for Closure<F> {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(ClosureWorker(&self.0))
    }
}
