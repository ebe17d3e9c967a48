//! The walk on a busy machine: as many workers as the CPUs the process
//! may use (its affinity, as `taskset` sets it) on a warm tree, and no
//! more when the workers are slowed down by the CPU rather than blocked
//! by the disk (a preempted worker is slow without waiting for anything);
//! and `--interactive` with nothing to do takes no CPU (no thread wakes
//! at a fixed rate).

mod testenv;

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use testenv::*;
use traverse::{Engine, Entry, Error, FileType, Visitor, VisitorBuilder, WalkBuilder};

/// Counts the threads that walk: each builds its visitor on itself.
#[derive(Default)]
struct BusyLister {
    threads: Mutex<HashSet<ThreadId>>,
}

/// Keeps the CPU busy for 3 ms at each subdirectory of a subdirectory it
/// lists, without blocking: a worker slowed down as a preempted one is.
struct BusyVisitor;

impl Visitor for BusyVisitor {
    fn visit_entry(&mut self, entry: &Entry<'_>) {
        if entry.depth() == 2 && entry.file_type() == FileType::Directory {
            let until = Instant::now() + Duration::from_millis(3);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
    }

    fn error(&mut self, err: Error) {
        panic!("{err}");
    }
}

impl VisitorBuilder for BusyLister {
    fn build(&self) -> Box<dyn Visitor + '_> {
        let me = std::thread::current().id();
        self.threads.lock().unwrap().insert(me);
        Box::new(BusyVisitor)
    }
}

/// 40 directories of two subdirectories and a file each.
fn warm_tree(env: &TestEnv) -> std::path::PathBuf {
    let root = env.mkdir("warm");
    for a in 0..40 {
        for b in 0..2 {
            let dir = env.mkdir(&format!("warm/d{a}/e{b}"));
            fs::write(dir.join("f"), b"x").unwrap();
        }
        env.file(&format!("warm/d{a}/g"), 1);
    }
    root
}

/// A warm tree whose directories are slow to list because the worker is
/// busy (as when other processes take the CPUs): the threads engine
/// keeps the one worker per CPU it starts with. Its cold-cache rule adds
/// workers (up to 16 per CPU) when a unit of work is slow *and* its
/// thread blocked; the thread blocking for the start of another worker,
/// or in an earlier unit, made every slow unit look like one waiting for
/// the disk, and a loaded machine got 16 threads per CPU on a warm tree.
/// A unit can still block for real on a loaded machine (memory reclaim, a
/// page of the test binary read from disk in the VM), which the rule
/// rightly counts: one run of three may grow, every run did before.
#[test]
fn a_busy_worker_on_a_warm_tree_starts_no_cold_workers() {
    let env = TestEnv::new();
    let root = warm_tree(&env);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let walk = WalkBuilder::new()
        .engine(Engine::Threads)
        .list(true)
        .build();
    walk.totals(&root);
    let mut workers = Vec::new();
    for _ in 0..3 {
        let lister = BusyLister::default();
        let summary = walk.run(&root, &lister);
        assert_eq!(summary.totals.dirs, 1 + 40 + 80);
        assert_eq!(summary.totals.errors, 0);
        workers.push(lister.threads.lock().unwrap().len());
    }
    at_most_one_run_grew(&workers, cores);
}

/// The workers of each run on a warm tree: one per CPU, but for one run
/// in which a unit may have blocked for real.
fn at_most_one_run_grew(workers: &[usize], cores: usize) {
    let grown = workers.iter().filter(|&&n| n > cores).count();
    assert!(
        grown <= 1,
        "workers per run on a warm tree: {workers:?}, {cores} CPUs"
    );
}

/// The closure of `run_with` is called under a lock (one call at a
/// time): a worker waiting there for another one blocks, which is not
/// the disk either. A closure busy 1 ms at each directory, on a warm
/// tree: the workers stay one per CPU (but for one run, as above).
#[test]
fn workers_waiting_for_the_closure_start_no_cold_workers() {
    let env = TestEnv::new();
    let root = warm_tree(&env);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let walk = WalkBuilder::new()
        .engine(Engine::Threads)
        .list(true)
        .build();
    walk.totals(&root);
    let mut workers = Vec::new();
    for _ in 0..3 {
        let mut threads = HashSet::new();
        let summary = walk.run_with(&root, |event| {
            threads.insert(std::thread::current().id());
            if let traverse::Event::Entry(e) = event {
                if e.file_type() == FileType::Directory {
                    let until = Instant::now() + Duration::from_millis(1);
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                }
            }
        });
        assert_eq!(summary.totals.dirs, 1 + 40 + 80);
        workers.push(threads.len());
    }
    at_most_one_run_grew(&workers, cores);
}

/// Counts the threads that walk, listing nothing.
#[derive(Default)]
struct Walkers {
    threads: Mutex<HashSet<ThreadId>>,
}

impl VisitorBuilder for Walkers {
    fn build(&self) -> Box<dyn Visitor + '_> {
        let me = std::thread::current().id();
        self.threads.lock().unwrap().insert(me);
        Box::new(traverse::Ignore)
    }
}

/// The cold-cache rule still holds: where every directory waits for its
/// filesystem (FUSE, 1 ms a request, as a disk), the threads engine
/// starts more workers than CPUs.
#[test]
fn a_worker_waiting_for_its_filesystem_starts_more_workers() {
    let env = TestEnv::new();
    let src = warm_tree(&env);
    let options = testfs::Options::new().delay(Duration::from_millis(1));
    let Some(mount) = mount_testfs(&env, &src, &options) else {
        return;
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let walk = WalkBuilder::new().engine(Engine::Threads).build();
    let walkers = Walkers::default();
    let summary = walk.run(mount.mountpoint(), &walkers);
    assert_eq!(summary.totals.dirs, 1 + 40 + 80);
    let threads = walkers.threads.lock().unwrap().len();
    assert!(
        threads > cores,
        "{threads} workers on a slow filesystem, {cores} CPUs"
    );
}

/// The threads the program starts while walking `path` under `taskset
/// -c CPUS`, as strace counts them (stopping the program only at those
/// calls), or `None` where strace or taskset is missing.
fn threads_started(env: &TestEnv, cpus: &str, path: &Path) -> Option<usize> {
    if !installed("strace") || !installed("taskset") {
        println!("skipped: strace and taskset are needed");
        return None;
    }
    let report = env.root().join(format!("strace-{cpus}.txt"));
    let out = Command::new("taskset")
        .args(["-c", cpus, "strace", "-f", "--seccomp-bpf"])
        .args(["-e", "trace=clone,clone3", "-o"])
        .arg(&report)
        .arg(bin())
        .args(["--engine", "threads"])
        .arg(path)
        .output()
        .expect("taskset");
    assert!(out.status.success(), "{out:?}");
    let trace = fs::read_to_string(&report).unwrap();
    Some(
        trace
            .lines()
            .filter(|l| l.contains(" clone(") || l.contains(" clone3("))
            .count(),
    )
}

/// Under `taskset -c 0` the walk uses the one CPU it may run on: no
/// thread besides the calling one on a warm tree, where two CPUs start
/// one more as soon as there is work to share (std's
/// `available_parallelism` reads the affinity mask, and the cgroup's CPU
/// quota). Checked only where the machine has two CPUs or more.
#[test]
fn the_walk_starts_one_worker_per_cpu_of_its_affinity() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        println!("skipped: one CPU only");
        return;
    }
    let env = TestEnv::new();
    let root = warm_tree(&env);
    let wide = env.mkdir("wide");
    for i in 0..400 {
        env.file(&format!("wide/d{i}/f"), 1);
    }
    walk_once(&root);
    walk_once(&wide);
    let Some(one) = threads_started(&env, "0", &wide) else {
        return;
    };
    assert_eq!(one, 0, "threads started on one CPU");
    let Some(two) = threads_started(&env, "0,1", &wide) else {
        return;
    };
    assert!(two >= 1, "no thread started on two CPUs");
}

/// Warms the cache for `path`.
fn walk_once(path: &Path) {
    let out = traverse([path]);
    assert!(out.status.success(), "{out:?}");
}

/// The process whose command line is `traverse -i PATH`.
fn browser_pid(path: &Path) -> Option<u32> {
    let want = path.as_os_str().as_encoded_bytes();
    fs::read_dir("/proc").ok()?.find_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        (args.len() >= 3 && args[args.len() - 3] == b"-i" && args[args.len() - 2] == want)
            .then_some(pid)
    })
}

/// The context switches of all the threads of `pid` so far (each one a
/// time a thread was woken or preempted).
fn switches(pid: u32) -> u64 {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .filter_map(|t| fs::read_to_string(t.ok()?.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .map(|l| l.split_whitespace().last().unwrap().parse::<u64>().unwrap())
                .collect::<Vec<_>>()
        })
        .sum()
}

/// The browser with nothing to do (the scan over, no key) sleeps: its
/// threads are woken a few times in 2 s, not at a fixed rate (the key
/// reader woke every 20 ms, 100 times in 2 s, to see whether a shell
/// (`b`) wanted the terminal). A key still acts at once.
#[test]
fn an_idle_browser_sleeps() {
    let env = TestEnv::new();
    let root = warm_tree(&env);
    let script = format!(
        "{} -i {}; echo EXIT=$?; sleep 60",
        bin().display(),
        root.display()
    );
    let Some(pane) = Pane::start("idle", (100, 20), &[script.as_ref()]) else {
        return;
    };
    pane.wait("the scan's end", |s| s.contains("scanned in"));
    let pid = browser_pid(&root).expect("the browser's process");
    // The last frame drawn.
    std::thread::sleep(Duration::from_millis(300));
    let before = switches(pid);
    std::thread::sleep(Duration::from_secs(2));
    let woken = switches(pid) - before;
    assert!(woken < 10, "woken {woken} times in 2 s");
    pane.keys(&["n"]);
    pane.wait("sorted by name", |s| s.contains("(sort: name)"));
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}
