//! What the kernel tests (`kernel_getdents.rs` for GETDENTS, `kernel_plus.rs`
//! for readdirplus) share: the rule for a kernel without what a test needs,
//! one request submitted and waited for, the directories the tests make and
//! the listing `getdents64(2)` gives of them.

use std::ffi::CString;
use std::fmt::Display;
use std::fs;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};

use io_uring_getdents::dirent::{Dirent, DirentIter, HEADER_LEN, RECORD_ALIGN};
use io_uring_getdents::io_uring::{squeue, IoUring};
use io_uring_getdents::syscall::{getdents64, seek_dir};

/// Set to 1 in the test VM: a kernel without what a test needs is then a
/// failure, not a skip.
pub const REQUIRE_VAR: &str = "IO_URING_GETDENTS_REQUIRE";

/// Whether [`REQUIRE_VAR`] is 1.
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// Fails the test where [`required`] and the kernel lacks `what` (GETDENTS,
/// readdirplus) for the reason `why`.
pub fn unavailable_but_required(what: &str, why: &dyn Display) -> ! {
    panic!("{REQUIRE_VAR}=1 but {what} is unavailable: {why}")
}

/// Skips the test: prints "skipped: " and `answer` (what detection said)
/// and gives no opcode.
pub fn skipped(answer: &dyn Display) -> Option<u8> {
    println!("skipped: {answer}");
    None
}

/// One plain record: inode, d_off, d_type, name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub ino: u64,
    pub off: u64,
    pub d_type: u8,
    pub name: Vec<u8>,
}

impl Record {
    /// The record of a parsed entry.
    pub fn of(entry: &Dirent<'_>) -> Record {
        Record {
            ino: entry.ino(),
            off: entry.offset(),
            d_type: entry.d_type(),
            name: entry.name_bytes().to_vec(),
        }
    }

    /// The record's size in the buffer, as the kernel lays out a plain
    /// record (a readdirplus one has its tail after it).
    pub fn reclen(&self) -> usize {
        (HEADER_LEN + self.name.len() + 1).next_multiple_of(RECORD_ALIGN)
    }
}

/// The plain records of `buf`.
pub fn parse(buf: &[u8]) -> Vec<Record> {
    DirentIter::new(buf)
        .map(|entry| Record::of(&entry.expect("the kernel wrote a malformed record")))
        .collect()
}

/// The whole directory as one getdents64 loop with a large buffer returns
/// it, from position 0.
pub fn reference(dir: &fs::File) -> Vec<Record> {
    seek_dir(dir.as_fd(), 0).expect("lseek on the directory");
    let mut buf = vec![0u8; 1 << 20];
    let mut records = Vec::new();
    loop {
        let n = getdents64(dir.as_fd(), &mut buf).expect("getdents64");
        if n == 0 {
            return records;
        }
        records.extend(parse(&buf[..n]));
    }
}

/// The records a read from `offset` must return into a buffer of `len`
/// bytes: those after the entry whose d_off is `offset`, as many as fit,
/// each taking its [`Record::reclen`] and `tail_len` more bytes (0 for
/// plain records, the tail's length for readdirplus ones).
pub fn expected_from(all: &[Record], offset: u64, len: usize, tail_len: usize) -> &[Record] {
    let start = if offset == 0 {
        0
    } else {
        all.iter()
            .position(|r| r.off == offset)
            .expect("offset is a d_off of the directory")
            + 1
    };
    let mut used = 0;
    let fitting = all[start..]
        .iter()
        .take_while(|r| {
            used += r.reclen() + tail_len;
            used <= len
        })
        .count();
    &all[start..start + fitting]
}

/// The records a full read of `len` bytes returns once the first `done`
/// records of the listing `all` were read: [`expected_from`] the entry
/// after them, counted rather than found by `d_off` (a read that stopped
/// short ends with a `d_off` of its own).
pub fn expected_after(all: &[Record], done: usize, len: usize, tail_len: usize) -> &[Record] {
    expected_from(&all[done.min(all.len())..], 0, len, tail_len)
}

/// Whether `dir` is on a filesystem whose non-blocking reads may come back
/// short (ext4, XFS, btrfs: kernel/README.md, "A short read's last `d_off`").
pub fn short_reads_allowed(dir: &fs::File) -> bool {
    // SAFETY: an all-zero statfs is a valid value for fstatfs to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is an open descriptor and `st` a writable statfs.
    if unsafe { libc::fstatfs(dir.as_raw_fd(), &mut st) } != 0 {
        return false;
    }
    matches!(
        st.f_type,
        libc::EXT4_SUPER_MAGIC | libc::XFS_SUPER_MAGIC | libc::BTRFS_SUPER_MAGIC
    )
}

/// Asserts that the records of a read are `want`, those of the full read,
/// or (where `short_allowed`) the first of them, the last one's `d_off`
/// then being where the read stopped. Returns whether it was short: fewer
/// records, or all of them with the last `d_off` where the read stopped
/// (before a block not cached, though the buffer was full already).
pub fn assert_full_or_short(
    records: &[Record],
    want: &[Record],
    short_allowed: bool,
    what: &str,
) -> bool {
    let n = records.len();
    if !(short_allowed && 0 < n && n <= want.len()) {
        assert_eq!(records, want, "{what}");
        return false;
    }
    assert_eq!(records[..n - 1], want[..n - 1], "short read, {what}");
    let (last, full) = (&records[n - 1], &want[n - 1]);
    assert_eq!(
        (last.ino, last.d_type, &last.name),
        (full.ino, full.d_type, &full.name),
        "short read, {what}: its last record"
    );
    // Where the read stopped: not after the next record, or the next read
    // from there would skip it.
    assert!(
        last.off <= full.off,
        "short read, {what}: its last d_off {} is after the full read's {}",
        last.off,
        full.off
    );
    n < want.len() || last.off != full.off
}

/// Asserts that `got` is the listing `all`: exactly, or after a short read
/// (whose last `d_off` is its own) entry for entry by inode and name.
pub fn assert_same_listing(got: &[Record], all: &[Record], after_short: bool, what: &str) {
    if !after_short {
        assert_eq!(got, all, "{what}");
        return;
    }
    let names = |r: &[Record]| {
        r.iter()
            .map(|r| (r.ino, r.name.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(got), names(all), "{what}");
}

/// Submits `sqe` and waits for its completion: its result and flags.
pub fn submit_and_reap(ring: &mut IoUring, sqe: squeue::Entry) -> (i32, u32) {
    // SAFETY: every buffer and descriptor named by `sqe` is borrowed by the
    // caller for the whole call, and we wait here for the completion.
    unsafe { ring.submission().push(&sqe) }.expect("submission queue full");
    ring.submit_and_wait(1).expect("io_uring_enter");
    let cqe = ring.completion().next().expect("a completion");
    assert_eq!(cqe.user_data(), sqe.get_user_data());
    (cqe.result(), cqe.flags())
}

/// The file's position, as `lseek(fd, 0, SEEK_CUR)` gives it.
pub fn position(dir: &fs::File) -> u64 {
    // SAFETY: lseek on a descriptor `dir` keeps open; no memory is passed.
    let pos = unsafe { libc::lseek(dir.as_raw_fd(), 0, libc::SEEK_CUR) };
    assert!(pos >= 0, "lseek: {}", std::io::Error::last_os_error());
    pos as u64
}

/// Makes `parent/tree` with `files` regular files whose names run from 1 to
/// 255 bytes (so records of every size): file `i` is named by `i` in
/// `digits` digits, a dash and as many `n` as its length wants, and holds
/// `contents(i)`.
pub fn tree_of_files(
    parent: &Path,
    files: usize,
    digits: usize,
    contents: impl Fn(usize) -> Vec<u8>,
) -> PathBuf {
    let dir = parent.join("tree");
    fs::create_dir(&dir).unwrap();
    for i in 0..files {
        let stem = format!("{i:0digits$}-");
        let len = (1 + (i * 37) % 255).max(stem.len());
        let name: String = stem
            .chars()
            .chain(std::iter::repeat('n'))
            .take(len)
            .collect();
        fs::write(dir.join(name), contents(i)).unwrap();
    }
    dir
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    let fifo = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `fifo` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
}

/// A directory a test made in a temporary directory of its own, open, with
/// its listing.
pub struct Tree {
    /// Where it is.
    pub path: PathBuf,
    /// It, open.
    pub dir: fs::File,
    /// What getdents64 lists of it from position 0 ([`reference`]).
    pub all: Vec<Record>,
    /// Removed when the tree is dropped, after everything else.
    _tmp: tempfile::TempDir,
}

impl Tree {
    /// The directory `make(parent, files)` makes in a fresh temporary
    /// `parent`.
    pub fn new(make: fn(&Path, usize) -> PathBuf, files: usize) -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let path = make(tmp.path(), files);
        let dir = fs::File::open(&path).unwrap();
        let all = reference(&dir);
        Tree {
            path,
            dir,
            all,
            _tmp: tmp,
        }
    }
}
