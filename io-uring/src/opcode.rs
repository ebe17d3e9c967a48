//! The `IORING_OP_GETDENTS` submission, in the io-uring crate's builder style.
//!
//! One builder serves both io-uring lines in use: [`GetDents::build`] gives
//! an entry of io-uring 0.6 (the one tokio-uring 0.5 is built on), and
//! `GetDents::build_0_7`, with the `io-uring-0-7` feature, an entry of
//! io-uring 0.7 (what `cargo add io-uring` gives today).
//!
//! [`GetDents::plus`] asks for readdirplus: each record then carries the
//! entry's `statx` too (parse those with
//! [`DirentPlusIter`](crate::plus::DirentPlusIter)).

use std::os::fd::RawFd;

use io_uring::{squeue, types};

/// Where the directory comes from: a plain fd or a registered (fixed) file.
///
/// Built from the io-uring crate's own [`types::Fd`] and [`types::Fixed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A file descriptor of the process.
    Fd(RawFd),
    /// An index into the ring's registered files (`IOSQE_FIXED_FILE`).
    Fixed(u32),
}

impl From<types::Fd> for Target {
    fn from(fd: types::Fd) -> Target {
        Target::Fd(fd.0)
    }
}

impl From<types::Fixed> for Target {
    fn from(fixed: types::Fixed) -> Target {
        Target::Fixed(fixed.0)
    }
}

#[cfg(feature = "io-uring-0-7")]
impl From<io_uring_0_7::types::Fd> for Target {
    fn from(fd: io_uring_0_7::types::Fd) -> Target {
        Target::Fd(fd.0)
    }
}

#[cfg(feature = "io-uring-0-7")]
impl From<io_uring_0_7::types::Fixed> for Target {
    fn from(fixed: io_uring_0_7::types::Fixed) -> Target {
        Target::Fixed(fixed.0)
    }
}

/// `IORING_GETDENTS_PLUS`, the GETDENTS flag (in `sqe->rw_flags`) for
/// readdirplus: every record carries the entry's `statx` after its name,
/// as laid out in [`plus`](crate::plus). [`GetDents::plus`] sets it.
///
/// A kernel whose GETDENTS lacks readdirplus answers any nonzero
/// `rw_flags` with `-EINVAL`;
/// [`detect::plus_cached`](crate::detect::plus_cached) tells the two apart.
///
/// ```
/// assert_eq!(io_uring_getdents::opcode::GETDENTS_PLUS, 1);
/// ```
pub const GETDENTS_PLUS: u32 = 1 << 0;

/// `IORING_GETDENTS_PLUS_DCACHE`, with [`GETDENTS_PLUS`]: the kernel looks
/// names up in the dcache only, inline or in io-wq, and a record whose
/// name would need the filesystem carries `-EAGAIN` in place of its
/// `statx`, for the caller to stat itself. [`GetDents::plus_dcache`] sets
/// both. On its own, or on a kernel whose readdirplus predates it, the
/// flag is `-EINVAL`; [`PlusSupport::dcache`] says whether it is there.
///
/// [`PlusSupport::dcache`]: crate::detect::PlusSupport::dcache
///
/// ```
/// assert_eq!(io_uring_getdents::opcode::GETDENTS_PLUS_DCACHE, 2);
/// ```
pub const GETDENTS_PLUS_DCACHE: u32 = 1 << 1;

/// Read directory entries, like `getdents64(2)`, from a given position.
///
/// Not in any released kernel: this project's patch series (`kernel/` in
/// the repository) appends it to Linux 7.3's operations (opcode 65 there;
/// it was [`GetDents::CODE`], 58, on 6.12). The
/// completion's result is the number of bytes of `linux_dirent64` records
/// written to the buffer, 0 at the end of the directory, or `-errno`.
/// Parse them with [`DirentIter`](crate::dirent::DirentIter); the `d_off` of
/// the last record is the [`offset`](GetDents::offset) of the next read.
///
/// Opcode numbers of out-of-tree operations are not stable (58 is
/// `IORING_OP_RECV_ZC` from Linux 6.15 on), so never submit this without
/// first asking [`detect`](crate::detect::detect), and pass the number it
/// found to [`opcode`](GetDents::opcode).
///
/// # Example
///
/// ```
/// use io_uring_getdents::{detect, io_uring::{types, IoUring}, opcode::GetDents};
/// use std::os::fd::AsRawFd;
///
/// let mut ring = IoUring::new(8)?;
/// let Some(code) = detect::detect(&ring).opcode() else {
///     return Ok(()); // a kernel without the patch: submit nothing
/// };
/// let dir = std::fs::File::open(".")?;
/// let mut buf = vec![0u8; 32 * 1024];
/// let sqe = GetDents::new(types::Fd(dir.as_raw_fd()), buf.as_mut_ptr(), buf.len() as u32)
///     .offset(0)
///     .opcode(code)
///     .build();
/// // SAFETY: `buf` and `dir` outlive the submission: we wait for it below.
/// unsafe { ring.submission().push(&sqe).expect("queue full") };
/// ring.submit_and_wait(1)?;
/// let bytes = ring.completion().next().unwrap().result();
/// assert!(bytes >= 0);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct GetDents {
    fd: Target,
    buf: *mut u8,
    len: u32,
    offset: u64,
    opcode: u8,
    plus_mask: Option<u32>,
    dcache: bool,
}

impl GetDents {
    /// The number the series had on its 6.12 base (the first free number
    /// after `IORING_OP_LISTEN`, 57), which [`GetDents::new`] starts with.
    /// Not the number on any other kernel: pass the one
    /// [`detect`](crate::detect::detect) found to [`opcode`](GetDents::opcode).
    pub const CODE: u8 = 58;

    /// A read of up to `len` bytes into `buf` from the start of the directory.
    pub fn new(fd: impl Into<Target>, buf: *mut u8, len: u32) -> GetDents {
        GetDents {
            fd: fd.into(),
            buf,
            len,
            offset: 0,
            opcode: GetDents::CODE,
            plus_mask: None,
            dcache: false,
        }
    }

    /// Position to read from: 0, or the `d_off` of the last entry already
    /// read. The kernel seeks there first if the file is elsewhere (through
    /// the filesystem's `llseek`, which refuses positions it never handed
    /// out, as `lseek(2)` does), and leaves the file's position after the
    /// last record it returns.
    ///
    /// `u64::MAX` (-1) reads from the file's current position, like
    /// `IORING_OP_READ`: reads linked with `IOSQE_IO_LINK` then list a
    /// directory in order. Kernels with the first version of the patch
    /// answer it with `-EINVAL`.
    pub const fn offset(mut self, offset: u64) -> GetDents {
        self.offset = offset;
        self
    }

    /// Uses another opcode number, as found by
    /// [`detect`](crate::detect::detect).
    pub const fn opcode(mut self, code: u8) -> GetDents {
        self.opcode = code;
        self
    }

    /// Readdirplus: each record also carries the entry's `statx`, the
    /// fields `mask` asks for (`libc::STATX_*` bits, as for `statx(2)`).
    ///
    /// Sets [`GETDENTS_PLUS`] in `sqe->rw_flags` and `mask` in
    /// `sqe->file_index`. Each entry's `statx` is what
    /// `statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, mask)`
    /// gives, or an errno in its place: `-EOPNOTSUPP` for `..` (whose
    /// answer depends on the caller's root and mounts: stat it yourself),
    /// `-EACCES` for every entry without search permission on the
    /// directory, `-ENOENT` for an entry removed in between. Records are
    /// 264 bytes longer than plain ones ([`plus::TAIL_LEN`]), so a buffer
    /// holds fewer; one too small for a single record is `-EINVAL`.
    /// Parse them with [`DirentPlusIter`](crate::plus::DirentPlusIter).
    ///
    /// Submit it only where
    /// [`detect::plus_cached`](crate::detect::plus_cached) says the kernel
    /// has the mode (a GETDENTS without it answers `-EINVAL`); a mask with
    /// bit 31 (`STATX__RESERVED`) is `-EINVAL` too.
    ///
    /// [`plus::TAIL_LEN`]: crate::plus::TAIL_LEN
    ///
    /// # Example
    ///
    /// ```
    /// use io_uring_getdents::{detect, io_uring::{types, IoUring}, opcode::GetDents, plus::DirentPlusIter};
    /// use std::os::fd::AsRawFd;
    ///
    /// let Some(code) = detect::plus_cached().opcode() else {
    ///     return Ok(()); // no readdirplus here: submit nothing
    /// };
    /// let mut ring = IoUring::new(8)?;
    /// let dir = std::fs::File::open(".")?;
    /// let mut buf = vec![0u8; 32 * 1024];
    /// let sqe = GetDents::new(types::Fd(dir.as_raw_fd()), buf.as_mut_ptr(), buf.len() as u32)
    ///     .opcode(code)
    ///     .plus(libc::STATX_TYPE | libc::STATX_SIZE)
    ///     .build();
    /// // SAFETY: `buf` and `dir` outlive the submission: we wait for it below.
    /// unsafe { ring.submission().push(&sqe).expect("queue full") };
    /// ring.submit_and_wait(1)?;
    /// let bytes = ring.completion().next().unwrap().result();
    /// assert!(bytes > 0);
    /// for entry in DirentPlusIter::new(&buf[..bytes as usize]) {
    ///     let entry = entry?;
    ///     match entry.stat() {
    ///         Ok(stx) => println!("{:?}: {} bytes", entry.name(), stx.stx_size),
    ///         Err(e) => println!("{:?}: {e}", entry.name()),
    ///     }
    /// }
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub const fn plus(mut self, mask: u32) -> GetDents {
        self.plus_mask = Some(mask);
        self.dcache = false;
        self
    }

    /// [`plus`](GetDents::plus) whose lookups never wait
    /// ([`GETDENTS_PLUS_DCACHE`]): a name not in the dcache (or one whose
    /// lookup or attributes would need the filesystem) comes with
    /// `-EAGAIN` (`ErrorKind::WouldBlock` from
    /// [`DirentPlus::stat`](crate::plus::DirentPlus::stat)) for you to
    /// `statx` yourself. A warm directory is read and stat'ed inline; a
    /// cold one still lists its names as soon as they are read, and their
    /// lookups can then wait side by side rather than one after the other
    /// in the request's io-wq worker.
    ///
    /// Submit it only where [`PlusSupport::dcache`] is true.
    ///
    /// [`PlusSupport::dcache`]: crate::detect::PlusSupport::dcache
    ///
    /// ```
    /// use io_uring_getdents::{io_uring::types, opcode::GetDents};
    /// let sqe = GetDents::new(types::Fd(3), std::ptr::null_mut(), 0)
    ///     .plus_dcache(libc::STATX_SIZE)
    ///     .build();
    /// # drop(sqe);
    /// ```
    pub const fn plus_dcache(mut self, mask: u32) -> GetDents {
        self.plus_mask = Some(mask);
        self.dcache = true;
        self
    }

    /// The submission queue entry, for io-uring 0.6.
    ///
    /// For a ring of io-uring 0.7, enable the `io-uring-0-7` feature and
    /// call `build_0_7` instead.
    ///
    /// ```
    /// use io_uring_getdents::{io_uring::types, opcode::GetDents};
    /// let entry = GetDents::new(types::Fd(3), std::ptr::null_mut(), 0).build().user_data(7);
    /// assert_eq!(entry.get_user_data(), 7);
    /// ```
    pub fn build(self) -> squeue::Entry {
        let raw = self.raw();
        // SAFETY: `squeue::Entry` is `#[repr(C)]` around the kernel's
        // `io_uring_sqe` (64 bytes, every bit pattern valid: plain integers
        // and unions of them). `RawSqe` is a `#[repr(C)]` struct of the same
        // size and alignment (asserted below) with the same field offsets;
        // tests/sqe_layout.rs compares our bytes with SQEs the io-uring
        // crate builds itself. The crate offers no raw constructor
        // (tokio-rs/io-uring#374), hence the transmute.
        unsafe { std::mem::transmute::<RawSqe, squeue::Entry>(raw) }
    }

    /// The submission queue entry, for io-uring 0.7 (feature
    /// `io-uring-0-7`).
    ///
    /// ```
    /// use io_uring_getdents::{io_uring_0_7::types, opcode::GetDents};
    /// let entry = GetDents::new(types::Fd(3), std::ptr::null_mut(), 0).build_0_7().user_data(7);
    /// assert_eq!(entry.get_user_data(), 7);
    /// ```
    #[cfg(feature = "io-uring-0-7")]
    pub fn build_0_7(self) -> io_uring_0_7::squeue::Entry {
        let raw = self.raw();
        // SAFETY: as in `build`: io-uring 0.7's `squeue::Entry` is the same
        // `#[repr(C)]` wrapper of the 64-byte `io_uring_sqe` (size and
        // alignment asserted below), and tests/sqe_layout.rs compares our
        // bytes with the 0.7 crate's own `Read` entries.
        unsafe { std::mem::transmute::<RawSqe, io_uring_0_7::squeue::Entry>(raw) }
    }

    fn raw(self) -> RawSqe {
        let GetDents {
            fd,
            buf,
            len,
            offset,
            opcode,
            plus_mask,
            dcache,
        } = self;
        let (fd, flags) = match fd {
            Target::Fd(fd) => (fd, 0),
            // Registered files are named by index in the fd field.
            Target::Fixed(index) => (index as i32, squeue::Flags::FIXED_FILE.bits()),
        };
        // Readdirplus passes its statx mask in the otherwise unused
        // file_index word: GETDENTS takes no fixed-file slot to install into.
        let (op_flags, file_index) = match plus_mask {
            Some(mask) if dcache => (GETDENTS_PLUS | GETDENTS_PLUS_DCACHE, mask),
            Some(mask) => (GETDENTS_PLUS, mask),
            None => (0, 0),
        };
        RawSqe {
            opcode,
            flags,
            ioprio: 0,
            fd,
            off: offset,
            addr: buf as u64,
            len,
            op_flags,
            user_data: 0,
            buf_index: 0,
            personality: 0,
            file_index,
            addr3: 0,
            pad: 0,
        }
    }
}

/// The kernel's 64-byte `struct io_uring_sqe`, with the unions reduced to
/// the members GETDENTS uses.
#[repr(C)]
struct RawSqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    op_flags: u32,
    user_data: u64,
    buf_index: u16,
    personality: u16,
    file_index: u32,
    addr3: u64,
    pad: u64,
}

const _: () = assert!(std::mem::size_of::<RawSqe>() == 64);
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
const _: () = assert!(std::mem::align_of::<RawSqe>() == std::mem::align_of::<squeue::Entry>());
#[cfg(feature = "io-uring-0-7")]
const _: () = assert!(std::mem::size_of::<io_uring_0_7::squeue::Entry>() == 64);
#[cfg(feature = "io-uring-0-7")]
const _: () =
    assert!(std::mem::align_of::<RawSqe>() == std::mem::align_of::<io_uring_0_7::squeue::Entry>());
