//! Operation counters, readable from the library, from the hidden stats
//! file and from the binary's exit report.

use std::fmt;

/// How many operations testfs served since it was mounted.
///
/// Requests on the stats file itself are not counted, so reading the stats
/// file does not change what it shows.
///
/// # Example
///
/// ```
/// let stats = testfs::Stats::default();
/// assert_eq!(stats.ops(), 0);
/// assert!(stats.to_string().contains("readdir 0\n"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `LOOKUP` requests (a name resolved in a directory).
    pub lookup: u64,
    /// `GETATTR` requests (`stat` of an inode whose attributes expired).
    pub getattr: u64,
    /// `READLINK` requests.
    pub readlink: u64,
    /// `OPEN` requests on files.
    pub open: u64,
    /// `READ` requests on files.
    pub read: u64,
    /// `RELEASE` requests (last close of a file).
    pub release: u64,
    /// `OPENDIR` requests.
    pub opendir: u64,
    /// `READDIR` requests: one per `getdents64` call that reached testfs.
    pub readdir: u64,
    /// `RELEASEDIR` requests (last close of a directory).
    pub releasedir: u64,
    /// Bytes of `fuse_dirent` records sent in `READDIR` replies.
    pub readdir_bytes: u64,
    /// Entries (including `.` and `..`) sent in `READDIR` replies.
    pub readdir_entries: u64,
    /// Largest `READDIR` reply in bytes: a lower bound of the buffer size
    /// the kernel asked for.
    pub readdir_max_reply: u64,
    /// Requests answered with an injected `EIO`.
    pub eio_injected: u64,
    /// Requests answered with an injected `ENOENT` ([`Fault::Vanish`](crate::Fault::Vanish)).
    pub enoent_injected: u64,
    /// Requests that waited the full configured delay before their reply.
    pub delayed: u64,
}

impl Stats {
    /// All counted requests, whatever their kind.
    ///
    /// # Example
    ///
    /// ```
    /// let stats = testfs::Stats { lookup: 2, readdir: 3, ..Default::default() };
    /// assert_eq!(stats.ops(), 5);
    /// ```
    pub fn ops(&self) -> u64 {
        self.lookup
            + self.getattr
            + self.readlink
            + self.open
            + self.read
            + self.release
            + self.opendir
            + self.readdir
            + self.releasedir
    }

    /// What changed from `earlier` to `self`, counter by counter
    /// (`readdir_max_reply` keeps the later maximum).
    ///
    /// # Example
    ///
    /// ```
    /// let before = testfs::Stats { readdir: 3, ..Default::default() };
    /// let after = testfs::Stats { readdir: 10, ..Default::default() };
    /// assert_eq!(after.since(&before).readdir, 7);
    /// ```
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            lookup: self.lookup - earlier.lookup,
            getattr: self.getattr - earlier.getattr,
            readlink: self.readlink - earlier.readlink,
            open: self.open - earlier.open,
            read: self.read - earlier.read,
            release: self.release - earlier.release,
            opendir: self.opendir - earlier.opendir,
            readdir: self.readdir - earlier.readdir,
            releasedir: self.releasedir - earlier.releasedir,
            readdir_bytes: self.readdir_bytes - earlier.readdir_bytes,
            readdir_entries: self.readdir_entries - earlier.readdir_entries,
            readdir_max_reply: self.readdir_max_reply,
            eio_injected: self.eio_injected - earlier.eio_injected,
            enoent_injected: self.enoent_injected - earlier.enoent_injected,
            delayed: self.delayed - earlier.delayed,
        }
    }
}

/// One `name value` line per counter: easy to read from a shell script
/// (`awk '$1 == "readdir" {print $2}'`).
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows = [
            ("lookup", self.lookup),
            ("getattr", self.getattr),
            ("readlink", self.readlink),
            ("open", self.open),
            ("read", self.read),
            ("release", self.release),
            ("opendir", self.opendir),
            ("readdir", self.readdir),
            ("releasedir", self.releasedir),
            ("readdir_bytes", self.readdir_bytes),
            ("readdir_entries", self.readdir_entries),
            ("readdir_max_reply", self.readdir_max_reply),
            ("eio_injected", self.eio_injected),
            ("enoent_injected", self.enoent_injected),
            ("delayed", self.delayed),
            ("ops", self.ops()),
        ];
        for (name, value) in rows {
            writeln!(f, "{name} {value}")?;
        }
        Ok(())
    }
}
