//! Sandboxes that refuse one io_uring system call (container seccomp
//! profiles filter them one at a time): every open, walk and bridge
//! returns an error naming the call instead of waiting forever, and
//! `io_uring_usable` tells a program beforehand.
//!
//! Each test runs itself again in a child process of this executable with
//! a seccomp filter installed (the filter stays with a process for good,
//! so it cannot be installed in the test runner itself); the child, told by
//! [`CHILD`] which call is refused, runs the checks. A child that hangs is
//! killed after a minute and fails the test.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_uring_getdents::fs::Dir;
use tokio_uring_getdents::walk::WalkBuilder;
use tokio_uring_getdents::{io_uring_usable, PathError};

/// Set in the child: `NR,ERRNO`, the refused call and its errno.
const CHILD: &str = "TOKIO_URING_GETDENTS_SANDBOX_CHILD";

/// In the test runner: runs the test `name` again in a child process for
/// each `(call, errno)` in `cases`, with that call refused, checks that it
/// passed, and returns `None`. In the child: the refused call and errno.
fn refusing(name: &str, cases: &[(libc::c_long, i32)]) -> Option<(libc::c_long, i32)> {
    if let Some(case) = std::env::var_os(CHILD) {
        let case = case.into_string().unwrap();
        let (nr, errno) = case.split_once(',').unwrap();
        return Some((nr.parse().unwrap(), errno.parse().unwrap()));
    }
    for &(nr, errno) in cases {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, format!("{nr},{errno}"));
        deny(&mut cmd, nr, errno);
        let out = output_within_a_minute(&mut cmd);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{name}, call {nr} refused with errno {errno}: {}\n{stdout}\n{stderr}",
            out.status
        );
    }
    None
}

/// Makes `cmd`'s process fail the system call `nr` with `errno` (a seccomp
/// filter after `PR_SET_NO_NEW_PRIVS`, so no privilege is needed).
fn deny(cmd: &mut Command, nr: libc::c_long, errno: i32) {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let filter = [
        // The system call number (offset 0 of `struct seccomp_data`).
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        // `nr`? then the next instruction, else skip it.
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: nr as u32,
        },
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | errno as u32,
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes two prctl system calls; `filter` is moved into the closure and
    // outlives them.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// `cmd`'s output, or a failure if it runs longer than a minute (each
/// child takes milliseconds; a hang is the bug).
fn output_within_a_minute(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        let _ = stderr.read_to_end(&mut err);
        let _ = tx.send((child.wait().unwrap(), out, err));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok((status, stdout, stderr)) => Output {
            status,
            stdout,
            stderr,
        },
        Err(_) => {
            // SAFETY: kill has no memory preconditions; the child is not
            // reaped yet (the thread still waits for it), so the pid is
            // still its own.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{cmd:?} did not finish within a minute");
        }
    }
}

/// A small tree: `a/b/c`, `a/d`, `wide/f0` to `wide/f49`.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    std::fs::write(dir.path().join("a/b/c"), b"c").unwrap();
    std::fs::write(dir.path().join("a/d"), b"d").unwrap();
    std::fs::create_dir(dir.path().join("wide")).unwrap();
    for i in 0..50 {
        std::fs::write(dir.path().join(format!("wide/f{i}")), b"f").unwrap();
    }
    dir
}

/// Every path below `root` and `root` itself, by std::fs.
fn reference(root: &Path) -> BTreeSet<PathBuf> {
    fn go(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            out.insert(entry.path());
            if entry.file_type().unwrap().is_dir() {
                go(&entry.path(), out);
            }
        }
    }
    let mut out = BTreeSet::from([root.to_path_buf()]);
    go(root, &mut out);
    out
}

/// The kind an errno gives, and the call's name in messages.
fn expected(nr: libc::c_long, errno: i32) -> (ErrorKind, &'static str) {
    let kind = std::io::Error::from_raw_os_error(errno).kind();
    let call = match nr {
        libc::SYS_io_uring_setup => "io_uring_setup",
        libc::SYS_io_uring_enter => "io_uring_enter",
        _ => "io_uring_register",
    };
    (kind, call)
}

/// Checks an error of this crate for a refused call: its kind, the path
/// it names, the call in its message.
fn check_refused(err: &std::io::Error, path: &Path, kind: ErrorKind, call: &str) {
    assert_eq!(err.kind(), kind, "{err}");
    let detail = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<PathError>())
        .unwrap_or_else(|| panic!("no PathError in {err}"));
    assert_eq!(detail.path(), path);
    assert!(err.to_string().contains(call), "{err}");
}

const ENTER_REFUSED: &[(libc::c_long, i32)] = &[
    (libc::SYS_io_uring_enter, libc::EPERM),
    (libc::SYS_io_uring_enter, libc::ENOSYS),
];

/// `io_uring_enter` refused: `Dir::open` and `fs::statx` fail at once,
/// naming the path and the call, with the errno's kind. They used to wait
/// forever (in `epoll_wait`) for a completion that never came.
#[test]
fn open_without_io_uring_enter_fails_at_once() {
    let Some((nr, errno)) = refusing("open_without_io_uring_enter_fails_at_once", ENTER_REFUSED)
    else {
        return;
    };
    let (kind, call) = expected(nr, errno);
    let t = tree();
    let err = io_uring_usable().unwrap_err();
    assert_eq!(err.kind(), kind, "{err}");
    assert!(err.to_string().contains(call), "{err}");
    tokio_uring::start(async {
        let err = Dir::open(t.path()).await.unwrap_err();
        check_refused(&err, t.path(), kind, call);
        let err = tokio_uring_getdents::fs::statx(t.path(), libc::STATX_BASIC_STATS)
            .await
            .unwrap_err();
        check_refused(&err, t.path(), kind, call);
    });
}

/// `io_uring_enter` refused: the walk stream yields one error naming the
/// root and the call, then ends (it used to hang on opening the root).
#[test]
fn walk_without_io_uring_enter_yields_one_error() {
    let Some((nr, errno)) = refusing(
        "walk_without_io_uring_enter_yields_one_error",
        ENTER_REFUSED,
    ) else {
        return;
    };
    let (kind, call) = expected(nr, errno);
    let t = tree();
    let items: Vec<_> =
        tokio_uring::start(async { WalkBuilder::new(t.path()).build().collect().await });
    assert_eq!(items.len(), 1, "{items:?}");
    check_refused(items[0].as_ref().unwrap_err(), t.path(), kind, call);
}

/// `io_uring_enter` or `io_uring_setup` refused: `WalkBuilder::spawn`,
/// from a plain tokio runtime, returns a receiver that yields one error
/// naming the root and the call, then ends. With `io_uring_enter`
/// refused it used to hang; with `io_uring_setup` it gave tokio-uring's
/// panic message as the item.
#[test]
fn spawn_without_io_uring_yields_one_error() {
    let Some((nr, errno)) = refusing(
        "spawn_without_io_uring_yields_one_error",
        &[
            (libc::SYS_io_uring_enter, libc::EPERM),
            (libc::SYS_io_uring_enter, libc::ENOSYS),
            (libc::SYS_io_uring_setup, libc::EPERM),
            (libc::SYS_io_uring_setup, libc::ENOSYS),
        ],
    ) else {
        return;
    };
    let (kind, call) = expected(nr, errno);
    let t = tree();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let items: Vec<_> = runtime.block_on(async {
        let walk = WalkBuilder::new(t.path()).spawn().unwrap();
        walk.collect().await
    });
    assert_eq!(items.len(), 1, "{items:?}");
    check_refused(items[0].as_ref().unwrap_err(), t.path(), kind, call);
}

/// `io_uring_setup` refused: `io_uring_usable` says so, naming the call,
/// where `tokio_uring::start` panics (which is why a program asks first).
#[test]
fn io_uring_usable_foresees_a_refused_setup() {
    let Some((nr, errno)) = refusing(
        "io_uring_usable_foresees_a_refused_setup",
        &[
            (libc::SYS_io_uring_setup, libc::EPERM),
            (libc::SYS_io_uring_setup, libc::ENOSYS),
        ],
    ) else {
        return;
    };
    let (kind, call) = expected(nr, errno);
    let err = io_uring_usable().unwrap_err();
    assert_eq!(err.kind(), kind, "{err}");
    assert!(err.to_string().contains(call), "{err}");
    let started = std::panic::catch_unwind(|| tokio_uring::start(async {}));
    assert!(started.is_err(), "tokio_uring::start ran without a ring");
}

/// `io_uring_register` refused: nothing changes but the GETDENTS probe
/// (the fallback reads): `Dir`, the walk and the bridge list exactly what
/// std::fs lists.
#[test]
fn without_io_uring_register_everything_lists_exactly() {
    if refusing(
        "without_io_uring_register_everything_lists_exactly",
        &[
            (libc::SYS_io_uring_register, libc::EPERM),
            (libc::SYS_io_uring_register, libc::ENOSYS),
        ],
    )
    .is_none()
    {
        return;
    }
    let t = tree();
    let want = reference(t.path());
    io_uring_usable().unwrap();
    let wide = t.path().join("wide");
    let want_names: BTreeSet<OsString> = std::fs::read_dir(&wide)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let (names, walked) = tokio_uring::start(async {
        let mut dir = Dir::open(&wide).await.unwrap();
        let mut names = BTreeSet::new();
        while let Some(entry) = dir.next().await {
            names.insert(entry.unwrap().file_name().to_owned());
        }
        dir.close().await.unwrap();
        let walked: BTreeSet<PathBuf> = WalkBuilder::new(t.path())
            .build()
            .map(|item| item.unwrap().path().to_path_buf())
            .collect()
            .await;
        (names, walked)
    });
    assert_eq!(names, want_names);
    assert_eq!(walked, want);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let bridged: BTreeSet<PathBuf> = runtime.block_on(async {
        WalkBuilder::new(t.path())
            .spawn()
            .unwrap()
            .map(|item| item.unwrap().path().to_path_buf())
            .collect()
            .await
    });
    assert_eq!(bridged, want);
}
