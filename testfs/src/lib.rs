//! A FUSE filesystem that makes a real directory look slow and unreliable,
//! as a test and benchmark fixture for directory walkers.
//!
//! testfs mounts a read-only passthrough of a source directory. Every
//! request waits a configured delay before its reply (a network round trip,
//! as on glusterfs), chosen paths fail with `EIO`, and counters record how
//! many requests of each kind arrived, in particular how many `READDIR`
//! calls and bytes a walk needed. The counters are read with
//! [`Mount::stats`] or, from outside the process, from the hidden file
//! [`STATS_FILE`] at the mount's root (found by name, never listed).
//!
//! Mounting needs `/dev/fuse` and either root or Debian's `fusermount3`
//! (package `fuse3`).
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use testfs::{Fault, Mount, Options};
//!
//! let options = Options::new()
//!     .delay(Duration::from_micros(150))
//!     .fault("broken", Fault::Eio);
//! let mount = Mount::new("/var/tmp/tree", "/mnt/slow", &options)?;
//! let names = std::fs::read_dir("/mnt/slow")?.count();
//! let stats = mount.unmount()?;
//! println!("{names} entries in {} READDIR calls", stats.readdir);
//! # Ok::<_, std::io::Error>(())
//! ```
#![warn(missing_docs)]

mod fs;
mod mount;
mod stats;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use mount::{cannot_mount, Mount};
pub use stats::Stats;

/// Name of the stats file at the root of every testfs mount. A LOOKUP of
/// this name returns it, READDIR never lists it, so walks do not see it;
/// reading it gives [`Stats`] as text. It hides a source entry of the same
/// name.
pub const STATS_FILE: &str = ".testfs-stats";

/// Which requests fail, and how, on a faulty path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// LOOKUP, GETATTR, OPENDIR and READDIR of the path fail: the name is
    /// still listed by its parent, but `stat` and `open` of it fail.
    Eio,
    /// Only READDIR fails: the directory can be stat'ed and opened, but
    /// `getdents64` on it returns `EIO`, as a server dropping a listing.
    EioReaddir,
    /// LOOKUP, GETATTR, OPENDIR and READDIR of the path fail with `ENOENT`
    /// while its parent still lists the name: the path looks removed
    /// between the parent's `getdents64` and a `stat` of the entry, the
    /// race a walker meets on a changing tree, made deterministic.
    Vanish,
    /// READDIR of the directory never ends: the offset after its last
    /// entry leads back to its first, so its entries come round again
    /// and again and no read returns 0, as from a server whose `d_off`
    /// values cycle. Every listed name is real: stat'ing it succeeds.
    EndlessReaddir,
}

/// How a testfs mount behaves.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// let options = testfs::Options::new()
///     .delay(Duration::from_micros(150))
///     .threads(8)
///     .fault("a/b", testfs::Fault::EioReaddir);
/// assert_eq!(options.delay_value(), Duration::from_micros(150));
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    delay: Duration,
    threads: usize,
    ttl: Duration,
    faults: Vec<(PathBuf, Fault)>,
    names: Vec<(PathBuf, OsString)>,
    inodes: Vec<(PathBuf, PathBuf)>,
}

impl Default for Options {
    fn default() -> Options {
        Options::new()
    }
}

impl Options {
    /// No delay, no faults, 16 threads, nothing cached by the kernel.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(testfs::Options::new().delay_value().is_zero());
    /// ```
    pub fn new() -> Options {
        Options {
            delay: Duration::ZERO,
            threads: 16,
            ttl: Duration::ZERO,
            faults: Vec::new(),
            names: Vec::new(),
            inodes: Vec::new(),
        }
    }

    /// Wait this long before replying to each request.
    ///
    /// # Example
    ///
    /// ```
    /// let o = testfs::Options::new().delay(std::time::Duration::from_micros(150));
    /// # assert_eq!(o.delay_value().as_micros(), 150);
    /// ```
    pub fn delay(mut self, delay: Duration) -> Options {
        self.delay = delay;
        self
    }

    /// The configured delay per request.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(testfs::Options::new().delay_value().is_zero());
    /// ```
    pub fn delay_value(&self) -> Duration {
        self.delay
    }

    /// Serve this many requests at once (at least 1). Each thread sleeps
    /// through its request's delay, so this bounds how far concurrent
    /// callers can overlap the delays, like a server's worker pool.
    ///
    /// # Example
    ///
    /// ```
    /// let o = testfs::Options::new().threads(4);
    /// ```
    pub fn threads(mut self, threads: usize) -> Options {
        self.threads = threads;
        self
    }

    /// How long the kernel may cache names and attributes (FUSE entry and
    /// attribute timeout). Zero, the default, sends every `stat` to testfs
    /// as on a cold network filesystem.
    ///
    /// # Example
    ///
    /// ```
    /// let o = testfs::Options::new().ttl(std::time::Duration::from_secs(1));
    /// ```
    pub fn ttl(mut self, ttl: Duration) -> Options {
        self.ttl = ttl;
        self
    }

    /// Inject `fault` on `path`, relative to the source directory (or an
    /// absolute path inside it). The last fault given for a path wins.
    ///
    /// # Example
    ///
    /// ```
    /// let o = testfs::Options::new().fault("dir/sub", testfs::Fault::Eio);
    /// ```
    pub fn fault(mut self, path: impl Into<PathBuf>, fault: Fault) -> Options {
        self.faults.push((path.into(), fault));
        self
    }

    /// Show the entry at `path` (relative to the source, or absolute
    /// inside it) under `name` instead of its own: its parent lists `name`
    /// and a lookup of `name` finds it. `name` may be up to 1 024 bytes
    /// (FUSE's limit), longer than the 255 bytes local filesystems allow,
    /// as ntfs-3g's names of up to 765 bytes are. It must not hold `/` or
    /// NUL. The last name given for a path wins.
    ///
    /// # Example
    ///
    /// ```
    /// let long = "n".repeat(300);
    /// let o = testfs::Options::new().show_as("dir/file", long);
    /// ```
    pub fn show_as(mut self, path: impl Into<PathBuf>, name: impl Into<OsString>) -> Options {
        self.names.push((path.into(), name.into()));
        self
    }

    /// Make `path` claim the inode number of `other` (both relative to the
    /// source, or absolute inside it): GETATTR of `path` reports `other`'s
    /// `st_ino`, while LOOKUP and READDIR still lead to `path` itself. A
    /// directory claiming an ancestor's number is a false loop: `find`
    /// reports "File system loop detected" and does not descend. The last
    /// one given for a path wins.
    ///
    /// # Example
    ///
    /// ```
    /// let o = testfs::Options::new().inode_of("a/b", "a");
    /// ```
    pub fn inode_of(mut self, path: impl Into<PathBuf>, other: impl Into<PathBuf>) -> Options {
        self.inodes.push((path.into(), other.into()));
        self
    }
}
