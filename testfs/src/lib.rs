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
mod stats;

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuser::{BackgroundSession, Config, MountOption};

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

/// FUSE's longest name (`FUSE_NAME_MAX`).
const NAME_MAX: usize = 1024;

/// Why this process cannot mount testfs, if it cannot: no `/dev/fuse`,
/// or not root and no usable `fusermount3`. Tests that need a mount print
/// "skipped: " followed by the reason and return in that case.
///
/// # Example
///
/// ```
/// if let Some(why) = testfs::cannot_mount() {
///     println!("skipped: {why}");
/// }
/// ```
pub fn cannot_mount() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    // /proc/self belongs to the effective user: no unsafe geteuid needed.
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        return None;
    }
    let helper = ["/usr/bin/fusermount3", "/bin/fusermount3"]
        .iter()
        .any(|p| Path::new(p).exists());
    if !helper {
        return Some("not root and no fusermount3 (Debian package fuse3)".into());
    }
    // fuser opens /dev/fuse as the caller before it falls back to
    // fusermount3, so a device only root may open rules out non-root.
    if let Err(err) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
    {
        return Some(format!("not root and cannot open /dev/fuse: {err}"));
    }
    None
}

/// A mounted testfs. Dropping it unmounts (errors go to stderr); call
/// [`Mount::unmount`] to see them and get the final counters.
///
/// # Example
///
/// ```no_run
/// let mount = testfs::Mount::new("/var/tmp/tree", "/mnt/t", &testfs::Options::new())?;
/// assert!(mount.mountpoint().ends_with("t"));
/// drop(mount); // unmounted here
/// # Ok::<_, std::io::Error>(())
/// ```
pub struct Mount {
    session: Option<BackgroundSession>,
    stats: Arc<Mutex<Stats>>,
    mountpoint: PathBuf,
}

fn context(what: &str, path: &Path, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

/// Turns a fault path into the form nodes carry: relative to the source,
/// without `.` components. Paths that leave the source are refused.
fn fault_key(source: &Path, given: &Path, path: &Path) -> io::Result<PathBuf> {
    let relative = if path.is_absolute() {
        path.strip_prefix(source)
            .or_else(|_| path.strip_prefix(given))
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "fault path {}: not inside the source {}",
                        path.display(),
                        source.display()
                    ),
                )
            })?
    } else {
        path
    };
    let mut key = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => key.push(name),
            Component::CurDir => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("fault path {}: must not contain '..'", path.display()),
                ))
            }
        }
    }
    Ok(key)
}

impl Mount {
    /// Mounts a passthrough of `source` at `mountpoint` and serves it on
    /// background threads until the returned guard is dropped. When this
    /// returns, the mount is ready.
    ///
    /// # Errors
    ///
    /// Each names the path and the cause: `source` or `mountpoint` missing
    /// or not a directory, one inside the other (testfs would wait on
    /// itself), a fault path outside the source, zero threads, or the mount
    /// itself failing (no `/dev/fuse`, not root and no `fusermount3`).
    ///
    /// # Example
    ///
    /// ```no_run
    /// let mount = testfs::Mount::new("/var/tmp/tree", "/mnt/t", &testfs::Options::new())?;
    /// println!("{}", std::fs::read_to_string(mount.mountpoint().join(testfs::STATS_FILE))?);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn new(
        source: impl AsRef<Path>,
        mountpoint: impl AsRef<Path>,
        options: &Options,
    ) -> io::Result<Mount> {
        let (given_source, given_mountpoint) = (source.as_ref(), mountpoint.as_ref());
        let source = given_source
            .canonicalize()
            .map_err(|e| context("source", given_source, e))?;
        let root = std::fs::metadata(&source).map_err(|e| context("source", &source, e))?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("source {}: not a directory", given_source.display()),
            ));
        }
        let mountpoint = given_mountpoint
            .canonicalize()
            .map_err(|e| context("mount point", given_mountpoint, e))?;
        if !mountpoint.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!(
                    "mount point {}: not a directory",
                    given_mountpoint.display()
                ),
            ));
        }
        if mountpoint.starts_with(&source) || source.starts_with(&mountpoint) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "mount point {} and source {} must not contain each other",
                    mountpoint.display(),
                    source.display()
                ),
            ));
        }
        if options.threads == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "threads: must be at least 1",
            ));
        }
        let mut faults = HashMap::new();
        for (path, fault) in &options.faults {
            faults.insert(fault_key(&source, given_source, path)?, *fault);
        }
        let mut names = HashMap::new();
        for (path, name) in &options.names {
            let bytes = name.as_bytes();
            if bytes.is_empty()
                || bytes.len() > NAME_MAX
                || bytes.contains(&b'/')
                || bytes.contains(&0)
                || bytes == b"."
                || bytes == b".."
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "name for {}: 1 to {NAME_MAX} bytes, no '/' or NUL, not . or ..",
                        path.display()
                    ),
                ));
            }
            let key = fault_key(&source, given_source, path)?;
            if key.as_os_str().is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the source's root has no name to show differently",
                ));
            }
            names.insert(key, name.clone());
        }

        let mut inodes = HashMap::new();
        for (path, other) in &options.inodes {
            let key = fault_key(&source, given_source, path)?;
            let other = fault_key(&source, given_source, other)?;
            let meta = std::fs::symlink_metadata(source.join(&other))
                .map_err(|e| context("inode of", &source.join(&other), e))?;
            inodes.insert(key, (other, (meta.dev(), meta.ino())));
        }

        let stats = Arc::new(Mutex::new(Stats::default()));
        let filesystem = fs::TestFs::new(
            source.clone(),
            &root,
            fs::Behaviour {
                delay: options.delay,
                ttl: options.ttl,
                faults,
                shown: names,
                inodes,
            },
            stats.clone(),
        );
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName(source.display().to_string()),
            MountOption::Subtype("testfs".into()),
            MountOption::RO,
        ];
        // No default_permissions: with it the kernel would GETATTR every
        // directory on a path walk to check its mode (TTL 0 means always),
        // doubling the requests. Permissions still hold, since testfs reads
        // the source as the user who mounted it, and only that user (or
        // root) may use the mount.
        config.n_threads = Some(options.threads);
        let session = fuser::Session::new(filesystem, &mountpoint, &config)
            .and_then(fuser::Session::spawn)
            .map_err(|e| context("mounting testfs at", &mountpoint, e))?;
        Ok(Mount {
            session: Some(session),
            stats,
            mountpoint,
        })
    }

    /// Where the filesystem is mounted (canonical path).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # let mount = testfs::Mount::new("/var/tmp/tree", "/mnt/t", &testfs::Options::new())?;
    /// let top = std::fs::read_dir(mount.mountpoint())?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The counters now.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # let mount = testfs::Mount::new("/var/tmp/tree", "/mnt/t", &testfs::Options::new())?;
    /// let before = mount.stats();
    /// std::fs::read_dir(mount.mountpoint())?.for_each(drop);
    /// assert!(mount.stats().since(&before).readdir >= 1);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn stats(&self) -> Stats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the filesystem is still being served: false once it was
    /// unmounted from outside (`umount`, `fusermount3 -u`).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # let mount = testfs::Mount::new("/var/tmp/tree", "/mnt/t", &testfs::Options::new())?;
    /// assert!(mount.is_serving());
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn is_serving(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|session| !session.guard.is_finished())
    }

    /// Unmounts, waits for the serving threads and returns the final
    /// counters.
    ///
    /// # Errors
    ///
    /// The unmount failed, for example with `EBUSY` while a process still
    /// has a file or its working directory in the mount; or a serving
    /// thread failed.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # let mount = testfs::Mount::new("/var/tmp/tree", "/mnt/t", &testfs::Options::new())?;
    /// let stats = mount.unmount()?;
    /// println!("{stats}");
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn unmount(mut self) -> io::Result<Stats> {
        self.finish()?;
        Ok(self.stats())
    }

    fn finish(&mut self) -> io::Result<()> {
        match self.session.take() {
            Some(session) => session
                .umount_and_join()
                .map_err(|e| context("unmounting testfs at", &self.mountpoint, e)),
            None => Ok(()),
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(err) = self.finish() {
            eprintln!("testfs: {err}");
        }
    }
}
