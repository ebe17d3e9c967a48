//! An entry's metadata as a listing hands it out.

use std::time::SystemTime;

use crate::sys::Stat;
use crate::totals::disk_bytes;

/// An entry's metadata, from the `statx` the walk made relative to its
/// directory (never following a symbolic link; the `std` and `tokio`
/// engines take `std`'s metadata of the entry): what `ls -l` shows. See
/// [`WalkBuilder::list_metadata`](crate::WalkBuilder::list_metadata) for
/// an example.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata(pub(super) Stat);

impl Metadata {
    /// The size in bytes (`st_size`, what `du -b` adds).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.0.size
    }

    /// The disk space used, in bytes (`st_blocks * 512`, what `du -B1` adds).
    pub fn disk_bytes(&self) -> u64 {
        u64::try_from(disk_bytes(self.0.blocks)).unwrap_or(u64::MAX)
    }

    /// The inode number.
    pub fn ino(&self) -> u64 {
        self.0.ino
    }

    /// The device of the filesystem that holds it.
    pub fn dev(&self) -> u64 {
        self.0.dev
    }

    /// The id of the mount that holds it (`statx`'s `stx_mnt_id`, Linux
    /// 5.8 and later): it tells a bind mount from the rest of its
    /// filesystem, where [`dev`](Self::dev) cannot (as `du -x` and
    /// `find -xdev` should). `None` where the kernel does not give it, or
    /// from the `std` and `tokio` engines.
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("sub"))?;
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut mounts = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         mounts.push(e.metadata().and_then(|m| m.mount_id()));
    ///     }
    /// });
    /// // The directory and what is below it: one mount.
    /// assert_eq!(mounts.len(), 2);
    /// assert_eq!(mounts[0], mounts[1]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn mount_id(&self) -> Option<u64> {
        self.0.mnt_id
    }

    /// The number of hard links.
    pub fn nlink(&self) -> u64 {
        self.0.nlink
    }

    /// The file type and permission bits (`st_mode`).
    pub fn mode(&self) -> u32 {
        self.0.mode
    }

    /// Whether it is a regular file.
    pub fn is_file(&self) -> bool {
        self.0.mode & libc::S_IFMT == libc::S_IFREG
    }

    /// Whether it is a directory.
    pub fn is_dir(&self) -> bool {
        self.0.is_dir()
    }

    /// Whether it is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.0.mode & libc::S_IFMT == libc::S_IFLNK
    }

    /// The owner's user id (`st_uid`): whose files they are, as `ls -l`
    /// and `find -user` tell.
    ///
    /// ```
    /// use std::os::unix::fs::MetadataExt;
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("mine"), b"")?;
    /// let me = std::fs::metadata(dir.path())?.uid();
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut others = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         if e.metadata().is_some_and(|m| m.uid() != me) {
    ///             others.push(e.path().to_owned());
    ///         }
    ///     }
    /// });
    /// assert!(others.is_empty());
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn uid(&self) -> u32 {
        self.0.uid
    }

    /// The group's id (`st_gid`): with [`mode`](Self::mode), who else may
    /// read or write it.
    ///
    /// ```
    /// use std::os::unix::fs::MetadataExt;
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("shared"), b"")?;
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut groups = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         groups.push((e.path().to_owned(), e.metadata().map(|m| m.gid())));
    ///     }
    /// });
    /// for (path, gid) in groups {
    ///     assert_eq!(gid, Some(std::fs::symlink_metadata(&path)?.gid()));
    /// }
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn gid(&self) -> u32 {
        self.0.gid
    }

    /// The last modification of the contents (`st_mtime`, to the
    /// nanosecond the filesystem keeps): the time `ls -l` shows and
    /// `make` compares. Before 1970 it is before `UNIX_EPOCH`.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let old = UNIX_EPOCH - Duration::from_secs(86_400);
    /// std::fs::File::create(dir.path().join("old"))?.set_modified(old)?;
    /// let y2k = UNIX_EPOCH + Duration::from_secs(946_684_800);
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut stale = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         if e.metadata().is_some_and(|m| m.modified() < y2k) {
    ///             stale.push((e.path().to_owned(), e.metadata().map(|m| m.modified())));
    ///         }
    ///     }
    /// });
    /// assert_eq!(stale, [(dir.path().join("old"), Some(old))]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn modified(&self) -> SystemTime {
        self.0.mtime.system_time()
    }

    /// The last access (`st_atime`): how long a file went unread, as far
    /// as the mount's `relatime` or `noatime` lets the kernel keep it.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let file = std::fs::File::create(dir.path().join("unread"))?;
    /// let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    /// file.set_times(std::fs::FileTimes::new().set_accessed(long_ago))?;
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut accessed = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         if e.depth() == 1 {
    ///             accessed.extend(e.metadata().map(|m| m.accessed()));
    ///         }
    ///     }
    /// });
    /// assert_eq!(accessed, [long_ago]);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn accessed(&self) -> SystemTime {
        self.0.atime.system_time()
    }

    /// The last change of the inode (`st_ctime`: contents, owner, mode or
    /// links), which the kernel sets and no one can set back: a file whose
    /// modification time was set back still shows when that happened.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let before = SystemTime::now() - Duration::from_secs(60);
    /// std::fs::File::create(dir.path().join("f"))?.set_modified(SystemTime::UNIX_EPOCH)?;
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut times = Vec::new();
    /// walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         if e.depth() == 1 {
    ///             times.extend(e.metadata().map(|m| (m.modified(), m.changed())));
    ///         }
    ///     }
    /// });
    /// let (modified, changed) = times[0];
    /// assert_eq!(modified, SystemTime::UNIX_EPOCH);
    /// assert!(changed > before);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn changed(&self) -> SystemTime {
        self.0.ctime.system_time()
    }
}
