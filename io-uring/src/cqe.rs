//! What the flags of a GETDENTS completion say.
//!
//! From the third patch of this project's series on (`kernel/patches/` in
//! the repository), the kernel marks the completion of a read that reached
//! the end of the directory with [`DIR_EOF`]: the read after it would
//! return 0, so it need not be submitted. Kernels with only the first two
//! patches never set the flag, and even a kernel that has it leaves it off
//! when it does not know (a full buffer, a signal). Its absence therefore
//! always means "maybe more": read on until a read returns 0, as without
//! the flag.
//!
//! # Example
//!
//! List a directory, stopping at the flag where the kernel sets it:
//!
//! ```
//! use io_uring_getdents::{cqe, detect, dirent::DirentIter, io_uring::{types, IoUring}, opcode::GetDents};
//! use std::os::fd::AsRawFd;
//!
//! let mut ring = IoUring::new(8)?;
//! let Some(code) = detect::detect(&ring).opcode() else {
//!     return Ok(()); // a kernel without the patch
//! };
//! let dir = std::fs::File::open("/etc")?;
//! let mut buf = vec![0u8; 32 * 1024];
//! let (mut offset, mut names) = (0, 0);
//! loop {
//!     let sqe = GetDents::new(types::Fd(dir.as_raw_fd()), buf.as_mut_ptr(), buf.len() as u32)
//!         .offset(offset)
//!         .opcode(code)
//!         .build();
//!     // SAFETY: `buf` and `dir` outlive the operation: we wait for it.
//!     unsafe { ring.submission().push(&sqe).expect("queue full") };
//!     ring.submit_and_wait(1)?;
//!     let done = ring.completion().next().expect("one completion");
//!     let res = done.result();
//!     if res < 0 {
//!         return Err(std::io::Error::from_raw_os_error(-res));
//!     }
//!     for entry in DirentIter::new(&buf[..res as usize]) {
//!         names += 1;
//!         offset = entry?.offset();
//!     }
//!     if res == 0 || cqe::dir_eof(done.flags()) {
//!         break;
//!     }
//! }
//! assert!(names >= 2); // "." and ".." at least
//! # Ok::<_, std::io::Error>(())
//! ```

/// `IORING_CQE_F_DIR_EOF`: set in the flags of a GETDENTS completion when
/// the read reached the end of the directory.
///
/// Bit 14, a bit of its own: the highest of the flag bits (0-15; the
/// buffer ID takes 16-31) that no kernel uses for another flag (bits 0-5
/// and 15 are taken today, generic flags are added from the bottom). The
/// kernel sets it on a read that returns 0, and on a read with records
/// after which its own further iteration, into the rest of the buffer,
/// found nothing.
///
/// ```
/// assert_eq!(io_uring_getdents::cqe::DIR_EOF, 1 << 14);
/// ```
pub const DIR_EOF: u32 = 1 << 14;

/// Whether the flags of a GETDENTS completion say the directory is at its
/// end: no further read is needed. `false` means "maybe more" (and is all a
/// kernel without the flag ever says). Only meaningful for GETDENTS.
///
/// ```
/// use io_uring_getdents::cqe::{dir_eof, DIR_EOF};
/// assert!(dir_eof(DIR_EOF));
/// assert!(!dir_eof(0));
/// // IORING_CQE_F_BUFFER, IORING_CQE_F_MORE and IORING_CQE_F_SOCK_NONEMPTY
/// // (bit 2, which an earlier version of the kernel patch used) are other bits.
/// assert!(!dir_eof(1 | 1 << 1 | 1 << 2));
/// ```
pub const fn dir_eof(flags: u32) -> bool {
    flags & DIR_EOF != 0
}
