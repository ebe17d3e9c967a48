//! Thin wrappers over the system calls the walkers share.

use std::cell::Cell;
use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};

use io_uring_getdents::syscall;

pub(crate) use crate::timestamp::{TimeField, Timestamp as Time};

/// One statx result, written by the kernel (a `uring` walker's STATX).
pub(crate) type StatxBuf = std::cell::UnsafeCell<MaybeUninit<libc::statx>>;

/// A file's identity: the device it is on and its inode number there
/// (`st_dev`, `st_ino`). An inode number is unique only within one
/// filesystem, so both are needed to tell two files apart across mounts.
/// It keys the directories of loop detection and of `count_once`, and the
/// hard-linked inodes counted once; `tokio-uring-getdents` has the same
/// `FileId`. Hashes as the pair `(dev, ino)` would.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// What a walker needs from a stat, whichever call produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub mode: u32,
    pub nlink: u64,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    /// The mount's id (`STATX_MNT_ID`), when the call gave one: bind
    /// mounts share `dev` with their source but not this.
    pub mnt_id: Option<u64>,
    /// Whether this is the root of a mount (`STATX_ATTR_MOUNT_ROOT`), when
    /// the call told: only a mount root can repeat an ancestor (a bind
    /// mount), so the others skip the loop check.
    pub mount_root: Option<bool>,
    // Owner, group and times: what a listing with metadata hands out
    // (asked for with `STATX_LS_MASK`); the totals never read them.
    pub uid: u32,
    pub gid: u32,
    pub atime: Time,
    pub mtime: Time,
    pub ctime: Time,
}

impl Stat {
    /// The time `field` (zero unless the `statx` asked for it).
    pub fn time(&self, field: TimeField) -> Time {
        match field {
            TimeField::Access => self.atime,
            TimeField::Modification => self.mtime,
            TimeField::StatusChange => self.ctime,
        }
    }

    /// The file's identity (device, inode).
    pub fn id(&self) -> FileId {
        FileId {
            dev: self.dev,
            ino: self.ino,
        }
    }

    /// Whether this directory may be one of its ancestors: a mount root
    /// (a bind mount of one), or not known.
    pub fn may_loop(&self) -> bool {
        self.mount_root != Some(false)
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }

    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    /// Whether other names may lead to this inode, so that `du` counts it
    /// once: several links, and not a directory (a directory always has
    /// several, "." and its children's "..", and is never shared).
    pub fn is_hard_linked(&self) -> bool {
        self.nlink > 1 && !self.is_dir()
    }

    /// The fields of a `std` metadata (the `std` and `tokio` engines): no
    /// mount id, and whether it is a mount root is not known.
    #[cfg(feature = "reference-engines")]
    pub(crate) fn from_metadata(meta: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        Stat {
            mode: meta.mode(),
            nlink: meta.nlink(),
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            blocks: meta.blocks(),
            mnt_id: None,
            mount_root: None,
            uid: meta.uid(),
            gid: meta.gid(),
            atime: Time::from_ext(meta.atime(), meta.atime_nsec()),
            mtime: Time::from_ext(meta.mtime(), meta.mtime_nsec()),
            ctime: Time::from_ext(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The fields of a `statx` result (the `threads` and `uring` engines).
    pub(crate) fn from_statx(stx: &libc::statx) -> Stat {
        Stat {
            mode: u32::from(stx.stx_mode),
            nlink: u64::from(stx.stx_nlink),
            dev: libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
            ino: stx.stx_ino,
            size: stx.stx_size,
            blocks: stx.stx_blocks,
            mnt_id: (stx.stx_mask & libc::STATX_MNT_ID != 0).then_some(stx.stx_mnt_id),
            mount_root: (stx.stx_attributes_mask & MOUNT_ROOT != 0)
                .then_some(stx.stx_attributes & MOUNT_ROOT != 0),
            uid: stx.stx_uid,
            gid: stx.stx_gid,
            atime: Time::from_statx(&stx.stx_atime),
            mtime: Time::from_statx(&stx.stx_mtime),
            ctime: Time::from_statx(&stx.stx_ctime),
        }
    }
}

/// `STATX_ATTR_MOUNT_ROOT` as the attribute bits' type.
const MOUNT_ROOT: u64 = libc::STATX_ATTR_MOUNT_ROOT as u64;

/// The fields of `statx` the totals use, and the mount id for `-x`
/// (Linux 5.8; older kernels leave it out of `stx_mask`). Kept to these
/// in walks that count sizes: see [`STATX_LS_MASK`].
pub(crate) const STATX_MASK: u32 = libc::STATX_TYPE
    | libc::STATX_NLINK
    | libc::STATX_INO
    | libc::STATX_SIZE
    | libc::STATX_BLOCKS
    | libc::STATX_MNT_ID;

/// The further fields a listing with metadata hands out (what `ls -l`
/// shows): asked for in those walks only, see
/// [`Config::statx_mask`](crate::config::Config::statx_mask).
pub(crate) const STATX_LS_MASK: u32 = libc::STATX_MODE
    | libc::STATX_UID
    | libc::STATX_GID
    | libc::STATX_ATIME
    | libc::STATX_MTIME
    | libc::STATX_CTIME;

/// Never follow the last component; never trigger an automount (du does
/// not either).
pub(crate) const STATX_FLAGS: i32 = libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT;

/// `statx` of `name` relative to `dir` (or the working directory when
/// `dir` is `None`), without following a symlink, asking for the fields
/// of `mask` (the walk's [`Config::statx_mask`](crate::config::Config::statx_mask)).
pub(crate) fn statx(dir: Option<BorrowedFd<'_>>, name: &CStr, mask: u32) -> io::Result<Stat> {
    syscall::statx(dir, name, STATX_FLAGS, mask).map(|stx| Stat::from_statx(&stx))
}

/// `statx` of the open file `fd` itself (`AT_EMPTY_PATH`): no name to
/// copy in or look up, so cheaper than a `statx` of the name.
pub(crate) fn fstatx(fd: BorrowedFd<'_>, mask: u32) -> io::Result<Stat> {
    syscall::statx(Some(fd), c"", STATX_FLAGS | libc::AT_EMPTY_PATH, mask)
        .map(|stx| Stat::from_statx(&stx))
}

/// Opens the directory `name` relative to `dir` (or the working
/// directory): a directory, never through a symlink, not inherited by
/// children.
pub(crate) fn open_dir(dir: Option<BorrowedFd<'_>>, name: &CStr) -> io::Result<OwnedFd> {
    syscall::open_dir_at(dir, name)
}

/// `statx` of `name` relative to `dir` (or the working directory),
/// following a symlink (a walk that follows links,
/// [`WalkBuilder::follow_links`](crate::WalkBuilder::follow_links)).
pub(crate) fn statx_follow(
    dir: Option<BorrowedFd<'_>>,
    name: &CStr,
    mask: u32,
) -> io::Result<Stat> {
    let dirfd = dir.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    let mut out = MaybeUninit::<libc::statx>::uninit();
    // SAFETY: `name` is NUL-terminated and lives through the call; `out` is
    // writable memory of the size the kernel fills; `dirfd` is AT_FDCWD or
    // a descriptor kept open by the borrow.
    let ret = unsafe {
        libc::statx(
            dirfd,
            name.as_ptr(),
            libc::AT_NO_AUTOMOUNT,
            mask,
            out.as_mut_ptr(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful statx wrote the whole struct.
    Ok(Stat::from_statx(unsafe { &out.assume_init() }))
}

/// Opens the directory `name` relative to `dir` (or the working
/// directory) like [`open_dir`], but through a symlink: for a walk that
/// follows links.
pub(crate) fn open_dir_follow(dir: Option<BorrowedFd<'_>>, name: &CStr) -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    let dirfd = dir.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: `name` is a NUL-terminated string that lives through the
    // call; `dirfd` is AT_FDCWD or a descriptor kept open by the borrow.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful openat returns a new descriptor that nothing
    // else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The soft limit on open files (`ulimit -n`).
pub(crate) fn open_file_limit() -> u64 {
    let mut lim = MaybeUninit::<libc::rlimit>::uninit();
    // SAFETY: `lim` is writable storage for one `struct rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, lim.as_mut_ptr()) } != 0 {
        return 1024;
    }
    // SAFETY: getrlimit returned 0, so it filled the struct.
    let cur = unsafe { lim.assume_init() }.rlim_cur;
    if cur == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        cur
    }
}

/// Under an address-space limit (`ulimit -v`), keeps glibc's malloc to
/// one arena. Each further arena, made for a thread's first allocation,
/// reserves 64 MiB of address space: under a small limit the first
/// threads' arenas take what the others then need for their stacks, and
/// an allocation that fails inside Rust's runtime (a new thread's signal
/// stack) cannot be handled. The walk's threads allocate rarely, so one
/// arena costs them little.
pub(crate) fn one_malloc_arena_under_address_limit() {
    let mut lim = MaybeUninit::<libc::rlimit>::uninit();
    // SAFETY: `lim` is writable storage for one `struct rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, lim.as_mut_ptr()) } != 0 {
        return;
    }
    // SAFETY: getrlimit returned 0, so it filled the struct.
    if unsafe { lim.assume_init() }.rlim_cur == libc::RLIM_INFINITY {
        return;
    }
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets a tunable of glibc's allocator; lowering
    // the arena count is allowed at any time (existing arenas stay).
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Whether `len` more bytes of address space can be mapped now (`ulimit
/// -v`). A thread's stack and the signal stack std maps for it are
/// mappings of their own: memory that malloc has free in its heap does not
/// stand for them, so the room is tried with a mapping, reserved and
/// returned at once.
pub(crate) fn can_map(len: usize) -> bool {
    // SAFETY: asks for a new private anonymous mapping at an address of the
    // kernel's choice, so no existing memory is touched; PROT_NONE and
    // MAP_NORESERVE: nothing is committed, only the address space counts.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if at == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: `at` is the mapping of `len` bytes made just above, which
    // nothing else knows of.
    unsafe { libc::munmap(at, len) };
    true
}

/// The CPUs this process may run on, asked once: std reads the cgroup's
/// CPU quota from /proc and /sys on every call (a dozen system calls,
/// most of the cost of walking a small PATH among thousands).
pub(crate) fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

thread_local! {
    /// Locks of the walk the calling thread found held by another thread
    /// (see [`lock`]).
    static LOCK_WAITS: Cell<u64> = const { Cell::new(0) };
}

/// Locks a mutex of the walk, counting on the calling thread a lock held
/// by another: waiting for it may block the thread, a voluntary context
/// switch that is not the disk's (see [`lock_waits`]). A poisoned lock
/// only means another worker panicked; the walk is reported as failed
/// then.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => {
            LOCK_WAITS.with(|n| n.set(n.get() + 1));
            m.lock().unwrap_or_else(|p| p.into_inner())
        }
    }
}

/// How many locks of the walk the calling thread found held so far.
pub(crate) fn lock_waits() -> u64 {
    LOCK_WAITS.with(Cell::get)
}

/// How many times the calling thread has blocked (voluntary context
/// switches: waiting for I/O or a lock), as opposed to being preempted.
pub(crate) fn voluntary_switches() -> u64 {
    let mut usage = MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `usage` is writable storage for one `struct rusage`.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) } != 0 {
        return 0;
    }
    // SAFETY: getrusage returned 0, so it filled the struct.
    unsafe { usage.assume_init() }.ru_nvcsw as u64
}

/// The filesystem type (`f_type` of `fstatfs`) of the open file `fd`.
pub(crate) fn fs_type(fd: BorrowedFd<'_>) -> io::Result<libc::c_long> {
    let mut buf = MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `buf` is writable storage for one `struct statfs`.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), buf.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatfs returned 0, so it filled the struct.
    Ok(unsafe { buf.assume_init() }.f_type)
}

#[cfg(test)]
mod tests {
    /// The process's address space in bytes, from /proc/self/status.
    fn vm_size() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib << 10
    }

    #[test]
    fn room_is_tried_with_a_mapping_and_given_back() {
        assert!(super::can_map(16 << 20));
        // 1 PiB: more than a process's address space (47 bits) can hold.
        assert!(!super::can_map(1 << 50));
        // Given back: eight tries of 256 MiB leave the address space as
        // it was, give or take what the other tests map meanwhile (a
        // leak would add 2 GiB). Sizes valgrind's memcheck maps too.
        let before = vm_size();
        for _ in 0..8 {
            assert!(super::can_map(256 << 20));
        }
        let grown = vm_size().saturating_sub(before);
        assert!(grown < 256 << 20, "the address space grew by {grown} bytes");
    }
}
