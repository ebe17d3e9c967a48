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
//! Pruning, the same in every engine: names left out by pattern
//! ([`WalkBuilder::exclude`]), entries left out by a closure that sees
//! each one's name, type and depth before it is stat'ed
//! ([`WalkBuilder::filter_entry`]), and a depth limit
//! ([`WalkBuilder::max_depth`]).
//!
//! Per directory ([`Walk::run_dirs`], a [`DirVisitor`]): each directory's
//! subtree totals as soon as they are final, from the same parallel walk
//! (what `du -d N` prints), and the tree in ncdu's export format.
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

mod breakdown;
mod builder;
mod config;
mod dirpath;
mod dispatch;
mod engine;
mod error;
mod file_totals;
mod filter;
mod ignore_rules;
mod links;
mod listing_order;
mod ncdu_export;
mod ncdu_import;
mod ncdu_tree;
mod node;
mod queue;
mod sort;
mod spare;
#[cfg(feature = "reference-engines")]
mod stdfs;
mod sys;
mod tally;
mod threads;
mod threshold;
mod timestamp;
#[cfg(feature = "reference-engines")]
mod tokio_fs;
mod totals;
mod uring;
mod visit;
mod walk;

/// The type of a listed [`Entry`].
pub use io_uring_getdents::dirent::FileType;

pub use breakdown::{DirTotals, DirVisitor};
pub use builder::WalkBuilder;
pub use config::{Engine, ParseEngineError, UringUnavailable};
pub use dirpath::DirHandle;
pub use error::{Error, Op};
pub use file_totals::FileTotals;
pub use filter::FilterEntry;
pub use listing_order::{ListingOrder, ListingRule};
pub use ncdu_tree::{NcduDir, NcduEntries, NcduEntry};
pub use node::ListingPlace;
pub use threshold::parse_threshold;
pub use timestamp::{TimeField, Timestamp};
pub use totals::{Progress, Totals};
pub use visit::{Entry, Event, Ignore, Metadata, Visitor, VisitorBuilder};
pub use walk::{Summary, Walk};
pub use walk_ignore_rules::IgnoreRules;
