//! `IORING_OP_GETDENTS` for the [`io_uring`] crate.
//!
//! No released kernel can read a directory through io_uring; this project
//! carries a kernel patch that adds the operation (see `kernel/` in the
//! repository). This crate gives user space what it needs to use it:
//!
//! - [`opcode::GetDents`]: the submission, built like the io-uring crate's
//!   own opcodes;
//! - [`dirent::DirentIter`]: a safe parser for the `linux_dirent64` records
//!   the kernel writes, and [`plus::DirentPlusIter`] for readdirplus
//!   records ([`GetDents::plus`](opcode::GetDents::plus)), which carry each
//!   entry's `statx` too;
//! - [`detect`]: whether the running kernel really has the operation,
//!   checked with a real read, not only the opcode number, and its
//!   readdirplus mode ([`detect::plus_cached`]);
//! - [`cqe::dir_eof`]: whether a completion says the directory is at its
//!   end, so that the empty read after it need not be submitted;
//! - [`syscall::getdents64`]: the plain system call, as reference and
//!   fallback, with [`syscall::open_dir_at`] and [`syscall::statx`], the
//!   calls a walk makes beside it;
//! - [`read_all::read_dir_all`]: a whole directory in one call, through
//!   GETDENTS where the kernel has it and `getdents64` elsewhere.
//!
//! The io-uring crate is re-exported, so one dependency is enough.
//!
//! # Which io-uring
//!
//! | your ring comes from | enable | build entries with | the crate, re-exported as |
//! |---|---|---|---|
//! | io-uring 0.6, or tokio-uring 0.5 | nothing (always on) | [`GetDents::build`](opcode::GetDents::build) | [`io_uring`] |
//! | io-uring 0.7 (`cargo add io-uring` today) | feature `io-uring-0-7` | `GetDents::build_0_7` | `io_uring_0_7` |
//!
//! Both can be on in one build. Detection ([`detect::cached`]) runs on a
//! ring of its own, so it serves either; [`detect::detect`] probes through
//! a 0.6 ring the caller already has.
//!
//! # Example
//!
//! List a directory with GETDENTS, chaining reads by `d_off`:
//!
//! ```
//! use io_uring_getdents::{detect, dirent::DirentIter, io_uring::{types, IoUring}, opcode::GetDents};
//! use std::os::fd::AsRawFd;
//!
//! let mut ring = IoUring::new(8)?;
//! let Some(code) = detect::detect(&ring).opcode() else {
//!     return Ok(()); // a kernel without the patch
//! };
//! let dir = std::fs::File::open("/etc")?;
//! let mut buf = vec![0u8; 32 * 1024];
//! let mut offset = 0;
//! loop {
//!     let sqe = GetDents::new(types::Fd(dir.as_raw_fd()), buf.as_mut_ptr(), buf.len() as u32)
//!         .offset(offset)
//!         .opcode(code)
//!         .build();
//!     // SAFETY: `buf` and `dir` outlive the operation: we wait for it.
//!     unsafe { ring.submission().push(&sqe).expect("queue full") };
//!     ring.submit_and_wait(1)?;
//!     let res = ring.completion().next().expect("one completion").result();
//!     if res < 0 {
//!         return Err(std::io::Error::from_raw_os_error(-res));
//!     }
//!     if res == 0 {
//!         break;
//!     }
//!     for entry in DirentIter::new(&buf[..res as usize]) {
//!         let entry = entry?;
//!         println!("{}", entry.name_os().to_string_lossy());
//!         offset = entry.offset();
//!     }
//! }
//! # Ok::<_, std::io::Error>(())
//! ```
#![warn(missing_docs)]

pub use io_uring;
/// io-uring 0.7, the crate `GetDents::build_0_7` builds entries for.
#[cfg(feature = "io-uring-0-7")]
pub use io_uring_0_7;

pub mod cqe;
pub mod detect;
pub mod dirent;
pub mod opcode;
pub mod plus;
pub mod read_all;
pub mod syscall;
