//! Shared helpers: the backends to test and the rule for a kernel feature
//! that is missing, independent reference listings, a single-poll helper,
//! a seeded random generator, and a test run again in a child process.
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;
use std::fmt::Display;
use std::fs;
use std::future::Future;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirEntryExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;
use std::task::{Context, Poll, Waker};

use io_uring_getdents::dirent::{DirentIter, FileType};
use io_uring_getdents::syscall::getdents64;
use tokio_uring_getdents::fs::{BackendChoice, Dir, DirBuilder};

/// Whether the kernel must have GETDENTS and what the project's patches
/// add: `IO_URING_GETDENTS_REQUIRE=1`, which the test VM sets (its CPU is
/// emulated, too).
pub fn getdents_required() -> bool {
    std::env::var("IO_URING_GETDENTS_REQUIRE").as_deref() == Ok("1")
}

/// The project's rule for a kernel feature detection says is missing
/// (`why`): a failure where it is required ([`getdents_required`]),
/// elsewhere `skipped: {what}` on stderr, and the test goes on without it.
pub fn skip_unless_required(why: impl Display, what: impl Display) {
    if getdents_required() {
        panic!("IO_URING_GETDENTS_REQUIRE=1 but {why}");
    }
    eprintln!("skipped: {what}");
}

/// Every backend this kernel offers: GETDENTS where detection finds it
/// (see [`skip_unless_required`]).
pub fn backends() -> Vec<BackendChoice> {
    let mut list = vec![BackendChoice::Fallback];
    let support = io_uring_getdents::detect::cached();
    match support.opcode() {
        Some(_) => list.push(BackendChoice::Getdents),
        None => skip_unless_required(support, format_args!("GETDENTS backend ({support})")),
    }
    list
}

/// One entry as every reader reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    pub name: Vec<u8>,
    pub ino: u64,
    pub file_type: FileType,
    pub offset: u64,
}

/// The reference: raw getdents64 into a 64 KiB buffer, in kernel order,
/// without `.` and `..`.
pub fn raw_listing(path: &Path) -> Vec<Rec> {
    let dir = fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = getdents64(dir.as_fd(), &mut buf).expect("getdents64");
        if n == 0 {
            return out;
        }
        for rec in DirentIter::new(&buf[..n]) {
            let rec = rec.expect("valid record");
            if !rec.is_dot_or_dotdot() {
                out.push(Rec {
                    name: rec.name_bytes().to_vec(),
                    ino: rec.ino(),
                    file_type: rec.file_type(),
                    offset: rec.offset(),
                });
            }
        }
    }
}

/// The second reference: std::fs::read_dir, name -> (ino, type).
pub fn std_listing(path: &Path) -> BTreeMap<Vec<u8>, (u64, FileType)> {
    fs::read_dir(path)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("read_dir entry");
            let ft = FileType::from(e.file_type().expect("file type"));
            (e.file_name().as_bytes().to_vec(), (e.ino(), ft))
        })
        .collect()
}

/// Everything our `Dir` returns.
pub async fn read_all(builder: DirBuilder, path: &Path) -> io::Result<Vec<Rec>> {
    let mut dir = builder.open(path).await?;
    let mut out = Vec::new();
    while let Some(entry) = dir.next().await {
        out.push(rec(&entry?));
    }
    dir.close().await?;
    Ok(out)
}

pub fn rec(entry: &tokio_uring_getdents::fs::DirEntry) -> Rec {
    Rec {
        name: entry.file_name().as_bytes().to_vec(),
        ino: entry.ino(),
        file_type: entry.file_type(),
        offset: entry.offset(),
    }
}

/// Whether `path` is on a filesystem whose non-blocking GETDENTS reads may
/// stop short, before a block that is not cached (ext4, XFS, btrfs): the last
/// entry of such a read carries the offset where the read stopped, at or
/// before getdents64's (kernel/README.md, "A short read's last `d_off`").
pub fn short_reads_possible(path: &Path) -> bool {
    let cpath = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: an all-zero statfs is a valid value for statfs to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `cpath` is NUL-terminated and `st` a writable statfs.
    if unsafe { libc::statfs(cpath.as_ptr(), &mut st) } != 0 {
        return false;
    }
    matches!(
        st.f_type,
        libc::EXT4_SUPER_MAGIC | libc::XFS_SUPER_MAGIC | libc::BTRFS_SUPER_MAGIC
    )
}

/// Asserts that `got` has the entries of the getdents64 listing `want`, in
/// its order: exactly, or (where `short_ok`) with an offset at or before
/// the reference's, where a read stopped short.
pub fn assert_same_entries(got: &[Rec], want: &[Rec], short_ok: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "entry count vs getdents64: {what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if short_ok && g.offset < w.offset {
            let stopped = Rec {
                offset: w.offset,
                ..g.clone()
            };
            assert_eq!(&stopped, w, "entry {i} vs getdents64: {what}");
        } else {
            assert_eq!(g, w, "entry {i} vs getdents64: {what}");
        }
    }
}

/// Checks a listing against both references.
pub fn assert_matches_references(path: &Path, got: &[Rec]) {
    let raw = raw_listing(path);
    let what = path.display().to_string();
    assert_same_entries(got, &raw, short_reads_possible(path), &what);
    let std = std_listing(path);
    let ours: BTreeMap<Vec<u8>, (u64, FileType)> = got
        .iter()
        .map(|r| (r.name.clone(), (r.ino, r.file_type)))
        .collect();
    assert_eq!(
        ours.len(),
        got.len(),
        "duplicate names in {}",
        path.display()
    );
    assert_eq!(ours, std, "vs std::fs::read_dir in {}", path.display());
}

/// Polls a future once with a waker that does nothing.
pub fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    Pin::new(fut).poll(&mut cx)
}

/// splitmix64: small, seeded, good enough to pick drop points.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Creates `n` empty files named with a prefix and a number.
pub fn create_files(dir: &Path, prefix: &str, n: usize) {
    for i in 0..n {
        fs::File::create(dir.join(format!("{prefix}{i}"))).expect("create file");
    }
}

/// The open descriptors of this process.
pub fn open_fds() -> usize {
    fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// The directory a test opens, for `Dir` and its error messages.
pub fn builder(choice: BackendChoice) -> DirBuilder {
    Dir::builder().backend(choice)
}

/// The argument a test run by [`run_child`] gets, in the child; `None`
/// in the parent, where such a test does nothing.
pub fn child_arg() -> Option<PathBuf> {
    std::env::var_os("TOKIO_URING_GETDENTS_CHILD").map(Into::into)
}

/// Runs one test of this binary in a child process (for limits and a
/// user of its own, which would change the whole test process), as user
/// nobody when `as_nobody`, passing `arg` through the environment.
pub fn run_child(test: &str, arg: &Path, as_nobody: bool) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--include-ignored"])
        .env("TOKIO_URING_GETDENTS_CHILD", arg);
    if as_nobody {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child {test} failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "child {test} did not run:\n{text}"
    );
}
