//! The settings of a walk: the engines a user may ask for, and the
//! configuration [`WalkBuilder::build`](crate::WalkBuilder::build) resolves
//! them to, which the engines read.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use globset::GlobSet;
use io_uring_getdents::detect::RingError;

use crate::filter::EntryFilter;
use crate::sort::SortBy;
use crate::sys::{STATX_LS_MASK, STATX_MASK};
use crate::timestamp::TimeField;
use walk_ignore_rules::IgnoreRules;

/// How directories are read and entries stat'ed.
///
/// `Tokio` and `Std` are reference engines, baselines for the benchmarks:
/// they exist only with the cargo feature `reference-engines`. More
/// engines may come, so matches need a wildcard arm.
///
/// ```
/// use traverse::Engine;
/// assert_eq!("threads".parse::<Engine>(), Ok(Engine::Threads));
/// assert_eq!(Engine::Uring.to_string(), "uring");
/// assert!("fast".parse::<Engine>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Engine {
    /// Chosen from what the kernel offers and the measurements in the
    /// README: [`Engine::Uring`] where the kernel's GETDENTS has
    /// readdirplus (no released kernel has GETDENTS yet), else
    /// [`Engine::Threads`].
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
    /// `tokio::fs` on a multi-threaded runtime: a baseline for the
    /// benchmarks (feature `reference-engines`).
    #[cfg(feature = "reference-engines")]
    Tokio,
    /// One thread, `std::fs`: a baseline for the benchmarks (feature
    /// `reference-engines`).
    #[cfg(feature = "reference-engines")]
    Std,
}

impl Engine {
    /// Every engine name this build offers, as the CLI accepts them.
    #[cfg(feature = "reference-engines")]
    pub const NAMES: &'static [&'static str] = &["auto", "uring", "threads", "tokio", "std"];
    /// Every engine name this build offers, as the CLI accepts them.
    #[cfg(not(feature = "reference-engines"))]
    pub const NAMES: &'static [&'static str] = &["auto", "uring", "threads"];

    /// Names of the reference engines, which only a build with the
    /// feature `reference-engines` offers.
    const REFERENCE: [&'static str; 2] = ["tokio", "std"];
}

impl FromStr for Engine {
    type Err = ParseEngineError;

    fn from_str(s: &str) -> Result<Engine, ParseEngineError> {
        match s {
            "auto" => Ok(Engine::Auto),
            "uring" => Ok(Engine::Uring),
            "threads" => Ok(Engine::Threads),
            #[cfg(feature = "reference-engines")]
            "tokio" => Ok(Engine::Tokio),
            #[cfg(feature = "reference-engines")]
            "std" => Ok(Engine::Std),
            other if Engine::REFERENCE.contains(&other) => {
                Err(ParseEngineError::Reference(other.to_owned()))
            }
            other => Err(ParseEngineError::Unknown(other.to_owned())),
        }
    }
}

/// Why a name is not an [`Engine`] of this build (what `str::parse`
/// gives); its text names the engines there are. More reasons may come,
/// so matches need a wildcard arm.
///
/// ```
/// use traverse::{Engine, ParseEngineError};
/// let err = "fast".parse::<Engine>().unwrap_err();
/// assert_eq!(err, ParseEngineError::Unknown("fast".to_owned()));
/// assert!(err.to_string().starts_with(r#"unknown engine "fast" (expected one of: auto, "#));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseEngineError {
    /// A reference engine (`tokio`, `std`) asked of a build without the
    /// cargo feature `reference-engines`.
    Reference(String),
    /// No engine has this name.
    Unknown(String),
}

impl fmt::Display for ParseEngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseEngineError::Reference(name) => write!(
                f,
                "engine {name:?} is a reference engine for benchmarks, in builds with \
                 the cargo feature reference-engines only"
            ),
            ParseEngineError::Unknown(name) => write!(
                f,
                "unknown engine {name:?} (expected one of: {})",
                Engine::NAMES.join(", ")
            ),
        }
    }
}

impl std::error::Error for ParseEngineError {}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::Auto => "auto",
            Engine::Uring => "uring",
            Engine::Threads => "threads",
            #[cfg(feature = "reference-engines")]
            Engine::Tokio => "tokio",
            #[cfg(feature = "reference-engines")]
            Engine::Std => "std",
        })
    }
}

/// Why [`Engine::Uring`] was asked for but [`Engine::Threads`] runs
/// ([`Walk::fallback`](crate::Walk::fallback)). Its text is the reason
/// alone, for a sentence of the caller's. More reasons may come, so
/// matches need a wildcard arm.
///
/// ```
/// use traverse::{Engine, WalkBuilder};
/// let walk = WalkBuilder::new().engine(Engine::Uring).build();
/// match walk.fallback() {
///     Some(why) => {
///         eprintln!("io_uring engine unavailable ({why}); using the threads engine");
///         assert_eq!(walk.engine(), Engine::Threads);
///     }
///     None => assert_eq!(walk.engine(), Engine::Uring),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum UringUnavailable {
    /// This process cannot set up or enter a ring: a kernel without
    /// io_uring, the `kernel.io_uring_disabled` sysctl, a seccomp filter
    /// that refuses `io_uring_setup` or `io_uring_enter`.
    Ring(&'static RingError),
}

impl fmt::Display for UringUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UringUnavailable::Ring(why) => fmt::Display::fmt(why, f),
        }
    }
}

impl std::error::Error for UringUnavailable {
    // The text is the ring error's own, so what comes next in the chain is
    // the ring error's cause, not the ring error again.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UringUnavailable::Ring(why) => why.source(),
        }
    }
}

/// The engine that runs: an [`Engine`] with `auto` (and `uring` without
/// io_uring) resolved, so that no engine has to handle `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    Threads,
    Uring,
    #[cfg(feature = "reference-engines")]
    Tokio,
    #[cfg(feature = "reference-engines")]
    Std,
}

impl From<Resolved> for Engine {
    fn from(engine: Resolved) -> Engine {
        match engine {
            Resolved::Threads => Engine::Threads,
            Resolved::Uring => Engine::Uring,
            #[cfg(feature = "reference-engines")]
            Resolved::Tokio => Engine::Tokio,
            #[cfg(feature = "reference-engines")]
            Resolved::Std => Engine::Std,
        }
    }
}

/// The settings of a walk, resolved by [`WalkBuilder::build`].
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub engine: Resolved,
    /// Workers to start with.
    pub jobs: usize,
    /// Workers the threads engine may grow to.
    pub max_jobs: usize,
    pub count_links: bool,
    /// Every directory counted once across the roots of
    /// [`Walk::run_next`](crate::Walk::run_next) (never in a listing).
    pub count_once: bool,
    pub one_file_system: bool,
    pub list: bool,
    /// With `list`: stat every entry and hand its metadata to the visitor.
    pub list_metadata: bool,
    /// Every stat asks for the modification time too.
    pub modification_times: bool,
    /// The totals keep the latest of this time ([`Totals::latest`](crate::Totals::latest)).
    pub latest_time: Option<TimeField>,
    pub inode_order: Option<usize>,
    /// Names left out (`--exclude`).
    pub exclude: Option<Arc<GlobSet>>,
    /// The user's filter ([`WalkBuilder::filter_entry`](crate::WalkBuilder::filter_entry)).
    pub filter: Option<EntryFilter>,
    /// Levels below the root that are counted; directories at the last one
    /// are not read.
    pub max_depth: Option<usize>,
    /// Entries shallower than this are counted but not listed.
    pub min_depth: usize,
    /// Symlinks below the root are followed ([`WalkBuilder::follow_links`](crate::WalkBuilder::follow_links)).
    pub follow_links: bool,
    /// A root that is a symlink is followed.
    pub follow_root_links: bool,
    /// A listing's order within each directory.
    pub sort: Option<SortBy>,
    /// A listing lists a directory after its subtree.
    pub contents_first: bool,
    /// Entries left out by ignore files and hidden names.
    pub ignore: Option<IgnoreRules>,
}

impl Config {
    /// Whether a directory at `depth` below the root is read (the maximum
    /// depth counts the directories at its last level without reading
    /// them).
    pub fn reads(&self, depth: usize) -> bool {
        self.max_depth.is_none_or(|max| depth < max)
    }

    /// How directories below the root are opened: through symlinks only
    /// when following them.
    pub fn opener(&self) -> crate::node::Opener {
        if self.follow_links {
            crate::sys::open_dir_follow
        } else {
            crate::sys::open_dir
        }
    }

    /// A listing without metadata: entries are counted by type, no sizes.
    pub fn counts_types_only(&self) -> bool {
        self.list && !self.list_metadata
    }

    /// The fields every `statx` of the walk asks for, whichever engine
    /// makes it: what the totals use, and in a listing with metadata what
    /// [`Metadata`](crate::Metadata) hands out too (owner, permissions,
    /// times). Only then: on NFS, asking for times makes the client write
    /// back a file's pending writes first and may make it ask the server
    /// again, which a walk that counts sizes does not need.
    pub fn statx_mask(&self) -> u32 {
        let latest = self.latest_time.map_or(0, TimeField::statx_bit);
        latest
            | if self.list && self.list_metadata {
                STATX_MASK | STATX_LS_MASK
            } else if self.modification_times {
                STATX_MASK | libc::STATX_MTIME
            } else {
                STATX_MASK
            }
    }
}
