//! What the tests share: running traverse-mpi under mpirun with 1 to 4
//! ranks over shared memory and TCP, and the references (`traverse`, `du`).

#![allow(dead_code)]

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The transports every run is repeated over: shared memory, and TCP
/// (the path a job across machines takes).
pub const TRANSPORTS: [&str; 2] = ["vader,self", "tcp,self"];

/// The rank counts every output is checked with.
pub const RANKS: [u32; 4] = [1, 2, 3, 4];

/// `mpirun -n ranks` over `btl`, running traverse-mpi with `args`.
pub fn mpi(ranks: u32, btl: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("mpirun");
    if is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--oversubscribe", "--mca", "btl", btl, "-n"])
        .arg(ranks.to_string());
    // Interfaces for TCP: loopback too (Open MPI leaves it out by default,
    // and a test machine may have nothing else).
    cmd.args(["--mca", "btl_tcp_if_include", "lo"]);
    // A session directory of its own: Open MPI 4 makes and removes
    // /tmp/ompi.HOST.UID at each run, and runs started at once (tests in
    // parallel) can fail with "mkdir ... File exists" there.
    static RUNS: AtomicU32 = AtomicU32::new(0);
    let session = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "ompi-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&session).unwrap();
    // Writable by `nobody` too (see `unprivileged`), as /tmp is.
    std::fs::set_permissions(&session, std::fs::Permissions::from_mode(0o1777)).unwrap();
    cmd.args(["--mca", "orte_tmpdir_base"]).arg(&session);
    cmd.arg(env!("CARGO_BIN_EXE_traverse-mpi")).args(args);
    cmd
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `cmd` as `nobody` when we are root (who reads every directory).
pub fn unprivileged(cmd: &mut Command) -> &mut Command {
    if is_root() {
        cmd.uid(65534).gid(65534);
    }
    cmd
}

/// The `traverse` binary of the main workspace, built once.
pub fn traverse_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("TRAVERSE_BIN") {
            return bin.into();
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "traverse-du", "--bin", "traverse"])
            .arg("--manifest-path")
            .arg(root.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(root.join("target"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building traverse failed");
        root.join("target/debug/traverse")
    })
}

pub fn traverse(args: &[&str]) -> Command {
    let mut cmd = Command::new(traverse_bin());
    cmd.args(args);
    cmd
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the command starts");
    remove_session(cmd);
    out
}

/// Removes the session directory that [`mpi`] gave `cmd`, once it ran.
pub fn remove_session(cmd: &Command) {
    let args: Vec<_> = cmd.get_args().collect();
    if let Some(at) = args.iter().position(|a| *a == "orte_tmpdir_base") {
        let _ = std::fs::remove_dir_all(args[at + 1]);
    }
}

/// stderr's error lines with the program's name taken off, sorted (ranks
/// print them in any order).
pub fn errors(out: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| {
            l.strip_prefix("traverse-mpi: ")
                .or_else(|| l.strip_prefix("traverse: "))
                .map(str::to_owned)
        })
        .collect();
    lines.sort();
    lines
}

/// Checks that traverse-mpi prints what traverse prints for `args`, with
/// every rank count and transport: stdout byte for byte, the same errors
/// (each once) and the same exit status.
pub fn same_as_traverse(args: &[&str], as_nobody: bool) {
    let mut reference = traverse(args);
    if as_nobody {
        unprivileged(&mut reference);
    }
    let want = run(&mut reference);
    for btl in TRANSPORTS {
        for ranks in RANKS {
            let mut cmd = mpi(ranks, btl, args);
            if as_nobody {
                unprivileged(&mut cmd);
            }
            let got = run(&mut cmd);
            let what = format!("{ranks} ranks over {btl}: traverse-mpi {}", args.join(" "));
            assert_eq!(
                String::from_utf8_lossy(&got.stdout),
                String::from_utf8_lossy(&want.stdout),
                "{what}\nstderr: {}",
                String::from_utf8_lossy(&got.stderr)
            );
            assert_eq!(errors(&got), errors(&want), "{what}");
            assert_eq!(got.status.code(), want.status.code(), "{what}");
        }
    }
}

/// `du ARGS PATH`'s output.
pub fn du(args: &[&str]) -> String {
    let out = run(Command::new("du").args(args));
    String::from_utf8(out.stdout).expect("du prints UTF-8 here")
}

/// Writes a file of `len` bytes, its directories made.
pub fn file(path: &Path, len: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, vec![b'x'; len]).unwrap();
}

/// A tree like the benchmark's: `dirs` directories over three levels,
/// `files` files spread over them (sizes from 0 to a few blocks), a
/// symlink and an empty directory here and there.
pub fn tree(root: &Path, dirs: usize, files: usize) {
    let mut paths = vec![root.to_path_buf()];
    for d in 1..dirs {
        let parent = paths[(d * 7919) % paths.len().min(1 + d / 3)].clone();
        let dir = parent.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        paths.push(dir);
    }
    for f in 0..files {
        let dir = &paths[(f * 104_729) % paths.len()];
        file(&dir.join(format!("f{f}")), (f * 977) % 9000);
        if f % 50 == 0 {
            std::os::unix::fs::symlink("f0", dir.join(format!("l{f}"))).unwrap();
        }
    }
}

/// The `testfs` binary of the main workspace (a FUSE passthrough with
/// faults), built once.
pub fn testfs_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "testfs", "--bin", "testfs"])
            .arg("--manifest-path")
            .arg(root.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(root.join("target"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building testfs failed");
        root.join("target/debug/testfs")
    })
}

/// testfs serving `src` at `mnt` with `args`, unmounted when dropped.
pub struct TestFs {
    mnt: PathBuf,
    child: std::process::Child,
}

impl TestFs {
    /// `None` (with the reason printed) where FUSE cannot mount.
    pub fn mount(src: &Path, mnt: &Path, args: &[&str]) -> Option<TestFs> {
        std::fs::create_dir_all(mnt).unwrap();
        let child = Command::new(testfs_bin())
            .arg(src)
            .arg(mnt)
            .args(args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("testfs starts");
        let mut fs = TestFs {
            mnt: mnt.to_owned(),
            child,
        };
        for _ in 0..200 {
            if mnt.join(".testfs-stats").exists() {
                return Some(fs);
            }
            if let Ok(Some(status)) = fs.child.try_wait() {
                eprintln!("skipped: testfs cannot mount here ({status})");
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("testfs did not mount {}", mnt.display());
    }
}

impl Drop for TestFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = self.child.wait();
    }
}

/// The pid of rank `rank` of the job `mpirun` (its pid) started: the
/// traverse-mpi process below it whose environment names that rank.
pub fn rank_pid(mpirun: u32, rank: u32) -> Option<u32> {
    let want = format!("OMPI_COMM_WORLD_RANK={rank}");
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_traverse-mpi")).ok()?;
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            if !descends_from(pid, mpirun)
                || std::fs::read_link(entry.path().join("exe")).ok()? != exe
            {
                return None;
            }
            let env = std::fs::read(entry.path().join("environ")).ok()?;
            env.split(|&b| b == 0)
                .any(|var| var == want.as_bytes())
                .then_some(pid)
        })
}

/// Whether `ancestor` is `pid`'s parent, or its parent's, and so on.
fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    while pid > 1 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
        else {
            return false;
        };
        if ppid == ancestor {
            return true;
        }
        pid = ppid;
    }
    false
}

/// The directory `name` (relative to `at`, or to the current directory)
/// opened, so that what is below it can be reached whatever its path's
/// length.
pub fn open_dir_at(at: Option<&OwnedFd>, name: &str) -> OwnedFd {
    let c = CString::new(name).unwrap();
    let dirfd = at.map_or(libc::AT_FDCWD, |fd| fd.as_raw_fd());
    // SAFETY: `c` is a NUL-terminated string that outlives the call;
    // `dirfd` is open (borrowed from `at`) or AT_FDCWD.
    let fd = unsafe { libc::openat(dirfd, c.as_ptr(), libc::O_DIRECTORY | libc::O_CLOEXEC) };
    assert!(fd >= 0, "open {name}: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` was just opened and is owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Makes the directory `name` in `at`, and opens it.
pub fn mkdir_at(at: &OwnedFd, name: &str) -> OwnedFd {
    let c = CString::new(name).unwrap();
    // SAFETY: `c` is NUL-terminated and outlives the call; `at` is open.
    let r = unsafe { libc::mkdirat(at.as_raw_fd(), c.as_ptr(), 0o755) };
    assert_eq!(r, 0, "mkdir {name}: {}", std::io::Error::last_os_error());
    open_dir_at(Some(at), name)
}

/// Writes a file of `len` bytes named `name` in `at`.
pub fn write_at(at: &OwnedFd, name: &str, len: usize) {
    let c = CString::new(name).unwrap();
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
    // SAFETY: `c` is NUL-terminated and outlives the call; `at` is open.
    let fd = unsafe { libc::openat(at.as_raw_fd(), c.as_ptr(), flags, 0o644) };
    assert!(
        fd >= 0,
        "create {name}: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    f.write_all(&vec![b'x'; len]).unwrap();
}
