//! Whether this process can use io_uring at all: set up a ring *and* enter
//! it. Sandboxes filter the three io_uring system calls one at a time
//! (container seccomp profiles), so a ring that was set up may still
//! refuse every submission; a program that trusts it then waits forever
//! for completions that never come, or fails on its first submission.

use std::fmt;
use std::io;
use std::sync::OnceLock;

use io_uring::{opcode, IoUring};

/// Why io_uring cannot be used by this process.
///
/// ```
/// use io_uring_getdents::detect::RingError;
/// let e = RingError::Enter(std::io::Error::from_raw_os_error(libc::EPERM));
/// assert_eq!(e.io_error().kind(), std::io::ErrorKind::PermissionDenied);
/// assert!(e.to_string().starts_with("io_uring_enter failed"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RingError {
    /// `io_uring_setup` failed: a kernel without io_uring, the
    /// `kernel.io_uring_disabled` sysctl, a seccomp filter, no memory.
    Setup(io::Error),
    /// A ring was set up but `io_uring_enter` failed, or a `NOP` submitted
    /// through it failed: a seccomp filter that allows only the setup.
    Enter(io::Error),
}

impl RingError {
    /// The system call's error.
    pub fn io_error(&self) -> &io::Error {
        match self {
            RingError::Setup(e) | RingError::Enter(e) => e,
        }
    }

    /// A new `io::Error` of the same kind whose message names the system
    /// call, for a caller that returns `io::Result`.
    ///
    /// ```
    /// use io_uring_getdents::detect::RingError;
    /// let e = RingError::Setup(std::io::Error::from_raw_os_error(libc::ENOSYS)).to_io_error();
    /// assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    /// assert!(e.to_string().contains("io_uring_setup"));
    /// ```
    pub fn to_io_error(&self) -> io::Error {
        io::Error::new(self.io_error().kind(), self.to_string())
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Setup(e) => write!(f, "io_uring_setup failed: {e}"),
            RingError::Enter(e) => write!(f, "io_uring_enter failed: {e}"),
        }
    }
}

impl std::error::Error for RingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.io_error())
    }
}

/// Sets up a small ring of its own and waits for a `NOP` on it: `Ok` when
/// both work. Costs a thread, a ring's setup and one round trip (a median
/// of 0.1 ms on a loaded 2-CPU machine); [`io_uring_usable`] keeps the
/// first answer.
///
/// The ring lives on a short-lived thread of its own (on the calling
/// thread only if no thread can start): the first ring a thread sets up
/// sizes that thread's io-wq pool for every later ring (to its
/// submission queue's size, here 2), and the caller's pool is the
/// caller's to size.
///
/// ```
/// match io_uring_getdents::detect::check_io_uring() {
///     Ok(()) => println!("io_uring works here"),
///     Err(why) => println!("no io_uring: {why}"),
/// }
/// ```
pub fn check_io_uring() -> Result<(), RingError> {
    match std::thread::Builder::new()
        .name("io-uring-check".into())
        .spawn(nop_round_trip)
    {
        Ok(thread) => thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(_) => nop_round_trip(),
    }
}

fn nop_round_trip() -> Result<(), RingError> {
    let mut ring = IoUring::new(2).map_err(RingError::Setup)?;
    let nop = opcode::Nop::new().build();
    // SAFETY: a NOP points to no memory.
    unsafe { ring.submission().push(&nop) }
        .map_err(|_| RingError::Enter(io::Error::other("a new ring's queue is full")))?;
    loop {
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(RingError::Enter(e)),
        }
        if let Some(cqe) = ring.completion().next() {
            return match cqe.result() {
                res if res < 0 => Err(RingError::Enter(io::Error::from_raw_os_error(-res))),
                _ => Ok(()),
            };
        }
    }
}

/// [`check_io_uring`], run once per process; later calls return the first
/// answer (a seccomp filter installed after it is not seen).
///
/// A program about to start an io_uring runtime (whose start may panic
/// when the setup fails, and whose operations may never complete when
/// entering fails) asks this first and takes another path on `Err`:
///
/// ```
/// use io_uring_getdents::detect;
/// let names = match detect::io_uring_usable() {
///     Ok(()) => "an io_uring runtime would list it",
///     Err(why) => {
///         eprintln!("listing with std::fs: {why}");
///         "std::fs lists it"
///     }
/// };
/// # let _ = names;
/// ```
pub fn io_uring_usable() -> Result<(), &'static RingError> {
    static USABLE: OnceLock<Result<(), RingError>> = OnceLock::new();
    USABLE.get_or_init(check_io_uring).as_ref().map(|&()| ())
}
