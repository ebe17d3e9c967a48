//! The `uring` engine's own paths: few descriptors, a root swapped for a
//! symlink while it is walked, a large directory shared out among its
//! workers, and many directories in flight at once.

mod testenv;

use std::ffi::{CString, OsStr};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use testenv::*;

/// Runs `traverse ARGS PATH` under `ulimit -n LIMIT`.
fn with_fd_limit(limit: u32, args: &str, path: &Path) -> std::process::Output {
    let script = format!("ulimit -n {limit} && exec \"$0\" {args} \"$1\"");
    Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(bin())
        .arg(path)
        .output()
        .unwrap()
}

/// A tree of 12 levels with two subdirectories and a file at each, and a
/// directory of 5 000 entries: more directories wait than descriptors fit.
fn tree_of_waiting_parents(env: &TestEnv) -> std::path::PathBuf {
    let mut level = env.mkdir("fds");
    for depth in 0..12 {
        for side in ["a", "b"] {
            fs::create_dir(level.join(side)).unwrap();
            fs::write(level.join(side).join("f"), vec![b'x'; depth + 1]).unwrap();
        }
        level = level.join("c");
        fs::create_dir(&level).unwrap();
    }
    let wide = env.mkdir("fds/a/wide");
    for i in 0..5_000 {
        if i % 500 == 0 {
            fs::create_dir(wide.join(format!("d{i}"))).unwrap();
        } else {
            fs::write(wide.join(format!("f{i}")), b"y").unwrap();
        }
    }
    env.root().join("fds")
}

/// `ulimit -n 8`: stdin, stdout, stderr and the ring leave four
/// descriptors, enough for one directory being read and the chain that
/// reopens a parent. Every total exact, no error (the engine used to run
/// out of descriptors below the root and count 24 errors on the Linux
/// tree).
#[test]
fn eight_descriptors_give_exact_totals() {
    let env = TestEnv::new();
    let t = tree_of_waiting_parents(&env);
    let want = reference(&t, false, false);
    for args in ["--json --engine uring", "--json --engine uring -j 4"] {
        let out = with_fd_limit(8, args, &t);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args}: {stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "{args}");
    }
    let out = with_fd_limit(8, "--list --engine uring", &t);
    assert_eq!(out.status.code(), Some(0));
    let lines = out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty());
    assert_eq!(lines.count() as u64, find_count(&t, &[]));
}

/// Many directories in flight on each worker and a large directory shared
/// out in chunks, at several worker counts: the same totals as du.
#[test]
fn workers_and_chunks_give_the_totals_of_du() {
    let env = TestEnv::new();
    let t = tree_of_waiting_parents(&env);
    for i in 0..200 {
        env.file(&format!("fds/small/d{}/f{i}", i % 40), i);
    }
    let want = reference(&t, false, false);
    for jobs in ["1", "2", "3", "16"] {
        assert_eq!(totals(&t, "uring", &["-j", jobs]), want, "-j {jobs}");
    }
}

/// Swaps two names atomically (`renameat2(RENAME_EXCHANGE)`).
fn exchange(a: &Path, b: &Path) -> bool {
    let a = CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: both paths are NUL-terminated and outlive the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    ret == 0
}

/// PATH swapped with a symlink to another tree, over and over, while the
/// engine lists PATH with few descriptors (so it reopens the root): no
/// walk may list a path of the other tree. The engine used to open (and
/// reopen) the root following symlinks, and printed the other tree in
/// about one walk of ten.
#[test]
fn a_root_swapped_for_a_symlink_is_never_followed() {
    let env = TestEnv::new();
    let inside = env.mkdir("inside");
    for d in 0..20 {
        env.file(&format!("inside/d{d}/e/f"), 1);
    }
    env.file("outside/SECRET/x", 1);
    let link = env.root().join("swap");
    symlink(env.root().join("outside"), &link).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (inside, link) = (inside.clone(), link.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                swaps += u64::from(exchange(&inside, &link));
            }
            swaps
        })
    };
    let mut walks = 0;
    for _ in 0..150 {
        let out = with_fd_limit(8, "--list --engine uring", &inside);
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(
            !listed.contains("SECRET"),
            "listed the other tree:\n{listed}"
        );
        walks += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "only {swaps} swaps in {walks} walks");
}

/// A symlink given as PATH is counted by this engine too as the link
/// itself (as du counts it), never followed.
#[test]
fn a_symlink_root_is_counted_as_the_link() {
    let env = TestEnv::new();
    env.file("real/f", 10);
    let link = env.root().join("link");
    symlink(env.root().join("real"), &link).unwrap();
    let out = traverse([
        "--json".as_ref(),
        "--engine".as_ref(),
        "uring".as_ref(),
        link.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
    let len = std::fs::symlink_metadata(&link).unwrap().len();
    assert_eq!(
        (got.files, got.dirs, got.symlinks, got.errors, got.bytes),
        (0, 0, 1, 0, u128::from(len))
    );
}

/// A seccomp filter that fails the system call `nr` with `errno` when the
/// low 32 bits of its argument `arg` are `value`, and allows everything
/// else.
fn refuse(nr: libc::c_long, arg: u32, value: u32, errno: i32, cmd: &mut Command) -> &mut Command {
    let filter = [
        // The system call number.
        bpf_stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        bpf_jump_if(nr as u32, 3),
        // The argument's low 32 bits (`args[arg]`, little-endian, from
        // offset 16 of `struct seccomp_data`).
        bpf_stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 16 + 8 * arg),
        bpf_jump_if(value, 1),
        bpf_stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | errno as u32,
        ),
        bpf_stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    with_seccomp_filter(cmd, filter);
    cmd
}

/// Where the kernel has GETDENTS the engine reads every directory through
/// it: with `getdents64` refused for the engine's 1 MiB buffer (GETDENTS
/// detection reads with 64 KiB and still works), the totals are exact. On a
/// kernel without it, the same filter makes every directory read fail,
/// which shows the filter works. In the test VM (patched kernel,
/// `IO_URING_GETDENTS_REQUIRE=1`) GETDENTS must be there.
#[test]
fn with_getdents_no_directory_is_read_by_getdents64() {
    let has_getdents = io_uring_getdents::detect::cached().opcode().is_some();
    if getdents_required() {
        assert!(has_getdents, "{}", io_uring_getdents::detect::cached());
    }
    let env = TestEnv::new();
    let t = tree_of_waiting_parents(&env);
    let want = reference(&t, false, false);
    let out = refuse(
        libc::SYS_getdents64,
        2,
        1 << 20,
        libc::EPERM,
        Command::new(bin())
            .args(["--json", "--engine", "uring"])
            .arg(&t),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
    if has_getdents {
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(got, want);
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("cannot read directory"), "{stderr}");
        assert_eq!(got.dirs, 1, "only the root is counted");
    }
}

/// When a worker's own ring cannot be set up (io_uring itself works), the
/// worker stats with `statx` directly: exact totals, no message.
#[test]
fn workers_without_a_ring_stat_directly() {
    let env = TestEnv::new();
    let t = tree_of_waiting_parents(&env);
    let want = reference(&t, false, false);
    for jobs in ["1", "2"] {
        // The workers' rings have 256 entries; the engine's probe 2 and
        // GETDENTS detection 4.
        let out = refuse(
            libc::SYS_io_uring_setup,
            0,
            256,
            libc::ENOMEM,
            Command::new(bin())
                .args(["--json", "--engine", "uring", "-j", jobs])
                .arg(&t),
        )
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "-j {jobs}: {stderr}");
        assert!(stderr.is_empty(), "{stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "-j {jobs}");
    }
}

/// With no thread to spare (`RLIMIT_NPROC` of 1, as an unprivileged user),
/// no walker thread starts and io-wq cannot start a worker, so the kernel
/// cancels every STATX (ECANCELED): the walk runs on the calling thread and
/// stats what was cancelled itself. Exact totals, exit 0 (it used to count
/// every entry below the root as an error). Limits of 2 and 3 let some
/// walkers start and not others. Needs root to become `nobody`.
#[test]
fn no_thread_to_spare_gives_exact_totals() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: cannot run as nobody with a process limit; skipped");
        return;
    }
    let env = TestEnv::new();
    let t = tree_of_waiting_parents(&env);
    env.open_to_all();
    let want = reference(&t, false, false);
    for limit in [1, 2, 3] {
        let mut cmd = Command::new(bin());
        cmd.args(["--json", "--engine", "uring", "-j", "4"])
            .arg(&t)
            .uid(65534)
            .gid(65534);
        // SAFETY: the closure runs in the child between fork and exec and
        // only calls setrlimit with a struct on its stack.
        unsafe {
            cmd.pre_exec(move || {
                let max = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_NPROC, &max) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "limit {limit}: {stderr}");
        let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
        assert_eq!(got, want, "limit {limit}");
    }
}

/// A directory's stats go to the ring as chains of hard-linked requests:
/// a stat that fails inside a chain (testfs's Vanish fault: the listing
/// names the file, its lookup fails with ENOENT) must not cancel the ones
/// linked after it (6.12 and 6.18 do not break even a soft link on a
/// failed STATX; hard links make that hold on any kernel). The vanished
/// names are the only errors, the totals are du's through the mount, and
/// no direct `statx` stands in for a cancelled request: the run makes as
/// many as one of the same tree without faults (the root and the
/// subdirectory through their descriptors, the rest the runtime's own).
#[test]
fn a_failed_stat_does_not_cancel_the_rest_of_its_chain() {
    let env = TestEnv::new();
    let src = env.mkdir("src");
    let vanish = [3, 17, 30];
    for i in 0..40 {
        env.file(&format!("src/d/f{i:02}"), 10 * i + 1);
    }
    let mut options = testfs::Options::new();
    for i in vanish {
        options = options.fault(format!("d/f{i:02}"), testfs::Fault::Vanish);
    }
    let Some(mount) = mount_testfs(&env, &src, &options) else {
        return;
    };
    let mnt = mount.mountpoint();

    let du = Command::new("du").arg("-sb").arg(mnt).output().unwrap();
    assert_eq!(du.status.code(), Some(1), "du meets the faults too");
    let du_bytes: u128 = String::from_utf8_lossy(&du.stdout)
        .split_whitespace()
        .next()
        .and_then(|b| b.parse().ok())
        .expect("du -sb prints a byte count");

    let args = [
        OsStr::new("--json"),
        OsStr::new("--engine"),
        OsStr::new("uring"),
        mnt.as_os_str(),
    ];
    let Some((statx_calls, out)) = syscall_calls_of_any_run("statx", None, &args) else {
        println!("skipped: no strace");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let mut errors: Vec<&str> = stderr.lines().collect();
    errors.sort();
    let want_errors: Vec<String> = vanish
        .iter()
        .map(|i| {
            format!(
                "traverse: {}: cannot stat: No such file or directory (os error 2)",
                mnt.join(format!("d/f{i:02}")).display()
            )
        })
        .collect();
    assert_eq!(errors, want_errors);
    let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
    assert_eq!(got.files, 40 - vanish.len() as u64);
    assert_eq!(got.dirs, 2);
    assert_eq!(got.errors, vanish.len() as u64);
    assert_eq!(got.bytes, du_bytes);
    let whole = [
        OsStr::new("--json"),
        OsStr::new("--engine"),
        OsStr::new("uring"),
        src.as_os_str(),
    ];
    let baseline = syscall_calls("statx", None, &whole).expect("strace ran before");
    assert_eq!(statx_calls, baseline, "direct statx calls");
}

/// `traverse --json --engine uring ARGS PATH` with readdirplus turned off
/// (`IO_URING_GETDENTS_PLUS=off`: a STATX request per entry) or left to
/// detection.
fn uring_totals(path: &Path, plus: bool, args: &[&str]) -> Totals {
    let mut cmd = Command::new(bin());
    cmd.args(["--json", "--engine", "uring"])
        .args(args)
        .arg(path);
    if !plus {
        cmd.env("IO_URING_GETDENTS_PLUS", "off");
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "plus {plus}: {stderr}");
    parse_json(String::from_utf8(out.stdout).unwrap().trim_end()).1
}

/// With readdirplus (each entry's statx comes with the GETDENTS read, no
/// STATX request) and without it, the totals are du's: hard links counted
/// once or each time, symlinks, FIFOs, empty files, a large directory
/// shared out in chunks. In the test VM (`IO_URING_GETDENTS_REQUIRE=1`)
/// readdirplus must be there; elsewhere both runs take the same path.
#[test]
fn readdirplus_and_statx_requests_give_the_totals_of_du() {
    let plus = io_uring_getdents::detect::plus_cached();
    if getdents_required() {
        assert!(plus.opcode().is_some(), "{plus}");
    }
    let env = TestEnv::new();
    let t = tree_of_waiting_parents(&env);
    let linked = env.file("fds/linked/a", 5000);
    for i in 0..3 {
        fs::hard_link(&linked, t.join(format!("linked/b{i}"))).unwrap();
    }
    symlink("linked/a", t.join("to-a")).unwrap();
    let fifo = CString::new(t.join("fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    env.file("fds/empty", 0);
    for (args, count_links) in [(&[][..], false), (&["--count-links"][..], true)] {
        let want = reference(&t, count_links, false);
        for jobs in ["1", "3"] {
            let args: Vec<&str> = args.iter().copied().chain(["-j", jobs]).collect();
            assert_eq!(uring_totals(&t, true, &args), want, "readdirplus {args:?}");
            assert_eq!(uring_totals(&t, false, &args), want, "STATX {args:?}");
        }
    }
}

/// Counts the threads that walk: each builds its visitor on itself.
#[derive(Default)]
struct SlowLister {
    threads: std::sync::Mutex<std::collections::HashSet<std::thread::ThreadId>>,
}

/// Sleeps at each subdirectory of a subdirectory it lists: a walker slow
/// to handle what it reaped, as a preempted one or a slow visitor makes it.
struct SlowVisitor;

impl traverse::Visitor for SlowVisitor {
    fn visit_entry(&mut self, entry: &traverse::Entry<'_>) {
        if entry.depth() == 2 && entry.file_type() == traverse::FileType::Directory {
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }

    fn error(&mut self, err: traverse::Error) {
        panic!("{err}");
    }
}

impl traverse::VisitorBuilder for SlowLister {
    fn build(&self) -> Box<dyn traverse::Visitor + '_> {
        let me = std::thread::current().id();
        self.threads.lock().unwrap().insert(me);
        Box::new(SlowVisitor)
    }
}

/// A warm tree walked by a walker slow between reaping one completion and
/// the next (3 ms per listed directory, several reads reaped at once):
/// with GETDENTS every read completes inline, so none may pass for a read
/// that waited for the disk, which would start walkers up to the cold
/// limit (4 per CPU) where the warm start is one per CPU (the VM's
/// two-CPU warm walks cost 10-20 % more that way). Without GETDENTS (the
/// host) the walker times only its own `getdents64` calls, which the
/// sleeps are not part of: the test guards the GETDENTS path, in the VM.
#[test]
fn a_slow_walker_on_a_warm_tree_starts_no_cold_walkers() {
    let env = TestEnv::new();
    let root = env.mkdir("warm");
    for a in 0..40 {
        for b in 0..2 {
            let dir = env.mkdir(&format!("warm/d{a}/e{b}"));
            fs::write(dir.join("f"), b"x").unwrap();
        }
        env.file(&format!("warm/d{a}/g"), 1);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let walk = traverse::WalkBuilder::new()
        .engine(traverse::Engine::Uring)
        .list(true)
        .build();
    // Once to warm what the creation left cold, then the walk that counts.
    walk.totals(&root);
    let lister = SlowLister::default();
    let summary = walk.run(&root, &lister);
    assert_eq!(summary.totals.dirs, 1 + 40 + 80);
    assert_eq!(summary.totals.errors, 0);
    let threads = lister.threads.lock().unwrap().len();
    assert!(
        threads <= cores,
        "{threads} walkers on a warm tree, {cores} CPUs"
    );
}

/// Where a test may drop the dentry and inode caches, as the test VM's
/// io-uring suites do, and the lock they take turns on (the tests there
/// that need warm dentries hold it too).
const DCACHE_LOCK: &str = "/tmp/getdents-dcache.lock";

/// `sync`, then the dentries and inodes dropped (`drop_caches`), under an
/// exclusive `flock` on [`DCACHE_LOCK`] that the caller holds until its
/// cold walk is over.
fn cold_turn() -> fs::File {
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(DCACHE_LOCK)
        .unwrap();
    // SAFETY: flock on a descriptor `lock` keeps open; no memory is passed.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) },
        0
    );
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
    lock
}

/// A walk that finds the cache cold reads its directories three ways:
/// from the dcache only while the names are there, then with lookups that
/// wait for small directories without subdirectories, with STATX for the
/// others (a parent, a directory of 400 names). Its totals are du's: hard
/// links across directories, symlinks, a FIFO, empty files. The caches
/// are dropped before each walk where `TEST_DISK_DIR` names a disk
/// filesystem for the tests (ext4, in the test VM, where the test runs as
/// root); elsewhere the walks are warm and compared all the same.
#[test]
fn a_walk_that_finds_the_cache_cold_gives_the_totals_of_du() {
    let disk = std::env::var_os("TEST_DISK_DIR").map(std::path::PathBuf::from);
    let dir = match &disk {
        Some(base) => tempfile::tempdir_in(base).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let t = dir.path();
    for a in 0..3 {
        for b in 0..10 {
            let leaf = t.join(format!("p{a}/l{b}"));
            fs::create_dir_all(&leaf).unwrap();
            for f in 0..6 {
                fs::write(
                    leaf.join(format!("f{f}")),
                    vec![b'x'; a * 1000 + b * 10 + f],
                )
                .unwrap();
            }
            symlink("f0", leaf.join("to-f0")).unwrap();
            if b > 0 {
                let other = t.join(format!("p{a}/l{}/f1", b - 1));
                fs::hard_link(other, leaf.join("linked")).unwrap();
            }
        }
    }
    let big = t.join("p0/big");
    fs::create_dir(&big).unwrap();
    for f in 0..400 {
        fs::write(big.join(format!("a-longer-file-name-{f:04}")), b"").unwrap();
    }
    let fifo = CString::new(t.join("p1/l0/fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let want = reference(t, false, false);
    for jobs in ["1", "4"] {
        let _turn = disk.is_some().then(cold_turn);
        assert_eq!(uring_totals(t, true, &["-j", jobs]), want, "-j {jobs}");
    }
}
