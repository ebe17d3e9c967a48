//! A file's times as `statx` gives them, and which of them a walk keeps
//! the latest of ([`WalkBuilder::latest_time`](crate::WalkBuilder::latest_time),
//! what `du --time` prints).

use std::time::{Duration, SystemTime};

/// A time as `statx` gives it: seconds since the epoch (negative before
/// it) and nanoseconds added to them. Ordered as the instants are.
///
/// # Example
///
/// ```
/// use traverse::Timestamp;
/// let early = Timestamp { sec: -1, nsec: 500_000_000 };
/// let late = Timestamp { sec: 0, nsec: 0 };
/// assert!(early < late);
/// assert!(early.system_time() < std::time::SystemTime::UNIX_EPOCH);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Seconds since 1970-01-01 00:00:00 UTC.
    pub sec: i64,
    /// Nanoseconds after `sec` (below 1 000 000 000).
    pub nsec: u32,
}

impl Timestamp {
    /// A time from `std`'s `MetadataExt` fields (`mtime`, `mtime_nsec`);
    /// the nanoseconds are below a second (`st_mtim` is a `timespec`).
    #[cfg(feature = "reference-engines")]
    pub(crate) fn from_ext(sec: i64, nsec: i64) -> Timestamp {
        Timestamp {
            sec,
            nsec: u32::try_from(nsec).unwrap_or(0),
        }
    }

    pub(crate) fn from_statx(ts: &libc::statx_timestamp) -> Timestamp {
        Timestamp {
            sec: ts.tv_sec,
            nsec: ts.tv_nsec,
        }
    }

    /// The same instant as a `SystemTime`: -1 s and 500 000 000 ns is half
    /// a second before the epoch, as `std::fs::Metadata::modified` reads
    /// it. Nanoseconds past a second (which no kernel gives) count as the
    /// last nanosecond of it, so that no `i64` of seconds can overflow.
    ///
    /// ```
    /// let t = traverse::Timestamp { sec: 60, nsec: 0 };
    /// let since = t.system_time().duration_since(std::time::UNIX_EPOCH).unwrap();
    /// assert_eq!(since.as_secs(), 60);
    /// ```
    pub fn system_time(self) -> SystemTime {
        let secs = Duration::from_secs(self.sec.unsigned_abs());
        let nanos = Duration::from_nanos(u64::from(self.nsec.min(999_999_999)));
        let whole = if self.sec < 0 {
            SystemTime::UNIX_EPOCH.checked_sub(secs)
        } else {
            SystemTime::UNIX_EPOCH.checked_add(secs)
        };
        whole
            .and_then(|t| t.checked_add(nanos))
            .expect("a SystemTime on Linux holds any i64 of seconds and a nanosecond part")
    }
}

/// One of a file's times, as `du --time=WORD` chooses it.
///
/// # Example
///
/// ```
/// use traverse::{TimeField, WalkBuilder};
/// let walk = WalkBuilder::new().latest_time(Some(TimeField::Access)).build();
/// let summary = walk.totals(std::path::Path::new("."));
/// assert!(summary.totals.latest.is_some());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeField {
    /// The last access (`st_atime`; `du --time=atime`).
    Access,
    /// The last change of the contents (`st_mtime`; `du --time`).
    Modification,
    /// The last change of the inode (`st_ctime`; `du --time=ctime`).
    StatusChange,
}

impl TimeField {
    /// The `statx` mask bit that asks for this time.
    pub(crate) fn statx_bit(self) -> u32 {
        match self {
            TimeField::Access => libc::STATX_ATIME,
            TimeField::Modification => libc::STATX_MTIME,
            TimeField::StatusChange => libc::STATX_CTIME,
        }
    }
}
