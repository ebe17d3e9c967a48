//! Sandboxes that filter io_uring's system calls one at a time (container
//! seccomp profiles do, and not always all three): the `uring` engine
//! either runs or gives way to `threads` with one line on stderr, never
//! panics or hangs, and `auto` (which takes `uring` only where io_uring
//! works and the kernel has readdirplus) says nothing.

mod testenv;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use testenv::*;

/// `cmd`'s output, or a failure if it runs longer than a minute (a walk
/// of these trees takes milliseconds; a hang is the bug).
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

/// `traverse --json --engine ENGINE PATH` with `nr` failing with `errno`.
fn run_denied(nr: libc::c_long, errno: i32, engine: &str, path: &Path) -> Output {
    output_within_a_minute(deny_syscall(
        Command::new(bin())
            .args(["--json", "--engine", engine])
            .arg(path),
        nr,
        errno,
    ))
}

fn small_tree(env: &TestEnv) -> std::path::PathBuf {
    env.file("t/a/b/c", 4321);
    env.file("t/a/d", 10);
    for i in 0..50 {
        env.file(&format!("t/wide/f{i}"), i);
    }
    env.root().join("t")
}

/// `io_uring_setup` allowed, `io_uring_enter` refused (EPERM, and ENOSYS
/// as a profile that pretends the call does not exist): `--engine uring`
/// says on one line that it uses the threads engine, and counts exactly;
/// `auto` says nothing. The engine used to panic ("io_uring_enter
/// failed", exit 101) on its first submission.
#[test]
fn uring_without_io_uring_enter_falls_back_to_threads() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    let want = reference(&t, false, false);
    for errno in [libc::EPERM, libc::ENOSYS] {
        let out = run_denied(libc::SYS_io_uring_enter, errno, "uring", &t);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "errno {errno}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr}");
        assert!(
            stderr.contains("io_uring_enter") && stderr.contains("threads engine"),
            "{stderr}"
        );
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "errno {errno}");

        let out = run_denied(libc::SYS_io_uring_enter, errno, "auto", &t);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "errno {errno}: {stderr}");
        assert!(stderr.is_empty(), "auto: {stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "auto, errno {errno}");
    }
}

/// `io_uring_register` refused: the engine loses only what it registers
/// (the GETDENTS probe, the io-wq size), keeps its rings and counts
/// exactly, silently.
#[test]
fn uring_without_io_uring_register_counts_exactly() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    let want = reference(&t, false, false);
    for errno in [libc::EPERM, libc::ENOSYS] {
        let out = run_denied(libc::SYS_io_uring_register, errno, "uring", &t);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "errno {errno}: {stderr}");
        assert!(stderr.is_empty(), "errno {errno}: {stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "errno {errno}");
    }
}

/// `io_uring_setup` refused with EPERM (the ENOSYS case is the CLI
/// tests'): the threads engine, one line saying so.
#[test]
fn uring_without_io_uring_setup_falls_back_to_threads() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    let want = reference(&t, false, false);
    let out = run_denied(libc::SYS_io_uring_setup, libc::EPERM, "uring", &t);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr}");
    assert!(
        stderr.contains("io_uring_setup") && stderr.contains("threads engine"),
        "{stderr}"
    );
    let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
    assert_eq!(got, want);
}
