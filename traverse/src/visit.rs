//! How a walk reports what it finds: listed paths and errors go to one
//! [`Visitor`] per worker, made by a [`VisitorBuilder`].

use std::path::Path;

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
