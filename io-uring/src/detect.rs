//! Does the running kernel really have `IORING_OP_GETDENTS`?
//!
//! The probe (`IORING_REGISTER_PROBE`) only says that *some* operation has a
//! number, and numbers move: the series appends GETDENTS after the last
//! mainline operation of its base (58 on 6.12, where 58 became
//! `IORING_OP_RECV_ZC` in 6.15; 65 on 7.3). So no number is assumed: the
//! candidate is the last operation the probe lists, and detection answers
//! [`Support::Available`] only when
//!
//! 1. the probe lists the opcode,
//! 2. the probe lists no opcode after it (the patch appends GETDENTS as the
//!    last operation; a number followed by others is a mainline operation,
//!    and is never submitted, so a wrong guess has no side effect),
//! 3. the opcode is not the last operation of a mainline release (such as
//!    `IORING_OP_PIPE`, 62, the last one of 6.16 to 6.18): a kernel whose
//!    probe ends there lists exactly what that mainline kernel lists, so
//!    the number is that operation, and it is never submitted either, and
//! 4. a real GETDENTS on a directory made for the test, read in small chunks
//!    chained by `d_off`, returns exactly what `getdents64(2)` returns, and
//!    no read after one flagged [`DIR_EOF`](crate::cqe::DIR_EOF) returns
//!    records.
//!
//! The environment variable [`ENV_VAR`] overrides the choice: `off` turns
//! GETDENTS off, `auto` (or unset) checks the probe's last operation, a
//! number checks that opcode number instead (still verified by steps 1-4, so an
//! override never makes this crate submit a known operation with a
//! directory and a buffer).
//!
//! [`cached`] first checks with [`io_uring_usable`] that this process can
//! use io_uring at all: set up a ring and enter it (a `NOP`), since
//! sandboxes may allow the first and refuse the second.
//!
//! Readdirplus ([`GetDents::plus`](crate::opcode::GetDents::plus)) is a mode of GETDENTS that a kernel may
//! lack while having the operation; [`plus_cached`] and [`detect_plus`]
//! check it only where GETDENTS passed the steps above, with a real
//! readdirplus read whose names and attributes are compared with
//! `getdents64(2)` and `statx(2)`. [`PLUS_ENV_VAR`] turns it off alone.

use std::fmt;
use std::io;
use std::sync::OnceLock;

use io_uring::{IoUring, Probe};

/// The mainline operations that are the last of a kernel release, by
/// number: a kernel whose probe ends at one of them is (as far as the probe
/// can tell) that mainline kernel. The series appends GETDENTS after the
/// last operation of its base: 58 on 6.12 (which is `IORING_OP_RECV_ZC` on
/// 6.15 and later, where 59-61 follow it), 65 on 7.3, whose last operation
/// is `IORING_OP_URING_CMD128` (64).
const MAINLINE_RELEASE_LAST: &[(u8, &str)] = &[
    (7, "IORING_OP_POLL_REMOVE"),
    (8, "IORING_OP_SYNC_FILE_RANGE"),
    (10, "IORING_OP_RECVMSG"),
    (11, "IORING_OP_TIMEOUT"),
    (16, "IORING_OP_CONNECT"),
    (29, "IORING_OP_EPOLL_CTL"),
    (32, "IORING_OP_REMOVE_BUFFERS"),
    (33, "IORING_OP_TEE"),
    (36, "IORING_OP_UNLINKAT"),
    (39, "IORING_OP_LINKAT"),
    (40, "IORING_OP_MSG_RING"),
    (46, "IORING_OP_URING_CMD"),
    (47, "IORING_OP_SEND_ZC"),
    (48, "IORING_OP_SENDMSG_ZC"),
    (53, "IORING_OP_FUTEX_WAITV"),
    (54, "IORING_OP_FIXED_FD_INSTALL"),
    (55, "IORING_OP_FTRUNCATE"),
    (57, "IORING_OP_LISTEN"),
    (61, "IORING_OP_WRITEV_FIXED"),
    (62, "IORING_OP_PIPE"),
    (64, "IORING_OP_URING_CMD128"),
];

/// The mainline operation `opcode` is when a kernel's probe ends there.
fn mainline_release_last(opcode: u8) -> Option<&'static str> {
    MAINLINE_RELEASE_LAST
        .iter()
        .find(|&&(code, _)| code == opcode)
        .map(|&(_, name)| name)
}

mod plus;
mod ring;
mod self_test;
use self_test::self_test;

pub use plus::{detect_plus, plus_cached, PlusSupport, PlusUnavailable, PLUS_ENV_VAR};
pub use ring::{check_io_uring, io_uring_usable, RingError};

/// The environment variable that overrides detection: `off`, `auto`, or an
/// opcode number.
pub const ENV_VAR: &str = "IO_URING_GETDENTS";

/// What the caller asked detection to do.
///
/// ```
/// use io_uring_getdents::detect::Choice;
/// assert_eq!(Choice::parse("off"), Ok(Choice::Off));
/// assert_eq!(Choice::parse("61"), Ok(Choice::Opcode(61)));
/// assert!(Choice::parse("sixty").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Choice {
    /// Check the last operation the kernel's probe lists.
    Auto,
    /// Never use GETDENTS.
    Off,
    /// Check this opcode number.
    Opcode(u8),
}

impl Choice {
    /// Parses an override value (`off`, `auto`, or a number 0-255).
    pub fn parse(value: &str) -> Result<Choice, String> {
        match value.trim() {
            "" | "auto" => Ok(Choice::Auto),
            "off" => Ok(Choice::Off),
            number => number.parse::<u8>().map(Choice::Opcode).map_err(|_| {
                format!("{ENV_VAR}={value:?}: expected `off`, `auto` or an opcode number 0-255")
            }),
        }
    }

    /// Reads [`ENV_VAR`]; unset means [`Choice::Auto`].
    pub fn from_env() -> Result<Choice, String> {
        match std::env::var(ENV_VAR) {
            Ok(value) => Choice::parse(&value),
            Err(std::env::VarError::NotPresent) => Ok(Choice::Auto),
            Err(std::env::VarError::NotUnicode(v)) => {
                Err(format!("{ENV_VAR}={v:?}: not valid UTF-8"))
            }
        }
    }
}

/// Why GETDENTS cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum Unavailable {
    /// [`ENV_VAR`] is `off`.
    Disabled,
    /// [`ENV_VAR`] holds something that is not a choice.
    BadOverride(String),
    /// io_uring itself is unavailable: `io_uring_setup` failed (kernel
    /// without io_uring, `kernel.io_uring_disabled` sysctl, seccomp), or
    /// `io_uring_enter` did (a seccomp filter that allows only the setup);
    /// the message names the call ([`io_uring_usable`]).
    NoIoUring(io::Error),
    /// `IORING_REGISTER_PROBE` failed (kernels before 5.6).
    ProbeFailed(io::Error),
    /// The probe does not list the opcode.
    NotListed {
        /// The opcode checked.
        opcode: u8,
    },
    /// The probe lists operations after the opcode, so it is a mainline
    /// operation, not the appended GETDENTS. Nothing was submitted.
    OtherOpcode {
        /// The opcode checked.
        opcode: u8,
        /// The kernel's last opcode number.
        last: u8,
    },
    /// The probe ends at the opcode, but a mainline kernel release ends at
    /// the same operation, so the number is that operation (the probe
    /// lists what that kernel lists). Nothing was submitted.
    KnownOpcode {
        /// The opcode checked.
        opcode: u8,
        /// The mainline operation with that number, e.g.
        /// `IORING_OP_PIPE`.
        name: &'static str,
    },
    /// The self-test could not run or its submission failed.
    SelfTest {
        /// The opcode checked.
        opcode: u8,
        /// What failed.
        error: io::Error,
    },
    /// The submission succeeded but returned other records than
    /// `getdents64`.
    Mismatch {
        /// The opcode checked.
        opcode: u8,
        /// The first difference.
        detail: String,
    },
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Disabled => write!(f, "turned off by {ENV_VAR}=off"),
            Unavailable::BadOverride(msg) => write!(f, "{msg}"),
            Unavailable::NoIoUring(e) => write!(f, "io_uring is unavailable: {e}"),
            Unavailable::ProbeFailed(e) => write!(f, "the io_uring probe failed: {e}"),
            Unavailable::NotListed { opcode } => {
                write!(
                    f,
                    "the kernel's io_uring probe does not list opcode {opcode}"
                )
            }
            Unavailable::OtherOpcode { opcode, last } => write!(
                f,
                "opcode {opcode} is another operation here (this kernel has opcodes up to \
                 {last}: opcode numbers move as mainline adds operations)"
            ),
            Unavailable::KnownOpcode { opcode, name } => write!(
                f,
                "opcode {opcode} is {name} here (the kernel's operations end with it, as on \
                 the mainline kernels that end with {name}); refusing to submit it"
            ),
            Unavailable::SelfTest { opcode, error } => {
                write!(f, "a test GETDENTS with opcode {opcode} failed: {error}")
            }
            Unavailable::Mismatch { opcode, detail } => write!(
                f,
                "opcode {opcode} did not return what getdents64 returns: {detail}"
            ),
        }
    }
}

impl std::error::Error for Unavailable {}

/// The answer of detection. Non-exhaustive: a kernel may one day answer
/// with more (a variant of the opcode, say), so a `match` needs a `_` arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum Support {
    /// GETDENTS works, under this opcode number.
    Available {
        /// The number to pass to [`GetDents::opcode`](crate::opcode::GetDents::opcode).
        opcode: u8,
    },
    /// GETDENTS cannot be used, and why.
    Unavailable(Unavailable),
}

impl Support {
    /// The opcode number if GETDENTS is available.
    ///
    /// ```
    /// use io_uring_getdents::detect::{Support, Unavailable};
    /// assert_eq!(Support::Available { opcode: 58 }.opcode(), Some(58));
    /// assert_eq!(Support::Unavailable(Unavailable::Disabled).opcode(), None);
    /// ```
    pub fn opcode(&self) -> Option<u8> {
        match self {
            Support::Available { opcode } => Some(*opcode),
            Support::Unavailable(_) => None,
        }
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Support::Available { opcode } => {
                write!(f, "IORING_OP_GETDENTS available as opcode {opcode}")
            }
            Support::Unavailable(why) => write!(f, "IORING_OP_GETDENTS unavailable: {why}"),
        }
    }
}

/// Detection with the [`ENV_VAR`] override, probing through `ring`.
///
/// The self-test runs on a small private ring, so nothing is submitted to
/// `ring` and its completions are left alone.
///
/// # Example
///
/// ```
/// use io_uring_getdents::{detect, io_uring::IoUring};
/// let ring = IoUring::new(4)?;
/// match detect::detect(&ring) {
///     detect::Support::Available { opcode } => println!("GETDENTS is opcode {opcode}"),
///     detect::Support::Unavailable(why) => println!("no GETDENTS: {why}"),
///     other => println!("{other}"),
/// }
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn detect(ring: &IoUring) -> Support {
    match Choice::from_env() {
        Ok(choice) => detect_with(ring, choice),
        Err(msg) => Support::Unavailable(Unavailable::BadOverride(msg)),
    }
}

/// Detection for an explicit choice, ignoring the environment.
pub fn detect_with(ring: &IoUring, choice: Choice) -> Support {
    let probe = match choice {
        Choice::Off => return Support::Unavailable(Unavailable::Disabled),
        _ => match probe(ring) {
            Ok(probe) => probe,
            Err(why) => return Support::Unavailable(why),
        },
    };
    let opcode = match choice {
        Choice::Opcode(n) => n,
        // The series appends GETDENTS: only the last operation can be it.
        _ => match last_listed(&probe) {
            Some(last) => last,
            None => return Support::Unavailable(Unavailable::NotListed { opcode: 0 }),
        },
    };
    match check(&probe, opcode) {
        Ok(()) => Support::Available { opcode },
        Err(why) => Support::Unavailable(why),
    }
}

/// Detection on a ring of its own, with the [`ENV_VAR`] override; the
/// first answer is kept for the life of the process.
///
/// ```
/// let support = io_uring_getdents::detect::cached();
/// println!("{support}");
/// ```
pub fn cached() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| match Choice::from_env() {
        Err(msg) => Support::Unavailable(Unavailable::BadOverride(msg)),
        Ok(Choice::Off) => Support::Unavailable(Unavailable::Disabled),
        Ok(choice) => match io_uring_usable().map(|()| IoUring::new(4)) {
            Ok(Ok(ring)) => detect_with(&ring, choice),
            Ok(Err(e)) => Support::Unavailable(Unavailable::NoIoUring(e)),
            Err(why) => Support::Unavailable(Unavailable::NoIoUring(why.to_io_error())),
        },
    })
}

fn probe(ring: &IoUring) -> Result<Probe, Unavailable> {
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(Unavailable::ProbeFailed)?;
    Ok(probe)
}

/// The highest opcode number the probe lists as supported.
fn last_listed(probe: &Probe) -> Option<u8> {
    (0..=u8::MAX).rev().find(|&n| probe.is_supported(n))
}

fn check(probe: &Probe, opcode: u8) -> Result<(), Unavailable> {
    if !probe.is_supported(opcode) {
        return Err(Unavailable::NotListed { opcode });
    }
    if let Some(last) = (opcode.saturating_add(1)..=u8::MAX)
        .rev()
        .find(|&n| n > opcode && probe.is_supported(n))
    {
        return Err(Unavailable::OtherOpcode { opcode, last });
    }
    if let Some(name) = mainline_release_last(opcode) {
        return Err(Unavailable::KnownOpcode { opcode, name });
    }
    self_test(opcode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcode::GetDents;

    #[test]
    fn release_ends_are_sorted_and_exclude_the_patch_number() {
        assert!(MAINLINE_RELEASE_LAST.windows(2).all(|w| w[0].0 < w[1].0));
        // The series' numbers on its bases, 6.12 and 7.3.
        assert_eq!(mainline_release_last(GetDents::CODE), None);
        assert_eq!(mainline_release_last(65), None);
        assert_eq!(mainline_release_last(57), Some("IORING_OP_LISTEN"));
        assert_eq!(mainline_release_last(62), Some("IORING_OP_PIPE"));
        assert_eq!(mainline_release_last(64), Some("IORING_OP_URING_CMD128"));
        // Inside a release: followed by other operations on every mainline
        // kernel that has it, so refused as `OtherOpcode` instead.
        assert_eq!(mainline_release_last(59), None);
    }
}
