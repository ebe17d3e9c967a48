//! Hostile and unlucky cases: a root swapped during the walk, names longer
//! than `NAME_MAX`, threads that cannot be spawned, bind-mount loops,
//! sums past 2^64, a closed stdout, deep trees with few descriptors.

mod testenv;

use std::ffi::{CString, OsStr};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use testenv::*;

/// `sh -c SCRIPT traverse ARGS...`: the script runs `exec "$0" "$@"` after
/// its own setup (a `ulimit`, a redirection).
fn shell(script: &str, args: &[&OsStr]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(bin())
        .args(args)
        .output()
        .expect("run sh")
}

/// Runs `cmd` with its output captured; kills it and fails the test if it
/// has not ended after `limit` (a hang must fail, not stall the suite).
fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn root_user() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// Swaps two names atomically (`renameat2(RENAME_EXCHANGE)`).
fn exchange(a: &CString, b: &CString) {
    // SAFETY: both paths are NUL-terminated and outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(rc, 0, "renameat2: {}", std::io::Error::last_os_error());
}

/// A tree of 20 directories of 5 files each, the files' names starting
/// with `tag` (the directories' names are the same in every such tree, so
/// a walk that strays from one into another finds them).
fn tagged_tree(dir: &Path, tag: &str) {
    fs::create_dir_all(dir).unwrap();
    for d in 0..20 {
        let sub = dir.join(format!("d{d}"));
        fs::create_dir(&sub).unwrap();
        for f in 0..5 {
            fs::write(sub.join(format!("{tag}-f{f}")), b"x").unwrap();
        }
    }
}

/// A walk of PATH while another thread swaps PATH with a symlink to
/// another tree, and the directory above PATH with a symlink to a
/// directory holding another tree under the same name. A walk may find
/// either tree when it starts (as `find` would, following the directory
/// above PATH at that moment), but it must list one tree only: every open
/// after the first is relative to the root it opened, never to PATH again,
/// even when the descriptor budget forces reopening (`ulimit -n 20`).
#[test]
fn a_root_swapped_during_the_walk_never_mixes_trees() {
    let env = TestEnv::in_memory();
    let path = env.root().join("cur/t");
    tagged_tree(&path, "in");
    tagged_tree(&env.root().join("other/t"), "out");
    let link = env.root().join("link");
    symlink(env.root().join("other/t"), &link).unwrap();
    let cur_link = env.root().join("curlink");
    symlink(env.root().join("other"), &cur_link).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let pairs = [
            (c_path(&path), c_path(&link)),
            (c_path(&env.root().join("cur")), c_path(&cur_link)),
        ];
        std::thread::spawn(move || {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let (a, b) = &pairs[i % 2];
                exchange(a, b);
                exchange(a, b);
                if i.is_multiple_of(7) {
                    exchange(a, b);
                    std::thread::yield_now();
                    exchange(a, b);
                }
                i += 1;
            }
        })
    };
    let mut both = Vec::new();
    let mut walked = 0;
    for engine in ENGINES {
        for limit in ["ulimit -n 20 && ", ""] {
            for _ in 0..15 {
                let script = format!("{limit}exec \"$0\" \"$@\"");
                let out = shell(
                    &script,
                    &[
                        OsStr::new("--list"),
                        OsStr::new("-j"),
                        OsStr::new("1"),
                        OsStr::new("--engine"),
                        OsStr::new(engine),
                        path.as_os_str(),
                    ],
                );
                let text = String::from_utf8_lossy(&out.stdout);
                let inside = text.lines().filter(|l| l.contains("/in-")).count();
                let outside = text.lines().filter(|l| l.contains("/out-")).count();
                if inside > 0 && outside > 0 {
                    both.push(format!("{engine} {limit}: {inside} in, {outside} out"));
                }
                walked += usize::from(inside + outside > 0);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(both.is_empty(), "walks that mixed two trees: {both:?}");
    assert!(walked > 0, "no walk found a tree at all");
}

/// The totals of `path` with every engine, allowed to fail, within 60 s
/// (a hang is a failure, not a stuck test run).
fn json_within_a_minute(engine: &str, path: &Path) -> Output {
    Command::new("timeout")
        .args(["60", &bin().to_string_lossy(), "--json", "--engine", engine])
        .arg(path)
        .output()
        .expect("run timeout")
}

/// FUSE carries names of up to 1 024 bytes (ntfs-3g gives up to 765):
/// testfs shows a file and a directory under 300- and 1 024-byte names,
/// and every engine counts and lists them like `find` and `du`.
#[test]
fn names_longer_than_255_bytes_are_counted_and_listed() {
    let env = TestEnv::new();
    let src = env.mkdir("src");
    env.file("src/a/short", 10);
    env.file("src/a/file", 300);
    env.file("src/a/dir/inner", 1000);
    env.file("src/a/dir/sub/deeper", 7);
    let (file_name, dir_name) = ("f".repeat(300), "d".repeat(1024));
    let options = testfs::Options::new()
        .show_as("a/file", &file_name)
        .show_as("a/dir", &dir_name);
    let Some(mount) = mount_testfs(&env, &src, &options) else {
        return;
    };
    let mnt = mount.mountpoint();
    let mut want = reference(&src, false, false);
    want.bytes = du(mnt, &["-sb"]).into();
    want.disk_bytes = du(mnt, &["-sB1"]).into();
    for engine in ENGINES {
        let out = json_within_a_minute(engine, mnt);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{engine}: {stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "{engine}");
        let (ours, find) = list_both(mnt, engine);
        assert_eq!(ours, find, "{engine}");
        assert!(
            ours.iter().any(|p| p.ends_with(file_name.as_bytes())),
            "{engine}"
        );
    }
}

/// A user id no process of the machine has, so that `ulimit -u` counts
/// the test's process alone (other tests run as `nobody`).
const LONE_UID: u32 = 61234;

/// `ulimit -u 1` as an unprivileged user with no other process: no
/// thread can be spawned. The threads engine walks with the calling
/// thread alone and gives the same totals; before, it exited with a panic
/// (101).
#[test]
fn no_thread_can_be_spawned() {
    if !root_user() {
        println!("skipped: needs root to run as another user with its own ulimit -u");
        return;
    }
    let env = TestEnv::new();
    env.open_to_all();
    let exe = env.runnable_copy_of_bin();
    for d in 0..10 {
        for f in 0..10 {
            env.file(&format!("t/d{d}/f{f}"), d * 10 + f);
        }
    }
    let t = env.root().join("t");
    let want = reference(&t, false, false);
    for jobs in [None, Some("8")] {
        let mut args = vec!["--json"];
        if let Some(jobs) = jobs {
            args.extend(["-j", jobs]);
        }
        let mut cmd = Command::new(&exe);
        cmd.args(&args).arg(&t).uid(LONE_UID).gid(LONE_UID);
        // SAFETY: the closure runs in the child between fork and exec
        // (after std dropped root's groups and set the ids) and only calls
        // setrlimit with a struct on its stack.
        unsafe {
            cmd.pre_exec(|| {
                let one = libc::rlimit {
                    rlim_cur: 1,
                    rlim_max: 1,
                };
                if libc::setrlimit(libc::RLIMIT_NPROC, &one) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = output_within(cmd, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "-j {jobs:?}: {stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "-j {jobs:?}");
    }
}

/// `ulimit -v 90000` (90 MB of address space): spawning threads and
/// allocating the 1 MiB read buffers fail part of the way through 32
/// workers. The walk goes on with what it got: exact totals, no hang, no
/// abort (before, a failed spawn panicked and the walk hung). Many runs:
/// when the check for room asked malloc, whose heap kept freed memory the
/// new thread's own signal stack could not be mapped from, about one run
/// in 170 aborted in std's thread start.
#[test]
fn little_address_space() {
    let env = TestEnv::new();
    for d in 0..40 {
        for f in 0..20 {
            env.file(&format!("t/d{d}/f{f}"), f);
        }
    }
    let t = env.root().join("t");
    let want = reference(&t, false, false);
    for _ in 0..300 {
        let out = shell(
            "ulimit -v 90000 && exec timeout 60 \"$0\" \"$@\"",
            &[
                OsStr::new("--json"),
                OsStr::new("-j"),
                OsStr::new("32"),
                t.as_os_str(),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want);
    }
}

/// A directory bind-mounted below itself, three times over. `find`
/// reports "File system loop detected" for each and does not list them
/// (exit 1), `du` leaves them out: so the reference is the tree before
/// the mounts, less the three (then empty) mount points. (find and du are
/// not run on the loops themselves: du then reads the mount table and
/// stats every mount point, and hangs on any stuck FUSE mount of the
/// machine.) Every engine lists and counts that, names each loop on
/// stderr and exits 1.
#[test]
fn bind_mount_loops_are_reported_and_not_descended() {
    if !root_user() {
        println!("skipped: bind mounts need root");
        return;
    }
    let env = TestEnv::in_memory();
    let t = env.mkdir("t");
    env.file("t/f1", 100);
    env.file("t/x/f2", 200);
    env.file("t/x/y/f3", 300);
    let loops = [
        env.mkdir("t/loop"),
        env.mkdir("t/x/up"),
        env.mkdir("t/x/y/up"),
    ];
    let mut want = reference(&t, false, false);
    for at in &loops {
        let meta = fs::metadata(at).unwrap();
        want.dirs -= 1;
        want.bytes -= u128::from(meta.len());
        want.disk_bytes -= u128::from(std::os::unix::fs::MetadataExt::blocks(&meta)) * 512;
    }
    want.errors = 3;
    let mut find = find_lines(&t);
    find.retain(|line| !loops.iter().any(|at| Path::new(line) == at));
    let _mounts = [
        BindMount::new(&t, &loops[0]),
        BindMount::new(&t, &loops[1]),
        BindMount::new(&env.root().join("t/x"), &loops[2]),
    ];
    for engine in ENGINES {
        let out = traverse([
            OsStr::new("--json"),
            OsStr::new("--engine"),
            OsStr::new(engine),
            t.as_os_str(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "{engine}: {stderr}");
        let mut lines: Vec<&str> = stderr.lines().collect();
        lines.sort();
        assert_eq!(lines.len(), 3, "{engine}: {stderr}");
        for (line, at) in lines.iter().zip(&loops) {
            assert!(
                line.starts_with(&format!(
                    "traverse: {}: File system loop detected",
                    at.display()
                )),
                "{engine}: {line}"
            );
        }
        let listed = traverse([
            OsStr::new("--list"),
            OsStr::new("--engine"),
            OsStr::new(engine),
            t.as_os_str(),
        ]);
        assert_eq!(listed.status.code(), Some(1), "{engine}");
        let mut ours: Vec<String> = String::from_utf8(listed.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        ours.sort();
        assert_eq!(ours, find, "{engine}");
    }
}

/// Lines of `find PATH`, sorted.
fn find_lines(path: &Path) -> Vec<String> {
    let out = Command::new("find").arg(path).output().unwrap();
    assert!(out.status.success());
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// `-x` stops at a bind mount of the same filesystem (mount ids differ,
/// devices do not), where `du -x` and `find -xdev` go on: the mount point
/// is counted and listed, as at any mount point, and nothing below it.
#[test]
fn one_file_system_stops_at_a_bind_mount() {
    if !root_user() {
        println!("skipped: bind mounts need root");
        return;
    }
    let env = TestEnv::in_memory();
    let t = env.mkdir("t");
    env.file("t/here", 10);
    let b = env.mkdir("t/b");
    for f in 0..3 {
        env.file(&format!("elsewhere/f{f}"), 1000);
    }
    let _mount = BindMount::new(&env.root().join("elsewhere"), &b);
    for engine in ENGINES {
        let stay = totals(&t, engine, &["-x"]);
        assert_eq!((stay.files, stay.dirs), (1, 2), "{engine} -x");
        let cross = totals(&t, engine, &[]);
        assert_eq!((cross.files, cross.dirs), (4, 2), "{engine}");
        let listed = traverse([
            OsStr::new("--list"),
            OsStr::new("-x"),
            OsStr::new("--engine"),
            OsStr::new(engine),
            t.as_os_str(),
        ]);
        let text = String::from_utf8(listed.stdout).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort();
        let want: Vec<PathBuf> = vec![t.clone(), b.clone(), t.join("here")];
        let mut want: Vec<String> = want.iter().map(|p| p.display().to_string()).collect();
        want.sort();
        assert_eq!(lines, want, "{engine}");
    }
}

/// Three sparse files of 2^63-1 bytes (the largest size tmpfs allows):
/// the sum passes 2^64 and is printed exactly, never wrapped.
#[test]
fn byte_sums_past_two_to_the_64_are_exact() {
    let env = TestEnv::in_memory();
    let t = env.mkdir("sparse");
    if !sparse_max_files(&t, 3) {
        return;
    }
    let dir_size = u128::from(fs::metadata(&t).unwrap().len());
    let want = 3 * u128::from(i64::MAX as u64) + dir_size;
    assert!(want > u128::from(u64::MAX));
    for engine in ENGINES {
        let got = totals(&t, engine, &[]);
        assert_eq!((got.files, got.bytes), (3, want), "{engine}");
    }
    let human = traverse([&t]);
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(
        text.starts_with("3 files, ") && text.contains(&format!(", {want} bytes apparent, ")),
        "{text}"
    );
}

/// `traverse DIR >&-` and output to a full device: "write error" and exit
/// 1, as du and find, for totals, JSON and listings alike.
#[test]
fn a_closed_or_full_stdout_is_a_write_error() {
    let env = TestEnv::new();
    env.file("t/a", 10);
    let t = env.root().join("t");
    for redirect in [">&-", ">/dev/full"] {
        for args in [vec![], vec!["--json"], vec!["--list"], vec!["--list", "-0"]] {
            let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
            all.push(t.as_os_str());
            let out = shell(&format!("exec \"$0\" \"$@\" {redirect}"), &all);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{redirect} {args:?}: {stderr}");
            assert!(
                stderr.starts_with("traverse: write error"),
                "{redirect} {args:?}: {stderr}"
            );
        }
    }
}

/// Repeated options are accepted, as du accepts `-x -x`.
#[test]
fn repeated_options_are_accepted() {
    let env = TestEnv::new();
    env.file("t/a", 10);
    let t = env.root().join("t");
    let once = totals(&t, "auto", &["-x"]);
    assert_eq!(
        totals(&t, "auto", &["-x", "-x", "-j", "2", "-j", "3"]),
        once
    );
}

/// Without `/proc` (a fresh mount namespace with an empty tmpfs over it),
/// the engines that open directories through `/proc/self/fd` say so.
#[cfg(feature = "reference-engines")]
#[test]
fn engines_that_need_proc_name_it_when_it_is_missing() {
    if !root_user() {
        println!("skipped: needs root for a mount namespace");
        return;
    }
    let env = TestEnv::new();
    env.file("t/sub/a", 10);
    let t = env.root().join("t");
    for engine in ["std", "tokio"] {
        let out = Command::new("unshare")
            .args(["-m", "sh", "-c"])
            .arg("mount -t tmpfs none /proc && exec \"$0\" \"$@\"")
            .arg(bin())
            .args(["--engine", engine])
            .arg(&t)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(0) || stderr.contains("unshare") {
            println!("skipped: cannot hide /proc here: {stderr}");
            return;
        }
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert!(
            stderr.contains("/proc/self/fd: No such file or directory"),
            "{engine}: {stderr}"
        );
    }
}

/// 1 000 levels, with a directory on each side of the way down (listed
/// before and after it, whatever the filesystem's order): with a
/// descriptor limit too small to keep the ancestors open, each parent was
/// reopened from the root, so the opens grew with the square of the depth
/// (about 1.4 million here). A parent is now reached from the directory
/// opened last (`..`, checked), so the opens stay a small multiple of the
/// directories: each directory is opened once (twice by `std` and
/// `tokio`, whose `read_dir` opens it again through `/proc`), plus at most
/// one `..` per directory on the way back up.
#[test]
fn reopening_ancestors_with_few_descriptors_stays_linear() {
    const LEVELS: usize = 1000;
    let env = TestEnv::in_memory();
    let top = env.mkdir("deep");
    // One-letter names: 1 000 levels stay within PATH_MAX for the setup.
    let mut dir = top.clone();
    for _ in 0..LEVELS {
        fs::create_dir(dir.join("a")).unwrap();
        fs::write(dir.join("a/f"), b"x").unwrap();
        fs::create_dir(dir.join("d")).unwrap();
        fs::create_dir(dir.join("z")).unwrap();
        dir = dir.join("d");
    }
    let dirs = (3 * LEVELS + 1) as u64;
    let want = reference(&top, false, false);
    assert_eq!(want.dirs, dirs);
    let runs: [(&str, &str, u32, u64); 6] = [
        ("threads", "1", 32, 2),
        ("threads", "2", 32, 2),
        ("std", "1", 32, 3),
        ("std", "1", 256, 3),
        ("tokio", "1", 32, 3),
        ("tokio", "4", 64, 3),
    ];
    for (engine, jobs, limit, opens_per_dir) in runs.into_iter().filter(|r| ENGINES.contains(&r.0))
    {
        let args = [
            OsStr::new("--engine"),
            OsStr::new(engine),
            OsStr::new("-j"),
            OsStr::new(jobs),
            OsStr::new("--json"),
            top.as_os_str(),
        ];
        let Some(calls) = syscall_calls("openat", Some(limit), &args) else {
            println!("skipped: strace not found");
            return;
        };
        // One worker: each directory's own opens and one `..`, and a
        // margin for the process's start (libraries) and the runtime.
        // Several: a worker that takes a directory shared by another
        // starts from its own cursor or the nearest kept ancestor, which
        // depends on scheduling; still linear, with a larger factor
        // (quadratic would be about 1.4 million here).
        let per_dir = if jobs == "1" { opens_per_dir + 1 } else { 10 };
        assert!(
            calls < per_dir * dirs,
            "{engine} -j {jobs}, ulimit -n {limit}: {calls} openat calls for {dirs} directories"
        );
        let script = format!("ulimit -n {limit} && exec \"$0\" \"$@\"");
        let out = shell(&script, &args);
        assert_eq!(out.status.code(), Some(0), "{engine}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "{engine} -j {jobs}, ulimit -n {limit}");
    }
}
