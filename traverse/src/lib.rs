//! File counts and byte totals of directory trees, exact like `find` and
//! `du`, read by one of several engines.
//!
//! The layers follow ripgrep's `ignore` walker: a [`WalkBuilder`] makes a
//! [`Walk`]; the walk runs an engine whose workers each keep their own
//! totals (no shared counters, no locks while counting) and merges them at
//! the end; errors are values ([`Error`], with the path and the cause)
//! handed to a [`Visitor`], and the walk goes on.
//!
//! Totals per root ([`Totals`]): regular files, directories (the root
//! included), symlinks, other entries, the apparent size (`du -sb`: the
//! `st_size` of every entry, a hard-linked inode once) and the disk usage
//! (`du -sB1`: `st_blocks * 512`, hard links once). Symlinks are never
//! followed; every directory is opened relative to its parent's descriptor
//! with `O_NOFOLLOW | O_DIRECTORY`, so there is no `PATH_MAX` limit and a
//! rename cannot lead the walk out of its tree.
//!
//! # Example
//!
//! ```
//! use traverse::{Engine, WalkBuilder};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), b"hello")?;
//! std::fs::create_dir(dir.path().join("sub"))?;
//!
//! let walk = WalkBuilder::new().engine(Engine::Threads).jobs(2).build();
//! let summary = walk.totals(dir.path());
//! assert_eq!(summary.totals.files, 1);
//! assert_eq!(summary.totals.dirs, 2);
//! assert!(!summary.partial);
//! # Ok::<_, std::io::Error>(())
//! ```
#![warn(missing_docs)]

mod engine;
mod error;
mod links;
mod node;
mod queue;
mod stdfs;
mod sys;
mod threads;
mod tokio_fs;
mod totals;
mod uring;

use std::collections::HashSet;
use std::ffi::CString;
use std::fmt;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use error::{Error, Op};
pub use totals::Totals;

use engine::{Shared, Worker};
use node::{DirNode, FdBudget};
use totals::{Accumulator, InodeKey};

/// How directories are read and entries stat'ed.
///
/// ```
/// use traverse::Engine;
/// assert_eq!("threads".parse::<Engine>(), Ok(Engine::Threads));
/// assert_eq!(Engine::Std.to_string(), "std");
/// assert!("fast".parse::<Engine>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// Chosen from what the kernel offers and the measurements in the
    /// README: currently [`Engine::Threads`].
    Auto,
    /// Parallel walker on plain system calls (`getdents64` into a large
    /// buffer, `statx` relative to the directory descriptor).
    Threads,
    /// io_uring: worker threads with a ring each; directories read with
    /// `IORING_OP_GETDENTS` where the kernel has it (else `getdents64`),
    /// entries stat'ed with `IORING_OP_STATX`, many in flight and
    /// submitted in batches. Falls back to [`Engine::Threads`] when
    /// io_uring is unavailable.
    Uring,
    /// `tokio::fs`, as the seed's baseline.
    Tokio,
    /// One thread, `std::fs`.
    Std,
}

impl Engine {
    /// Every engine name, as the CLI accepts them.
    pub const NAMES: [&'static str; 5] = ["auto", "uring", "threads", "tokio", "std"];
}

impl FromStr for Engine {
    type Err = String;

    fn from_str(s: &str) -> Result<Engine, String> {
        match s {
            "auto" => Ok(Engine::Auto),
            "uring" => Ok(Engine::Uring),
            "threads" => Ok(Engine::Threads),
            "tokio" => Ok(Engine::Tokio),
            "std" => Ok(Engine::Std),
            other => Err(format!(
                "unknown engine {other:?} (expected one of: {})",
                Engine::NAMES.join(", ")
            )),
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Auto => "auto",
            Engine::Uring => "uring",
            Engine::Threads => "threads",
            Engine::Tokio => "tokio",
            Engine::Std => "std",
        })
    }
}

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
    /// ([`WalkBuilder::list`]); never called otherwise.
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

/// The result of walking one root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// What was counted.
    pub totals: Totals,
    /// True when the walk was interrupted ([`WalkBuilder::interrupt`]):
    /// the totals cover only part of the tree.
    pub partial: bool,
}

/// Counts of what the walk has seen so far, for a progress display. They
/// are updated once per directory, so reading them costs the walk nothing.
///
/// ```
/// let walk = traverse::WalkBuilder::new().build();
/// walk.totals(std::path::Path::new("."));
/// assert!(walk.progress().entries() >= 1);
/// ```
#[derive(Debug, Default)]
pub struct Progress {
    entries: AtomicU64,
    bytes: AtomicU64,
}

impl Progress {
    /// Entries seen (hard links each time).
    pub fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Apparent bytes seen (hard links each time).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, entries: u64, bytes: u64) {
        self.entries.fetch_add(entries, Ordering::Relaxed);
        // A display figure: it saturates rather than wraps (the totals
        // themselves are exact, in 128 bits).
        let _ = self
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_add(bytes))
            });
    }
}

/// The settings of a walk, resolved by [`WalkBuilder::build`].
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub engine: Engine,
    /// Workers to start with.
    pub jobs: usize,
    /// Workers the threads engine may grow to.
    pub max_jobs: usize,
    pub count_links: bool,
    pub one_file_system: bool,
    pub list: bool,
    pub inode_order: Option<usize>,
}

/// Settings of a walk.
///
/// # Example
///
/// ```
/// use traverse::{Engine, WalkBuilder};
/// let walk = WalkBuilder::new()
///     .engine(Engine::Std)
///     .count_links(true)
///     .one_file_system(true)
///     .build();
/// assert_eq!(walk.engine(), Engine::Std);
/// ```
#[derive(Clone, Debug)]
pub struct WalkBuilder {
    engine: Engine,
    jobs: Option<usize>,
    count_links: bool,
    one_file_system: bool,
    list: bool,
    inode_order: Option<usize>,
    interrupt: Option<Arc<AtomicBool>>,
}

impl Default for WalkBuilder {
    fn default() -> WalkBuilder {
        WalkBuilder::new()
    }
}

/// GNU fts sorts a directory by inode number above this many entries.
const INODE_ORDER_THRESHOLD: usize = 10_000;

impl WalkBuilder {
    /// Defaults: [`Engine::Auto`], jobs chosen per engine, hard links once,
    /// crossing filesystems, totals (not a listing), inode order above
    /// 10 000 entries.
    pub fn new() -> WalkBuilder {
        WalkBuilder {
            engine: Engine::Auto,
            jobs: None,
            count_links: false,
            one_file_system: false,
            list: false,
            inode_order: Some(INODE_ORDER_THRESHOLD),
            interrupt: None,
        }
    }

    /// The engine.
    pub fn engine(&mut self, engine: Engine) -> &mut WalkBuilder {
        self.engine = engine;
        self
    }

    /// Worker threads (`threads`, `tokio`, and `uring`, each with its own
    /// ring); `std` always uses one. Capped so that every worker's
    /// descriptors fit in `ulimit -n`. Without it, the threads engine
    /// starts with one thread per CPU and adds threads (up to 16 per CPU)
    /// while its work waits for the disk; the uring engine likewise, up to
    /// 8 per CPU.
    pub fn jobs(&mut self, jobs: usize) -> &mut WalkBuilder {
        self.jobs = Some(jobs.max(1));
        self
    }

    /// Count the size of a hard-linked inode for every link (`du -l`).
    pub fn count_links(&mut self, yes: bool) -> &mut WalkBuilder {
        self.count_links = yes;
        self
    }

    /// Skip entries on another filesystem than the root's (`du -x`).
    pub fn one_file_system(&mut self, yes: bool) -> &mut WalkBuilder {
        self.one_file_system = yes;
        self
    }

    /// Listing mode: hand every path to [`Visitor::visit`] and stat an
    /// entry only when its directory entry has no type (or, with
    /// [`one_file_system`](Self::one_file_system), when it is a
    /// directory). The totals then hold counts but no sizes.
    pub fn list(&mut self, yes: bool) -> &mut WalkBuilder {
        self.list = yes;
        self
    }

    /// Stat the entries of directories with more than `threshold` entries
    /// in inode order (`None`: directory order). Helps cold caches on
    /// filesystems that lay inodes out in order. The `threads` engine sorts
    /// only when the first entries it stats block (a cold cache); on a warm
    /// one the sort would only cost CPU.
    pub fn inode_order(&mut self, threshold: Option<usize>) -> &mut WalkBuilder {
        self.inode_order = threshold;
        self
    }

    /// A flag that stops the walk when set (a SIGINT handler sets it);
    /// the summary is then marked partial.
    pub fn interrupt(&mut self, flag: Arc<AtomicBool>) -> &mut WalkBuilder {
        self.interrupt = Some(flag);
        self
    }

    /// Resolves the engine (`auto`, and `uring` without io_uring) and the
    /// number of jobs.
    pub fn build(&self) -> Walk {
        let (engine, fallback) = match self.engine {
            Engine::Auto => (Engine::Threads, None),
            Engine::Uring => match uring::available() {
                Ok(()) => (Engine::Uring, None),
                Err(why) => (Engine::Threads, Some(why)),
            },
            other => (other, None),
        };
        let limit = sys::open_file_limit();
        let cap = FdBudget::max_jobs(limit);
        let (jobs, max_jobs) = match (engine, self.jobs) {
            (Engine::Std, _) => (1, 1),
            (_, Some(jobs)) => (jobs, jobs),
            // Start at the warm-cache optimum and let the walk add threads
            // while it waits for the disk.
            (Engine::Threads | Engine::Auto, None) => (cores(), cores() * COLD_THREADS_PER_CORE),
            (Engine::Uring, None) => (cores(), cores() * uring::MAX_WORKERS_PER_CORE),
            (Engine::Tokio, None) => (cores(), cores()),
        };
        let (jobs, max_jobs) = (jobs.min(cap), max_jobs.min(cap));
        Walk {
            config: Config {
                engine,
                jobs,
                max_jobs,
                count_links: self.count_links,
                one_file_system: self.one_file_system,
                list: self.list,
                inode_order: self.inode_order,
            },
            fallback,
            limit,
            interrupt: self.interrupt.clone().unwrap_or_default(),
            seen: Mutex::new(HashSet::new()),
            progress: Arc::new(Progress::default()),
        }
    }
}

/// The number of CPUs: the threads engine's best start on a warm cache.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Threads per CPU the threads engine may grow to on a cold cache (on 2
/// CPUs, 32 threads read a cold Linux tree 3 times faster than 2: see
/// `shared/bench-baseline.md`).
const COLD_THREADS_PER_CORE: usize = 16;

/// A configured walk. Run it on one root after another: a hard-linked
/// inode counted under one root is not counted again under the next, as
/// `du` does with several arguments.
#[derive(Debug)]
pub struct Walk {
    config: Config,
    fallback: Option<String>,
    limit: u64,
    interrupt: Arc<AtomicBool>,
    seen: Mutex<HashSet<InodeKey>>,
    progress: Arc<Progress>,
}

impl Walk {
    /// The engine that runs (never [`Engine::Auto`]).
    pub fn engine(&self) -> Engine {
        self.config.engine
    }

    /// Worker threads at the start.
    pub fn jobs(&self) -> usize {
        self.config.jobs
    }

    /// Why [`Engine::Uring`] was asked for but [`Engine::Threads`] runs.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Live counts for a progress display.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Walks `root` with no visitor: errors are only counted.
    pub fn totals(&self, root: &Path) -> Summary {
        self.run(root, &Ignore)
    }

    /// Walks `root`, handing listed paths and errors to visitors from
    /// `visitors`. A root that is not a directory (a file, a symlink, which
    /// is not followed, a device...) is an error ([`Op::Open`], "Not a
    /// directory") and counts nothing else. Write `link/` to walk the
    /// directory a symlink `link` points to: the kernel follows a symlink
    /// before a trailing slash.
    pub fn run(&self, root: &Path, visitors: &dyn VisitorBuilder) -> Summary {
        let mut acc = Accumulator::new(self.config.count_links);
        let mut visitor = visitors.build();
        let croot = match CString::new(root.as_os_str().as_bytes()) {
            Ok(c) => c,
            Err(_) => {
                let cause = std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the path contains a NUL byte",
                );
                visitor.error(Error::new(root, Op::Stat, cause));
                acc.totals.errors += 1;
                return self.finish(acc);
            }
        };
        // The root is opened once, never through a symlink, and kept for
        // the whole walk: every later open is relative to it, so a rename
        // of PATH (or of a directory above it) during the walk cannot lead
        // the walk into another tree.
        let (opened, st) = match sys::open_dir(None, &croot) {
            Ok(fd) => match sys::fstatx(fd.as_fd()) {
                Ok(st) => (Ok(fd), st),
                Err(cause) => {
                    visitor.error(Error::new(root, Op::Stat, cause));
                    acc.totals.errors += 1;
                    return self.finish(acc);
                }
            },
            // Why: a stat by name tells a missing PATH, a file or a
            // symlink from a directory that cannot be opened.
            Err(cause) => match sys::statx(None, &croot) {
                Ok(st) => (Err(cause), st),
                Err(cause) => {
                    visitor.error(Error::new(root, Op::Stat, cause));
                    acc.totals.errors += 1;
                    return self.finish(acc);
                }
            },
        };
        if !st.is_dir() {
            visitor.error(Error::new(root, Op::Open, not_a_directory(st.mode)));
            acc.totals.errors += 1;
            return self.finish(acc);
        }
        if self.config.list {
            acc.add_type(engine::d_type_of(st.mode));
            visitor.visit(root);
        } else {
            acc.add(&st);
        }
        self.progress.add(1, st.size);
        let fd = match opened {
            Ok(fd) => fd,
            Err(cause) => {
                // A directory that cannot be opened (no permission): counted,
                // as du counts it, and reported.
                visitor.error(Error::new(root, Op::Open, cause));
                acc.totals.errors += 1;
                return self.finish(acc);
            }
        };
        drop(visitor);
        if !self.interrupt.load(Ordering::Relaxed) {
            let shared = Arc::new(Shared {
                config: self.config.clone(),
                root_dev: st.dev,
                root_mnt: st.mnt_id,
                budget: FdBudget::new(self.config.max_jobs, self.limit),
                interrupt: Arc::clone(&self.interrupt),
                progress: Arc::clone(&self.progress),
            });
            let root = DirNode::root(croot, fd, st.id());
            let sub = match self.config.engine {
                Engine::Threads | Engine::Auto => threads::walk(&shared, root, visitors),
                Engine::Std => stdfs::walk(&shared, root, visitors),
                Engine::Tokio => tokio_fs::walk(&shared, root, visitors),
                Engine::Uring => uring::walk(&shared, root, visitors),
            };
            acc.merge(sub);
        }
        self.finish(acc)
    }

    fn finish(&self, acc: Accumulator) -> Summary {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        Summary {
            totals: acc.finish(&mut seen),
            partial: self.interrupt.load(Ordering::Relaxed),
        }
    }
}

/// Why a root of this `st_mode` cannot be walked; for a symlink, how to
/// walk its target.
fn not_a_directory(mode: u32) -> std::io::Error {
    if mode & libc::S_IFMT == libc::S_IFLNK {
        std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "Not a directory: a symbolic link, not followed (add a trailing / to follow it)",
        )
    } else {
        std::io::Error::from_raw_os_error(libc::ENOTDIR)
    }
}

impl Worker<'_> {
    /// Hands the worker's totals back for merging.
    pub(crate) fn into_accumulator(self) -> Accumulator {
        self.acc
    }
}
