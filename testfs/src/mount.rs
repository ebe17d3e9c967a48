//! Mounting: whether this process can ([`cannot_mount`]), the checks of a
//! mount's source, mount point and options, and the [`Mount`] guard that
//! serves the filesystem until it is unmounted.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use fuser::{BackgroundSession, Config, MountOption};

use crate::{fs, Options, Stats};

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
