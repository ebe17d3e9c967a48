//! How a walk reports what it finds: listed paths and errors go to one
//! [`Visitor`] per worker, made by a [`VisitorBuilder`].

use std::path::Path;
use std::sync::Mutex;

use io_uring_getdents::dirent::FileType;

use crate::error::Error;

/// Receives what one worker finds: listed paths and errors. Each worker
/// has its own, made by a [`VisitorBuilder`], so a visitor needs no lock;
/// it is dropped when its worker ends (flush output there).
///
/// # Example
///
/// ```
/// use traverse::{Error, Visitor};
/// struct Print;
/// impl Visitor for Print {
///     fn visit(&mut self, path: &std::path::Path) {
///         println!("{}", path.display());
///     }
///     fn error(&mut self, err: Error) {
///         eprintln!("{err}");
///     }
/// }
/// ```
pub trait Visitor: Send {
    /// A path below the root, or the root, in listing mode
    /// ([`WalkBuilder::list`](crate::WalkBuilder::list)); never called otherwise.
    fn visit(&mut self, path: &Path);
    /// A listed path with its type: from the directory entry, or from the
    /// stat the walk made where the entry had none (never
    /// [`FileType::Unknown`] then). The walk calls this one; by default
    /// it passes the path on to [`visit`](Visitor::visit).
    ///
    /// ```
    /// use traverse::{Error, FileType, Visitor};
    /// struct Dirs(Vec<std::path::PathBuf>);
    /// impl Visitor for Dirs {
    ///     fn visit(&mut self, _: &std::path::Path) {}
    ///     fn visit_entry(&mut self, path: &std::path::Path, file_type: FileType) {
    ///         if file_type == FileType::Directory {
    ///             self.0.push(path.to_owned());
    ///         }
    ///     }
    ///     fn error(&mut self, _: Error) {}
    /// }
    /// ```
    fn visit_entry(&mut self, path: &Path, file_type: FileType) {
        let _ = file_type;
        self.visit(path);
    }
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
///     fn visit(&mut self, _: &std::path::Path) {}
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
    fn visit(&mut self, _: &Path) {}
    fn error(&mut self, _: Error) {}
}

impl VisitorBuilder for Ignore {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(Ignore)
    }
}

/// What a closure visitor ([`Walk::run_with`](crate::Walk::run_with))
/// is handed: what [`Visitor::visit`] and [`Visitor::error`] get.
///
/// ```
/// use traverse::{Event, FileType};
/// let describe = |event: Event<'_>| match event {
///     Event::Path(path, file_type) => format!("{file_type:?} {}", path.display()),
///     Event::Error(err) => format!("failed: {err}"),
/// };
/// assert_eq!(describe(Event::Path("a/b".as_ref(), FileType::Regular)), "Regular a/b");
/// ```
#[derive(Debug)]
pub enum Event<'a> {
    /// A listed path ([`WalkBuilder::list`](crate::WalkBuilder::list))
    /// and its type, as [`Visitor::visit_entry`] gets them.
    Path(&'a Path, FileType),
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
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(event);
    }
}

impl<F: FnMut(Event<'_>) + Send> Visitor for ClosureWorker<'_, F> {
    fn visit(&mut self, path: &Path) {
        self.call(Event::Path(path, FileType::Unknown));
    }

    fn visit_entry(&mut self, path: &Path, file_type: FileType) {
        self.call(Event::Path(path, file_type));
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
