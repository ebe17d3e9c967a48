//! The command line: arguments, exit codes, errors, faults.

mod testenv;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use testenv::*;

fn code_and_stderr(args: &[&OsStr]) -> (Option<i32>, String, String) {
    let out = traverse(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `traverse --json --engine ENGINE PATHS...`: exit code, stdout, stderr.
fn json_with_engine(engine: &str, paths: &[&Path]) -> (Option<i32>, String, String) {
    let mut args = vec![
        OsStr::new("--json"),
        OsStr::new("--engine"),
        OsStr::new(engine),
    ];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    code_and_stderr(&args)
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let env = TestEnv::new();
    let d = env.root().as_os_str();
    let cases: Vec<(Vec<&OsStr>, &str)> = vec![
        (vec![OsStr::new("--bogus"), d], "--bogus"),
        (vec![OsStr::new("--engine"), OsStr::new("fast"), d], "fast"),
        (vec![OsStr::new("-j"), OsStr::new("0"), d], "0"),
        (vec![OsStr::new("-j"), OsStr::new("many"), d], "many"),
        (
            vec![OsStr::new("--json"), OsStr::new("--list"), d],
            "--list",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, stderr) = code_and_stderr(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// An empty PATH names no file: reported as du reports it (not as a
/// missing option value), exit status 1, the other PATHs walked.
#[test]
fn an_empty_path_is_reported_as_no_such_file() {
    let env = TestEnv::new();
    env.file("f", 10);
    let (code, stdout, stderr) =
        code_and_stderr(&[OsStr::new("--json"), OsStr::new(""), env.root().as_os_str()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "traverse: cannot access '': No such file or directory (os error 2)\n"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let (path, t) = parse_json(lines[0]);
    assert_eq!((path.as_str(), t.errors, t.dirs), ("\"\"", 1, 0));
    assert_eq!(parse_json(lines[1]).1.files, 1);
}

#[test]
fn missing_path_is_a_runtime_error() {
    let env = TestEnv::new();
    let missing = env.root().join("no such dir");
    let (code, stdout, stderr) = code_and_stderr(&[OsStr::new("--json"), missing.as_os_str()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("no such dir") && stderr.contains("No such file or directory"),
        "{stderr}"
    );
    let (_, t) = parse_json(stdout.trim_end());
    assert_eq!(
        t,
        Totals {
            errors: 1,
            ..Totals::default()
        }
    );
}

/// `du -sb PATH`'s byte count, the reference for a PATH that is not a
/// directory.
fn du_bytes(path: &Path) -> u128 {
    let du = Command::new("du").arg("-sb").arg(path).output().unwrap();
    assert!(du.status.success(), "du -sb {}", path.display());
    let text = String::from_utf8(du.stdout).unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn a_path_that_is_not_a_directory_is_counted_as_du_counts_it() {
    let env = TestEnv::new();
    let file = env.file("f", 1234);
    let a = env.mkdir("a");
    env.file("a/x/inner", 99);
    let b = env.mkdir("b");
    env.file("b/y", 5);
    let dev_null = Path::new("/dev/null");
    let (want_a, want_b) = (reference(&a, false, false), reference(&b, false, false));
    for engine in ENGINES {
        for (path, files, other) in [(&*file, 1, 0), (dev_null, 0, 1)] {
            let (code, stdout, stderr) = json_with_engine(engine, &[path]);
            assert_eq!(code, Some(0), "{engine} {path:?}: {stderr}");
            assert_eq!(stderr, "");
            let (_, t) = parse_json(stdout.trim_end());
            assert_eq!(
                (t.files, t.dirs, t.other),
                (files, 0, other),
                "{engine} {path:?}"
            );
            assert_eq!(t.bytes, du_bytes(path), "{engine} {path:?}");
        }
        // Among other PATHs: each counted in its own line and the total.
        let (code, stdout, stderr) = json_with_engine(engine, &[&a, &file, &b]);
        assert_eq!(code, Some(0), "{engine}: {stderr}");
        let lines: Vec<Totals> = stdout.lines().map(|l| parse_json(l).1).collect();
        assert_eq!(lines.len(), 4, "{engine}: {stdout}");
        assert_eq!(lines[0], want_a, "{engine}");
        assert_eq!((lines[1].files, lines[1].bytes), (1, 1234), "{engine}");
        assert_eq!(lines[2], want_b, "{engine}");
        assert_eq!(lines[3].files, want_a.files + want_b.files + 1, "{engine}");
    }
}

#[test]
fn a_symlink_path_is_counted_as_the_link_unless_it_ends_with_a_slash() {
    let env = TestEnv::new();
    let dir = env.mkdir("d");
    env.file("d/inner", 99);
    env.file("d/sub/deeper", 1000);
    symlink("sub", dir.join("link-inside")).unwrap();
    let link = env.root().join("link");
    symlink(&dir, &link).unwrap();
    let dangling = env.root().join("dangling");
    symlink("nowhere", &dangling).unwrap();
    for engine in ENGINES {
        for path in [&link, &dangling] {
            let (code, stdout, stderr) = json_with_engine(engine, &[path]);
            assert_eq!(code, Some(0), "{engine} {path:?}: {stderr}");
            let (_, t) = parse_json(stdout.trim_end());
            assert_eq!(
                (t.symlinks, t.files, t.dirs),
                (1, 0, 0),
                "{engine} {path:?}"
            );
            assert_eq!(t.bytes, du_bytes(path), "{engine} {path:?}");
        }
    }
    // `link/`: the kernel follows the symlink, as for `find link/` and
    // `du -sb link/`; the symlink inside is still not followed.
    let followed = link.join("");
    assert!(followed.as_os_str().as_encoded_bytes().ends_with(b"/"));
    check_all_engines(&followed, &[]);
    let listed = traverse([OsStr::new("--list"), followed.as_os_str()]);
    assert_eq!(listed.status.code(), Some(0));
    let find = Command::new("find").arg(&followed).output().unwrap();
    let sorted = |bytes: Vec<u8>| {
        let mut lines: Vec<String> = String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        lines.sort();
        lines
    };
    let ours = sorted(listed.stdout);
    assert_eq!(ours, sorted(find.stdout));
    assert!(ours
        .iter()
        .all(|l| l.starts_with(&*followed.to_string_lossy())));
}

#[test]
fn human_output_first_line_and_total() {
    let env = TestEnv::new();
    env.file("a/x", 10);
    env.file("b/y", 20);
    let out = traverse([env.root().join("a"), env.root().join("b")]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines[0].starts_with("1 files, "), "{text}");
    assert!(
        lines[1]
            .trim_start()
            .starts_with("1 dirs, 0 symlinks, 0 other, "),
        "{text}"
    );
    assert!(
        lines[4].starts_with("2 files, ") && lines[4].ends_with("\ttotal"),
        "{text}"
    );
}

/// `du -sb PATH` run as the unprivileged user: its output and the total it printed.
fn du_sb_unprivileged(path: &Path) -> (Output, u64) {
    let out = as_unprivileged(Command::new("du").arg("-sb").arg(path))
        .output()
        .unwrap();
    let bytes = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (out, bytes)
}

/// `EXE --json --engine ENGINE PATH` run as the unprivileged user.
fn json_unprivileged(exe: &Path, engine: &str, path: &Path) -> Output {
    as_unprivileged(
        Command::new(exe)
            .args(["--json", "--engine", engine])
            .arg(path),
    )
    .output()
    .unwrap()
}

#[test]
fn unreadable_directory_is_reported_and_the_walk_goes_on() {
    let env = TestEnv::new();
    env.open_to_all();
    let t = env.mkdir("t");
    env.file("t/ok/file", 100);
    env.file("t/secret/hidden", 5000);
    env.mkdir("t/secret/sub");
    env.file("t/z/after", 7);
    for dir in ["t", "t/ok", "t/z"] {
        fs::set_permissions(env.root().join(dir), fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::set_permissions(t.join("secret"), fs::Permissions::from_mode(0o000)).unwrap();
    let exe = env.runnable_copy_of_bin();
    let (du_out, du_bytes) = du_sb_unprivileged(&t);
    assert_eq!(
        du_out.status.code(),
        Some(1),
        "du fails too, so the test is real"
    );
    for engine in ENGINES {
        let out = json_unprivileged(&exe, engine, &t);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert!(
            stderr.contains("/t/secret") && stderr.contains("Permission denied"),
            "{engine}: {stderr}"
        );
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(
            (got.files, got.dirs, got.errors, got.bytes),
            (2, 4, 1, u128::from(du_bytes)),
            "{engine}"
        );
    }
    fs::set_permissions(t.join("secret"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// Unmounts when dropped, so a failing test leaves no mount behind.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn one_file_system_skips_a_tmpfs_mounted_inside() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    env.file("t/here", 300);
    let mnt = env.mkdir("t/mnt");
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "traverse-test"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        println!("skipped: cannot mount a tmpfs here (needs root and mount permission)");
        return;
    }
    let _guard = Mount(mnt.clone());
    fs::create_dir(mnt.join("inner")).unwrap();
    fs::write(mnt.join("inner/far"), vec![b'y'; 9000]).unwrap();
    fs::write(mnt.join("top"), b"z").unwrap();
    check_all_engines(&t, &["-x"]);
    check_all_engines(&t, &[]);
    let cross = totals(&t, "threads", &[]);
    let stay = totals(&t, "threads", &["-x"]);
    assert_eq!(cross.files - stay.files, 2);
    let (ours, find) = {
        let out = traverse([OsStr::new("--list"), OsStr::new("-x"), t.as_os_str()]);
        let find = Command::new("find").arg(&t).arg("-xdev").output().unwrap();
        let mut a: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        let mut b: Vec<String> = String::from_utf8(find.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        a.sort();
        b.sort();
        (a, b)
    };
    assert_eq!(ours, find);
}

/// Waits until process `pid` has a descriptor open below `dir`.
fn wait_for_open_dir(pid: u32, dir: &std::path::Path, deadline: Instant) -> bool {
    while Instant::now() < deadline {
        if let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) {
            for fd in fds.flatten() {
                if let Ok(target) = fs::read_link(fd.path()) {
                    if target.starts_with(dir) && target != dir {
                        return true;
                    }
                }
            }
        }
    }
    false
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill has no memory effects; `pid` is our child.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn sigint_prints_partial_totals_and_exits_130() {
    let env = TestEnv::in_memory();
    let t = env.mkdir("t");
    // Large enough that an optimised build is still walking when the
    // polling below sees it (10 000 files were not, for `uring`).
    const DIRS: u64 = 300;
    for d in 0..DIRS {
        let dir = t.join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for f in 0..100 {
            fs::File::create(dir.join(format!("f{f}"))).unwrap();
        }
    }
    for (engine, json) in [
        ("std", true),
        ("threads", false),
        ("tokio", true),
        ("uring", true),
    ]
    .into_iter()
    .filter(|(engine, _)| ENGINES.contains(engine))
    {
        let mut cmd = Command::new(bin());
        cmd.args(["--engine", engine, "-j", "1"]);
        if json {
            cmd.arg("--json");
        }
        let child = cmd
            .arg(&t)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let caught = wait_for_open_dir(pid, &t, Instant::now() + Duration::from_secs(20));
        if caught {
            // Freeze it mid-walk so the walk cannot end before the signal.
            signal(pid, libc::SIGSTOP);
            signal(pid, libc::SIGINT);
            signal(pid, libc::SIGCONT);
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            caught,
            "{engine}: the walk ended before it could be interrupted"
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{engine}: {stderr}");
        assert!(stderr.contains("partial"), "{engine}: {stderr}");
        let files = if json {
            parse_json(stdout.trim_end()).1.files
        } else {
            assert!(
                stdout.lines().next().unwrap().ends_with("(partial)"),
                "{stdout}"
            );
            stdout.split(' ').next().unwrap().parse().unwrap()
        };
        assert!(files < DIRS * 100, "{engine}: {files} files: not partial");
    }
}

#[test]
fn directories_changing_during_the_walk() {
    let env = TestEnv::in_memory();
    let t = env.mkdir("t");
    let mut stable = Vec::new();
    for d in 0..30 {
        for f in 0..20 {
            stable.push(env.file(&format!("t/stable{d}/f{f}"), f));
        }
    }
    let churn = env.mkdir("t/churn");
    let stop = Arc::new(AtomicBool::new(false));
    let churner = {
        let stop = Arc::clone(&stop);
        let churn = churn.clone();
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let a = churn.join(format!("a{}", i % 50));
                let b = churn.join(format!("b{}", i % 50));
                let _ = fs::create_dir_all(a.join("x/y"));
                let _ = fs::write(a.join("x/file"), b"data");
                let _ = fs::rename(&a, &b);
                let _ = fs::remove_dir_all(&b);
                i += 1;
            }
        })
    };
    for engine in ENGINES {
        for _ in 0..3 {
            let out = traverse([
                OsStr::new("--list"),
                OsStr::new("--engine"),
                OsStr::new(engine),
                t.as_os_str(),
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{engine}: {stderr}"
            );
            for line in stderr.lines() {
                assert!(
                    line.starts_with("traverse: ") && line.contains("/churn/"),
                    "{line}"
                );
            }
            let text = String::from_utf8(out.stdout).unwrap();
            let mut listed: Vec<&str> = text.lines().filter(|l| l.contains("/stable")).collect();
            listed.sort();
            let before = listed.len();
            listed.dedup();
            assert_eq!(before, listed.len(), "{engine}: a stable path listed twice");
            assert_eq!(
                listed.len(),
                stable.len() + 30,
                "{engine}: stable entries lost"
            );
            let totals_run = traverse([
                OsStr::new("--json"),
                OsStr::new("--engine"),
                OsStr::new(engine),
                t.as_os_str(),
            ]);
            assert!(matches!(totals_run.status.code(), Some(0 | 1)));
            let (_, got) = parse_json(String::from_utf8(totals_run.stdout).unwrap().trim_end());
            assert!(got.files >= stable.len() as u64, "{engine}: {got:?}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    churner.join().unwrap();
}

/// Makes `io_uring_setup` fail with ENOSYS for `cmd`, as on a kernel
/// without io_uring.
fn without_io_uring(cmd: &mut Command) -> &mut Command {
    deny_syscall(cmd, libc::SYS_io_uring_setup, libc::ENOSYS)
}

#[test]
fn uring_engine_falls_back_to_threads_without_io_uring() {
    let env = TestEnv::new();
    env.file("a/b/c", 4321);
    env.file("a/d", 10);
    let want = totals(env.root(), "threads", &[]);
    let out = without_io_uring(
        Command::new(bin())
            .args(["--json", "--engine", "uring"])
            .arg(env.root()),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr}");
    assert!(
        stderr.contains("io_uring") && stderr.contains("threads engine"),
        "{stderr}"
    );
    let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
    assert_eq!(got, want);
    // auto takes io_uring only where it works, so it says nothing.
    let out = without_io_uring(Command::new(bin()).arg("--json").arg(env.root()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn entries_that_cannot_be_stat_ed_are_errors_and_the_walk_goes_on() {
    // A directory that can be read but not searched (r--): its names come
    // back from getdents and every statx on them fails, as when an entry
    // vanishes between the two. Deterministic, unlike a race.
    let env = TestEnv::new();
    env.open_to_all();
    let t = env.mkdir("t");
    env.file("t/ok/file", 100);
    for name in ["a", "b", "c"] {
        env.file(&format!("t/listable/{name}"), 10);
    }
    for dir in ["t", "t/ok"] {
        fs::set_permissions(env.root().join(dir), fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::set_permissions(t.join("listable"), fs::Permissions::from_mode(0o444)).unwrap();
    let exe = env.runnable_copy_of_bin();
    let (du_out, du_bytes) = du_sb_unprivileged(&t);
    let du_stderr = String::from_utf8_lossy(&du_out.stderr);
    assert_eq!(du_out.status.code(), Some(1), "du fails too: {du_stderr}");
    assert_eq!(du_stderr.lines().count(), 3, "{du_stderr}");
    for engine in ENGINES {
        let out = json_unprivileged(&exe, engine, &t);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert_eq!(stderr.lines().count(), 3, "{engine}: {stderr}");
        for line in stderr.lines() {
            assert!(
                line.contains("/t/listable/")
                    && line.contains("cannot stat")
                    && line.contains("Permission denied"),
                "{engine}: {line}"
            );
        }
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(
            (got.files, got.dirs, got.errors, got.bytes),
            (1, 3, 3, u128::from(du_bytes)),
            "{engine}"
        );
    }
    fs::set_permissions(t.join("listable"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// Sum of `du ARGS PATH`'s first number, and its stderr, whatever its
/// exit status.
fn du_allowing_errors(path: &Path, args: &[&str]) -> (u64, Option<i32>, String) {
    let out = Command::new("du").args(args).arg(path).output().unwrap();
    let bytes = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (
        bytes,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn entry_removed_between_getdents_and_statx_is_an_error_and_the_walk_goes_on() {
    // testfs's Vanish fault: the parent's getdents64 lists the names, and
    // every lookup or stat of them fails with ENOENT, as when they are
    // removed between the two calls; deterministic, unlike a real race.
    let env = TestEnv::new();
    let src = env.mkdir("src");
    for d in 0..6 {
        for f in 0..4 {
            env.file(&format!("src/d{d}/f{f}"), 100 * d + 7 * f + 1);
        }
    }
    env.file("src/d3/deeper/x", 5000);
    symlink("d0", src.join("link")).unwrap();
    let options = testfs::Options::new()
        .fault("d3", testfs::Fault::Vanish)
        .fault("d5/f2", testfs::Fault::Vanish);
    let Some(mount) = mount_testfs(&env, &src, &options) else {
        return;
    };
    let mnt = mount.mountpoint();

    // du meets the same two errors through the mount, so the fault is real;
    // its totals are the reference for the bytes.
    let (bytes, du_code, du_stderr) = du_allowing_errors(mnt, &["-sb"]);
    let (disk_bytes, _, _) = du_allowing_errors(mnt, &["-sB1"]);
    assert_eq!(du_code, Some(1), "{du_stderr}");
    assert_eq!(du_stderr.lines().count(), 2, "{du_stderr}");
    // Counts: the source's, less the vanished directory and file.
    let all = reference(&src, false, false);
    let gone = reference(&src.join("d3"), false, false);
    let want = Totals {
        files: all.files - gone.files - 1,
        dirs: all.dirs - gone.dirs,
        symlinks: 1,
        other: 0,
        bytes: bytes.into(),
        disk_bytes: disk_bytes.into(),
        errors: 2,
    };
    for engine in ENGINES {
        let out = traverse([
            OsStr::new("--json"),
            OsStr::new("--engine"),
            OsStr::new(engine),
            mnt.as_os_str(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        let mut lines: Vec<&str> = stderr.lines().collect();
        lines.sort();
        let expect: Vec<String> = ["d3", "d5/f2"]
            .iter()
            .map(|rel| {
                format!(
                    "traverse: {}: cannot stat: No such file or directory (os error 2)",
                    mnt.join(rel).display()
                )
            })
            .collect();
        assert_eq!(lines, expect, "{engine}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "{engine}");
    }
    let stats = mount.unmount().unwrap();
    assert!(stats.enoent_injected >= 2 * ENGINES.len() as u64, "{stats}");
}

/// Many PATHs, walked one after the other: the totals are du's, and what
/// a walk sets up is set up once for all of them, not once per PATH: the
/// mount table (read to know which names may be mount points; it was
/// more than half of the CPU time of each small PATH), the CPU count
/// (std reads the cgroup's quota files for it), and, in the parallel
/// engines, threads (started as work appears, so a one-file PATH starts
/// none) and rings (the `uring` walker's is kept from one PATH to the
/// next). 300 PATHs started 300 threads and 300 rings before. The counts
/// need strace (skipped without it, as in the test VM), stopping the walk
/// only at the calls it counts (`--seccomp-bpf`): stopped at every call,
/// each directory read looks slow and blocked, the sign of a cold cache,
/// and the engines start the threads of one (63 to 147 in a run).
#[test]
fn many_paths_are_counted_as_du_and_set_up_once() {
    let env = TestEnv::new();
    let paths: Vec<PathBuf> = (0..300)
        .map(|i| {
            env.file(&format!("p{i}/f"), i);
            env.root().join(format!("p{i}"))
        })
        .collect();
    let du_total = Command::new("du")
        .arg("-sbc")
        .args(&paths)
        .output()
        .unwrap();
    let du_total: u128 = String::from_utf8_lossy(&du_total.stdout)
        .lines()
        .last()
        .and_then(|l| l.split('\t').next())
        .unwrap()
        .parse()
        .unwrap();
    for engine in ENGINES {
        let mut args = vec![
            OsStr::new("--json"),
            OsStr::new("--engine"),
            OsStr::new(engine),
        ];
        args.extend(paths.iter().map(|p| p.as_os_str()));
        let (code, stdout, stderr) = code_and_stderr(&args);
        assert_eq!(code, Some(0), "{engine}: {stderr}");
        let (_, total) = parse_json(stdout.lines().last().unwrap());
        assert_eq!((total.bytes, total.files), (du_total, 300), "{engine}");
        let report = env.root().join(format!("strace-{engine}.txt"));
        let traced = Command::new("strace")
            .args(["-f", "--seccomp-bpf", "-e"])
            .args(["trace=openat,clone,clone3,io_uring_setup", "-o"])
            .arg(&report)
            .arg(bin())
            .args(&args)
            .output();
        let Ok(traced) = traced else {
            println!("skipped: strace is not installed here");
            continue;
        };
        assert!(traced.status.success(), "{engine}");
        let trace = fs::read_to_string(&report).unwrap();
        let calls = |what: &str| trace.lines().filter(|l| l.contains(what)).count();
        let opens = calls("/proc/self/mountinfo");
        assert!(opens <= 1, "{engine}: the mount table read {opens} times");
        let opens = calls("/proc/self/cgroup");
        assert!(opens <= 1, "{engine}: the cgroup read {opens} times");
        if *engine == "threads" || *engine == "uring" {
            // Far fewer than PATHs: these walks find no work to share;
            // a few threads may start where a unit looks slow and blocked
            // (the cold-cache rule, on a loaded machine), and the detection
            // of io_uring sets up rings of its own.
            let threads = calls(" clone(") + calls(" clone3(");
            assert!(threads < 30, "{engine}: {threads} threads started");
            let rings = calls(" io_uring_setup(");
            assert!(rings < 30, "{engine}: {rings} rings set up");
        }
    }
}
