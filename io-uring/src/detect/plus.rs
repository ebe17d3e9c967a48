//! Readdirplus: does the running kernel's GETDENTS have the mode
//! ([`GetDents::plus`](crate::opcode::GetDents::plus))? Checked only where
//! GETDENTS itself passed detection, with real readdirplus reads compared
//! with `getdents64(2)` and `statx(2)`.

use std::fmt;
use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::sync::OnceLock;

use super::self_test::{
    first_difference, listing, read_chained, ChainError, Plus, Record, TestDir,
};
use super::{cached, Support};
use crate::plus::DirentPlusIter;
use crate::syscall::statx;

/// The environment variable that turns readdirplus off on its own: `off`,
/// or `auto` (the default: use it where the kernel has it). GETDENTS
/// itself stays as [`ENV_VAR`](super::ENV_VAR) says; with `IO_URING_GETDENTS=off` there is
/// no readdirplus either.
pub const PLUS_ENV_VAR: &str = "IO_URING_GETDENTS_PLUS";

/// Why readdirplus ([`GetDents::plus`](crate::opcode::GetDents::plus)) cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum PlusUnavailable {
    /// GETDENTS itself is unavailable, for the reason given (as
    /// [`Support`] says it).
    NoGetdents(String),
    /// [`PLUS_ENV_VAR`] is `off`.
    Disabled,
    /// [`PLUS_ENV_VAR`] holds something that is not `off` or `auto`.
    BadOverride(String),
    /// GETDENTS refused the readdirplus flag with `-EINVAL`: a kernel with
    /// the operation but without the mode.
    NotSupported {
        /// The GETDENTS opcode.
        opcode: u8,
    },
    /// The self-test could not run, or a readdirplus read failed otherwise.
    SelfTest {
        /// The GETDENTS opcode.
        opcode: u8,
        /// What failed.
        error: io::Error,
    },
    /// The reads succeeded but did not list the entries `getdents64` lists,
    /// or an entry's `statx` was not the one `statx(2)` gives.
    Mismatch {
        /// The GETDENTS opcode.
        opcode: u8,
        /// The first difference.
        detail: String,
    },
}

impl fmt::Display for PlusUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlusUnavailable::NoGetdents(why) => write!(f, "{why}"),
            PlusUnavailable::Disabled => write!(f, "turned off by {PLUS_ENV_VAR}=off"),
            PlusUnavailable::BadOverride(msg) => write!(f, "{msg}"),
            PlusUnavailable::NotSupported { opcode } => write!(
                f,
                "GETDENTS (opcode {opcode}) refuses IORING_GETDENTS_PLUS with EINVAL: a kernel \
                 without the mode"
            ),
            PlusUnavailable::SelfTest { opcode, error } => write!(
                f,
                "a test readdirplus GETDENTS with opcode {opcode} failed: {error}"
            ),
            PlusUnavailable::Mismatch { opcode, detail } => write!(
                f,
                "readdirplus with opcode {opcode} did not return what getdents64 and statx \
                 return: {detail}"
            ),
        }
    }
}

impl std::error::Error for PlusUnavailable {}

/// The answer of readdirplus detection. Non-exhaustive, as [`Support`].
#[derive(Debug)]
#[non_exhaustive]
pub enum PlusSupport {
    /// GETDENTS with [`GetDents::plus`](crate::opcode::GetDents::plus) works, under this opcode number.
    Available {
        /// The number to pass to [`GetDents::opcode`](crate::opcode::GetDents::opcode).
        opcode: u8,
        /// Whether [`GetDents::plus_dcache`](crate::opcode::GetDents::plus_dcache)
        /// works too (lookups from the dcache only).
        dcache: bool,
    },
    /// Readdirplus cannot be used, and why.
    Unavailable(PlusUnavailable),
}

impl PlusSupport {
    /// The GETDENTS opcode number if readdirplus is available.
    ///
    /// ```
    /// use io_uring_getdents::detect::{PlusSupport, PlusUnavailable};
    /// let plus = PlusSupport::Available { opcode: 58, dcache: false };
    /// assert_eq!(plus.opcode(), Some(58));
    /// assert_eq!(PlusSupport::Unavailable(PlusUnavailable::Disabled).opcode(), None);
    /// ```
    pub fn opcode(&self) -> Option<u8> {
        match self {
            PlusSupport::Available { opcode, .. } => Some(*opcode),
            PlusSupport::Unavailable(_) => None,
        }
    }

    /// Whether readdirplus is available with lookups from the dcache only
    /// ([`GetDents::plus_dcache`](crate::opcode::GetDents::plus_dcache)).
    ///
    /// ```
    /// use io_uring_getdents::detect::{PlusSupport, PlusUnavailable};
    /// assert!(PlusSupport::Available { opcode: 58, dcache: true }.dcache());
    /// assert!(!PlusSupport::Available { opcode: 58, dcache: false }.dcache());
    /// assert!(!PlusSupport::Unavailable(PlusUnavailable::Disabled).dcache());
    /// ```
    pub fn dcache(&self) -> bool {
        matches!(self, PlusSupport::Available { dcache: true, .. })
    }
}

impl fmt::Display for PlusSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlusSupport::Available { opcode, dcache } => write!(
                f,
                "readdirplus (IORING_GETDENTS_PLUS) available with GETDENTS opcode {opcode}, {} \
                 lookups from the dcache only (IORING_GETDENTS_PLUS_DCACHE)",
                if *dcache { "with" } else { "without" }
            ),
            PlusSupport::Unavailable(why) => write!(f, "readdirplus unavailable: {why}"),
        }
    }
}

/// Readdirplus detection, for the GETDENTS answer `support` (from
/// [`detect`](super::detect), [`detect_with`](super::detect_with) or
/// [`cached`]), with the [`PLUS_ENV_VAR`] override.
///
/// Only where `support` is [`Support::Available`] is anything submitted:
/// readdirplus reads, on a private ring, of a directory made for the test
/// (6 files, a directory, a symbolic link), two records at a time chained
/// by `d_off`. The answer is [`PlusSupport::Available`] only if they list
/// exactly the records `getdents64` lists, `..` carries `EOPNOTSUPP`, and
/// every other entry's `statx` (`.` included) equals what `statx(2)` gives
/// for its name in the fields that cannot change meanwhile: type and mode,
/// inode, link count, owner, group, size, blocks and device. A kernel that
/// answers the flag with `-EINVAL` has GETDENTS without the mode:
/// [`PlusUnavailable::NotSupported`]. The same reads are then made with
/// lookups from the dcache only: `dcache` is true if they list the same
/// records with the same answers (a name not looked up, `EAGAIN`, is
/// accepted), false if the kernel refuses that flag with `-EINVAL`; any
/// other failure makes readdirplus unavailable.
///
/// # Example
///
/// ```
/// use io_uring_getdents::{detect, io_uring::IoUring};
/// let ring = IoUring::new(4)?;
/// let plus = detect::detect_plus(&detect::detect(&ring));
/// println!("{plus}");
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn detect_plus(support: &Support) -> PlusSupport {
    let unavailable = PlusSupport::Unavailable;
    match plus_wanted(std::env::var(PLUS_ENV_VAR)) {
        Err(msg) => unavailable(PlusUnavailable::BadOverride(msg)),
        Ok(false) => unavailable(PlusUnavailable::Disabled),
        Ok(true) => match support.opcode() {
            None => unavailable(PlusUnavailable::NoGetdents(support.to_string())),
            Some(opcode) => match plus_self_test(opcode) {
                Ok(dcache) => PlusSupport::Available { opcode, dcache },
                Err(why) => unavailable(why),
            },
        },
    }
}

/// [`detect_plus`] of [`cached`]'s answer; the first answer is kept for the
/// life of the process.
///
/// ```
/// let plus = io_uring_getdents::detect::plus_cached();
/// if let Some(opcode) = plus.opcode() {
///     println!("readdirplus with GETDENTS opcode {opcode}");
/// }
/// ```
pub fn plus_cached() -> &'static PlusSupport {
    static PLUS: OnceLock<PlusSupport> = OnceLock::new();
    PLUS.get_or_init(|| detect_plus(cached()))
}

/// Whether [`PLUS_ENV_VAR`]'s value (`std::env::var`'s answer) lets
/// readdirplus be used.
fn plus_wanted(value: Result<String, std::env::VarError>) -> Result<bool, String> {
    match value {
        Err(std::env::VarError::NotPresent) => Ok(true),
        Err(std::env::VarError::NotUnicode(v)) => {
            Err(format!("{PLUS_ENV_VAR}={v:?}: not valid UTF-8"))
        }
        Ok(value) => match value.trim() {
            "" | "auto" => Ok(true),
            "off" => Ok(false),
            _ => Err(format!(
                "{PLUS_ENV_VAR}={value:?}: expected `off` or `auto`"
            )),
        },
    }
}

/// Files in the readdirplus self-test's directory. Few: every process that
/// uses readdirplus makes and removes it, and each entry costs a create, a
/// `statx` and an unlink; the names and chunked reads are GETDENTS' own
/// self-test's concern.
const PLUS_TEST_FILES: usize = 6;
/// Bytes per read of the readdirplus self-test: two of its records (the
/// longest test name, 14 bytes, takes 304).
const PLUS_TEST_READ_LEN: usize = 640;
/// What the readdirplus self-test asks for and compares: the fields that do
/// not change while nothing writes to the test directory.
const PLUS_TEST_MASK: u32 = libc::STATX_TYPE
    | libc::STATX_MODE
    | libc::STATX_NLINK
    | libc::STATX_UID
    | libc::STATX_GID
    | libc::STATX_INO
    | libc::STATX_SIZE
    | libc::STATX_BLOCKS;

/// The readdirplus self-test, for an `opcode` that passed GETDENTS' own
/// ([`self_test`](super::self_test::self_test)): whether lookups from the
/// dcache only work too, or why readdirplus is unavailable.
fn plus_self_test(opcode: u8) -> Result<bool, PlusUnavailable> {
    let fail = |error: io::Error| PlusUnavailable::SelfTest { opcode, error };
    let dir = TestDir::create(PLUS_TEST_FILES).map_err(fail)?;
    let file = fs::File::open(&dir.0).map_err(fail)?;
    let expected = listing(&file).map_err(fail)?;
    let read = |plus| {
        let got = read_chained(
            &file,
            opcode,
            Some(plus),
            PLUS_TEST_READ_LEN,
            expected.len(),
            |buf, out| collect_plus(&file, matches!(plus, Plus::Dcache(_)), buf, out),
        )?;
        match first_difference(&expected, &got) {
            Some(detail) => Err(ChainError::Mismatch(detail)),
            None => Ok(()),
        }
    };
    let failed = |e| match e {
        ChainError::Errno { errno, .. } => fail(io::Error::from_raw_os_error(errno)),
        ChainError::Io(error) => fail(error),
        ChainError::Mismatch(detail) => PlusUnavailable::Mismatch { opcode, detail },
    };
    // The kernel checks the flags before anything else, so a GETDENTS
    // without a mode refuses the first read.
    let refused = |e: &ChainError| {
        matches!(
            e,
            ChainError::Errno {
                errno: libc::EINVAL,
                first: true
            }
        )
    };
    match read(Plus::Lookups(PLUS_TEST_MASK)) {
        Err(e) if refused(&e) => return Err(PlusUnavailable::NotSupported { opcode }),
        Err(e) => return Err(failed(e)),
        Ok(()) => {}
    }
    match read(Plus::Dcache(PLUS_TEST_MASK)) {
        Err(e) if refused(&e) => Ok(false),
        Err(e) => Err(failed(e)),
        Ok(()) => Ok(true),
    }
}

/// [`collect`](super::self_test::collect) for readdirplus records of `dir`, checking each one's
/// `statx` against `statx(2)` of its name (`..` must carry `EOPNOTSUPP`).
fn collect_plus(
    dir: &fs::File,
    dcache: bool,
    buf: &[u8],
    out: &mut Vec<Record>,
) -> Result<(), ChainError> {
    for entry in DirentPlusIter::new(buf) {
        let entry = entry.map_err(|e| ChainError::Io(e.into()))?;
        let name = entry.name();
        let mismatch = |what: String| ChainError::Mismatch(format!("{name:?}: {what}"));
        match (entry.name_bytes(), entry.stat()) {
            (b"..", Err(e)) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            (b"..", Err(e)) => return Err(mismatch(format!("{e} instead of EOPNOTSUPP"))),
            (b"..", Ok(_)) => return Err(mismatch("a statx instead of EOPNOTSUPP".into())),
            // Only lookups from the dcache answer this, for a name that
            // was not there; a full lookup must not.
            (_, Err(e)) if e.raw_os_error() == Some(libc::EAGAIN) && dcache => {}
            (_, Err(e)) => return Err(mismatch(format!("the statx failed: {e}"))),
            (_, Ok(got)) => {
                let want = statx(
                    Some(dir.as_fd()),
                    name,
                    libc::AT_NO_AUTOMOUNT,
                    PLUS_TEST_MASK,
                )
                .map_err(ChainError::Io)?;
                if let Some(field) = stable_difference(&got, &want) {
                    return Err(mismatch(format!("{field} differs from statx(2)'s")));
                }
            }
        }
        let entry = entry.dirent();
        out.push((
            entry.ino(),
            entry.offset(),
            entry.d_type(),
            entry.name_bytes().to_vec(),
        ));
    }
    Ok(())
}

/// The first of the fields [`PLUS_TEST_MASK`] asks for (and the device,
/// always given) in which `got` and `want` differ.
fn stable_difference(got: &libc::statx, want: &libc::statx) -> Option<&'static str> {
    let fields = [
        (
            "stx_mask",
            u64::from(got.stx_mask & PLUS_TEST_MASK),
            u64::from(want.stx_mask & PLUS_TEST_MASK),
        ),
        ("stx_ino", got.stx_ino, want.stx_ino),
        ("stx_mode", got.stx_mode.into(), want.stx_mode.into()),
        ("stx_nlink", got.stx_nlink.into(), want.stx_nlink.into()),
        ("stx_uid", got.stx_uid.into(), want.stx_uid.into()),
        ("stx_gid", got.stx_gid.into(), want.stx_gid.into()),
        ("stx_size", got.stx_size, want.stx_size),
        ("stx_blocks", got.stx_blocks, want.stx_blocks),
        (
            "stx_dev_major",
            got.stx_dev_major.into(),
            want.stx_dev_major.into(),
        ),
        (
            "stx_dev_minor",
            got.stx_dev_minor.into(),
            want.stx_dev_minor.into(),
        ),
    ];
    fields
        .into_iter()
        .find(|&(_, got, want)| got != want)
        .map(|(name, _, _)| name)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use super::*;

    #[test]
    fn plus_override_values() {
        assert_eq!(plus_wanted(Err(std::env::VarError::NotPresent)), Ok(true));
        for on in ["", "auto", " auto\n"] {
            assert_eq!(plus_wanted(Ok(on.into())), Ok(true), "{on:?}");
        }
        assert_eq!(plus_wanted(Ok("off".into())), Ok(false));
        let err = plus_wanted(Ok("58".into())).unwrap_err();
        assert!(
            err.contains(PLUS_ENV_VAR) && err.contains("\"58\""),
            "{err}"
        );
        let raw = OsString::from_vec(vec![b'o', 0xff]);
        let err = plus_wanted(Err(std::env::VarError::NotUnicode(raw))).unwrap_err();
        assert!(err.contains("UTF-8"), "{err}");
    }

    /// The self-test's check of readdirplus records, fed records built
    /// from `getdents64` and `statx(2)` as the kernel should build them,
    /// then with one thing wrong at a time.
    #[test]
    fn plus_records_must_carry_what_statx_gives() {
        use crate::plus::encode_plus;

        let dir = TestDir::create(PLUS_TEST_FILES).unwrap();
        let file = fs::File::open(&dir.0).unwrap();
        let expected = listing(&file).unwrap();
        let stat = |name: &[u8]| {
            let name = std::ffi::CString::new(name).unwrap();
            statx(Some(file.as_fd()), &name, 0, PLUS_TEST_MASK).unwrap()
        };
        // `change(i, name, stat)` may alter record i's statx or errno.
        type Change<'a> = &'a dyn Fn(usize, &[u8], &mut Result<libc::statx, i32>);
        let build = |change: Change<'_>| {
            let mut buf = Vec::new();
            for (i, (ino, off, d_type, name)) in expected.iter().enumerate() {
                let mut result = match &name[..] {
                    b".." => Err(libc::EOPNOTSUPP),
                    _ => Ok(stat(name)),
                };
                change(i, name, &mut result);
                encode_plus(
                    &mut buf,
                    *ino,
                    *off,
                    *d_type,
                    name,
                    result.as_ref().map_err(|&e| e),
                );
            }
            buf
        };
        let check = |dcache: bool, buf: &[u8]| {
            let mut got = Vec::new();
            collect_plus(&file, dcache, buf, &mut got).map(|()| got)
        };

        for dcache in [false, true] {
            let got = check(dcache, &build(&|_, _, _| {}))
                .unwrap_or_else(|_| panic!("a faithful buffer"));
            assert_eq!(first_difference(&expected, &got), None);
        }

        // The record changed below: the last one that is a file, since
        // `.` and `..` can come last too (ext4 hashes every name of a
        // one-block directory, theirs included, with a seed each mkfs
        // draws).
        let last = expected
            .iter()
            .rposition(|(.., name)| name != b"." && name != b"..")
            .expect("the test directory holds files");
        // A name not looked up: only where the reads asked for lookups
        // from the dcache only.
        let not_looked_up: Change<'_> = &|i, _, r| {
            if i == last {
                *r = Err(libc::EAGAIN);
            }
        };
        assert!(check(true, &build(not_looked_up)).is_ok());
        assert!(matches!(
            check(false, &build(not_looked_up)),
            Err(ChainError::Mismatch(_))
        ));
        let wrong: [(&str, Change<'_>); 6] = [
            ("a statx for ..", &|_, name, r| {
                if name == b".." {
                    *r = Ok(stat(b"."));
                }
            }),
            ("another error for ..", &|_, name, r| {
                if name == b".." {
                    *r = Err(libc::EACCES);
                }
            }),
            ("EAGAIN for ..", &|_, name, r| {
                if name == b".." {
                    *r = Err(libc::EAGAIN);
                }
            }),
            ("an error for a file", &|i, _, r| {
                if i == last {
                    *r = Err(libc::ENOENT);
                }
            }),
            ("another file's statx", &|i, _, r| {
                if i == last {
                    *r = Ok(stat(b"."));
                }
            }),
            ("one block more", &|i, _, r| {
                if let (true, Ok(stx)) = (i == last, r) {
                    stx.stx_blocks += 1;
                }
            }),
        ];
        for (what, change) in wrong {
            for dcache in [false, true] {
                match check(dcache, &build(change)) {
                    Err(ChainError::Mismatch(detail)) => println!("{what}: {detail}"),
                    _ => panic!("{what}: accepted (dcache {dcache})"),
                }
            }
        }
    }

    #[test]
    fn stable_fields_are_compared_one_by_one() {
        let dir = std::env::temp_dir();
        let c_dir = std::ffi::CString::new(dir.into_os_string().into_vec()).unwrap();
        let want = statx(None, &c_dir, 0, PLUS_TEST_MASK).unwrap();
        assert_eq!(stable_difference(&want, &want), None);
        let mut got = want;
        got.stx_atime.tv_sec += 1;
        got.stx_mask |= libc::STATX_BTIME;
        assert_eq!(stable_difference(&got, &want), None, "not compared");
        got.stx_nlink += 1;
        assert_eq!(stable_difference(&got, &want), Some("stx_nlink"));
        got = want;
        got.stx_dev_minor ^= 1;
        assert_eq!(stable_difference(&got, &want), Some("stx_dev_minor"));
        got = want;
        got.stx_mask &= !libc::STATX_BLOCKS;
        assert_eq!(stable_difference(&got, &want), Some("stx_mask"));
    }
}
