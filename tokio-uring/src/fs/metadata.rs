//! File metadata from `statx(2)`.

use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime};

use io_uring_getdents::dirent::FileType;

/// `statx` mask bits, re-exported from `libc` so that callers need no
/// `libc` dependency for them: pass an `|` of these as the `mask` of
/// [`statx`](super::statx), [`Dir::statx`](super::Dir::statx) and
/// [`Dir::metadata`](super::Dir::metadata). The kernel may fill more
/// fields than asked and fewer where the file system lacks them
/// ([`Metadata::mask`] says which).
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::{statx, STATX_MODE, STATX_SIZE, STATX_TYPE};
///
/// tokio_uring::start(async {
///     let meta = statx(env!("CARGO_MANIFEST_DIR"), STATX_TYPE | STATX_MODE | STATX_SIZE).await?;
///     assert!(meta.is_dir());
///     assert_ne!(meta.mask() & STATX_TYPE, 0);
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
pub const STATX_TYPE: u32 = libc::STATX_TYPE;
/// The permission bits of `stx_mode`; see [`STATX_TYPE`].
pub const STATX_MODE: u32 = libc::STATX_MODE;
/// `stx_nlink`; see [`STATX_TYPE`].
pub const STATX_NLINK: u32 = libc::STATX_NLINK;
/// `stx_uid`; see [`STATX_TYPE`].
pub const STATX_UID: u32 = libc::STATX_UID;
/// `stx_gid`; see [`STATX_TYPE`].
pub const STATX_GID: u32 = libc::STATX_GID;
/// `stx_atime`; see [`STATX_TYPE`].
pub const STATX_ATIME: u32 = libc::STATX_ATIME;
/// `stx_mtime`; see [`STATX_TYPE`].
pub const STATX_MTIME: u32 = libc::STATX_MTIME;
/// `stx_ctime`; see [`STATX_TYPE`].
pub const STATX_CTIME: u32 = libc::STATX_CTIME;
/// `stx_ino`; see [`STATX_TYPE`].
pub const STATX_INO: u32 = libc::STATX_INO;
/// `stx_size`; see [`STATX_TYPE`].
pub const STATX_SIZE: u32 = libc::STATX_SIZE;
/// `stx_blocks`; see [`STATX_TYPE`].
pub const STATX_BLOCKS: u32 = libc::STATX_BLOCKS;
/// Everything `stat(2)` gives: type, mode, nlink, uid, gid, times, ino,
/// size, blocks; see [`STATX_TYPE`].
pub const STATX_BASIC_STATS: u32 = libc::STATX_BASIC_STATS;
/// `stx_btime`, the creation time; see [`STATX_TYPE`].
pub const STATX_BTIME: u32 = libc::STATX_BTIME;
/// `stx_mnt_id`, the mount (Linux 5.8+), which tells bind mounts apart
/// where `dev` cannot; see [`STATX_TYPE`] and [`Metadata::mount_id`].
pub const STATX_MNT_ID: u32 = libc::STATX_MNT_ID;

/// Which file an object is: its device and inode number, the pair that
/// identifies a file on a running system (as `find` and `du` use it to
/// detect loops and hard links).
///
/// From [`Dir::file_id`](super::Dir::file_id) (a cheap direct `statx` of
/// an open directory) or [`Metadata::file_id`].
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::{statx, Dir};
///
/// tokio_uring::start(async {
///     let dir = Dir::open("/").await?;
///     let meta = statx("/", libc::STATX_BASIC_STATS).await?;
///     assert_eq!(dir.file_id()?, meta.file_id());
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    /// Device of the file system holding the file, as `st_dev`.
    pub dev: u64,
    /// Inode number, as `st_ino`.
    pub ino: u64,
}

impl FileId {
    pub(crate) fn from_statx(stx: &libc::statx) -> FileId {
        FileId {
            dev: libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            ino: stx.stx_ino,
        }
    }
}

/// What `statx` reported about a file (the file itself, never the target
/// of a symbolic link).
///
/// Fields outside the mask the kernel returned ([`Metadata::mask`]) are 0;
/// the time accessors return `None` for them.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::{statx, FileType};
///
/// tokio_uring::start(async {
///     let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
///     let meta = statx(manifest, libc::STATX_BASIC_STATS).await?;
///     assert_eq!(meta.file_type(), FileType::Regular);
///     println!("{} bytes in {} blocks of 512", meta.size(), meta.blocks());
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    mask: u32,
    mode: u16,
    nlink: u32,
    uid: u32,
    gid: u32,
    ino: u64,
    size: u64,
    blocks: u64,
    blksize: u32,
    dev: u64,
    rdev: u64,
    mnt_id: u64,
    atime: (i64, u32),
    btime: (i64, u32),
    ctime: (i64, u32),
    mtime: (i64, u32),
}

impl Metadata {
    pub(crate) fn from_statx(stx: &libc::statx) -> Metadata {
        let time = |t: &libc::statx_timestamp| (t.tv_sec, t.tv_nsec);
        Metadata {
            mask: stx.stx_mask,
            mode: stx.stx_mode,
            nlink: stx.stx_nlink,
            uid: stx.stx_uid,
            gid: stx.stx_gid,
            ino: stx.stx_ino,
            size: stx.stx_size,
            blocks: stx.stx_blocks,
            blksize: stx.stx_blksize,
            dev: libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            rdev: libc::makedev(stx.stx_rdev_major, stx.stx_rdev_minor),
            mnt_id: stx.stx_mnt_id,
            atime: time(&stx.stx_atime),
            btime: time(&stx.stx_btime),
            ctime: time(&stx.stx_ctime),
            mtime: time(&stx.stx_mtime),
        }
    }

    /// The `STATX_*` bits of the fields the kernel filled.
    pub fn mask(&self) -> u32 {
        self.mask
    }

    /// Size in bytes (apparent size).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Allocated space in 512-byte units (disk usage is `blocks() * 512`).
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Preferred I/O block size.
    pub fn blksize(&self) -> u32 {
        self.blksize
    }

    /// Inode number.
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// Device of the file system holding the file, as `st_dev`.
    pub fn dev(&self) -> u64 {
        self.dev
    }

    /// The device and inode together, to compare with
    /// [`Dir::file_id`](super::Dir::file_id).
    pub fn file_id(&self) -> FileId {
        FileId {
            dev: self.dev,
            ino: self.ino,
        }
    }

    /// Device number for character and block devices, as `st_rdev`.
    pub fn rdev(&self) -> u64 {
        self.rdev
    }

    /// Number of hard links, as a `u64` like `std`'s
    /// [`MetadataExt::nlink`](std::os::unix::fs::MetadataExt::nlink).
    pub fn nlink(&self) -> u64 {
        u64::from(self.nlink)
    }

    /// Type and permission bits (`st_mode`).
    pub fn mode(&self) -> u32 {
        u32::from(self.mode)
    }

    /// Owner's user id.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Owner's group id.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// The type from the mode bits.
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode())
    }

    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type() == FileType::Directory
    }

    /// True for a regular file, as `std::fs::Metadata::is_file`.
    pub fn is_file(&self) -> bool {
        self.file_type() == FileType::Regular
    }

    /// True for a symbolic link (never followed here), as
    /// `std::fs::Metadata::is_symlink`.
    pub fn is_symlink(&self) -> bool {
        self.file_type() == FileType::Symlink
    }

    /// Size in bytes, as `std::fs::Metadata::len`: the same as
    /// [`size`](Metadata::size).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.size
    }

    /// The mode as `std::fs::Permissions`, equal to what
    /// `std::fs::symlink_metadata(path)?.permissions()` gives.
    pub fn permissions(&self) -> Permissions {
        Permissions::from_mode(self.mode())
    }

    /// The mount holding the file, if [`STATX_MNT_ID`] was asked for and
    /// the kernel filled it (5.8 and later). Unlike [`dev`](Metadata::dev),
    /// it differs between a bind mount and its source.
    pub fn mount_id(&self) -> Option<u64> {
        (self.mask & libc::STATX_MNT_ID != 0).then_some(self.mnt_id)
    }

    /// Last access time.
    pub fn accessed(&self) -> Option<SystemTime> {
        self.time(libc::STATX_ATIME, self.atime)
    }

    /// Last modification of the contents.
    pub fn modified(&self) -> Option<SystemTime> {
        self.time(libc::STATX_MTIME, self.mtime)
    }

    /// Last status change.
    pub fn changed(&self) -> Option<SystemTime> {
        self.time(libc::STATX_CTIME, self.ctime)
    }

    /// Creation time, where the file system records it.
    pub fn created(&self) -> Option<SystemTime> {
        self.time(libc::STATX_BTIME, self.btime)
    }

    fn time(&self, bit: u32, (sec, nsec): (i64, u32)) -> Option<SystemTime> {
        if self.mask & bit == 0 {
            return None;
        }
        let nanos = Duration::from_nanos(u64::from(nsec));
        if sec >= 0 {
            SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(sec as u64) + nanos)
        } else {
            SystemTime::UNIX_EPOCH
                .checked_sub(Duration::from_secs(sec.unsigned_abs()))?
                .checked_add(nanos)
        }
    }
}
