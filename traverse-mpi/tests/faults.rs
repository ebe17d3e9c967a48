//! Directories that vanish or fail while the ranks walk them (testfs, a
//! FUSE passthrough that makes chosen paths fail), against traverse; and a
//! rank killed while it walks.

mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn vanishing_and_failing_directories_are_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    tree(&src.join("x"), 80, 400);
    for d in ["gone", "bad", "unreadable", "x/gone", "y/z/bad"] {
        file(&src.join(d).join("f"), 100);
        file(&src.join(d).join("sub/g"), 200);
    }
    // Listed by their parents, then gone (ENOENT) or failing (EIO).
    let args = [
        "--vanish",
        "gone",
        "--vanish",
        "x/gone",
        "--eio",
        "bad",
        "--eio",
        "y/z/bad",
        "--eio-readdir",
        "unreadable",
    ];
    let mnt = dir.path().join("mnt");
    let Some(_fs) = TestFs::mount(&src, &mnt, &args) else {
        return;
    };
    let m = mnt.to_str().unwrap();
    same_as_traverse(&[m], false);
    same_as_traverse(&["-d", "1", "--json", m], false);
    same_as_traverse(&["--top", "4", m], false);
}

/// A rank killed in the middle of the walk ends the whole run, whichever
/// rank it is (rank 0, which prints, as well as the others): a non-zero
/// status, a message saying which rank died, no total on stdout, and no
/// rank left running. The walk cannot end by itself (a directory whose
/// listing never ends, on a slow filesystem), so the kill always comes
/// mid-walk.
#[test]
fn a_rank_killed_mid_walk_fails_the_run_and_prints_no_total() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    tree(&src.join("x"), 40, 200);
    for f in ["a", "b", "c"] {
        file(&src.join("endless").join(f), 10);
    }
    let mnt = dir.path().join("mnt");
    let args = ["--endless", "endless", "--delay-us", "1000"];
    let Some(_fs) = TestFs::mount(&src, &mnt, &args) else {
        return;
    };
    for btl in TRANSPORTS {
        for victim in [0, 1, 2] {
            let mut cmd = mpi(3, btl, &[mnt.to_str().unwrap()]);
            let child = cmd
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("mpirun starts");
            let started = Instant::now();
            let ranks = loop {
                let pids: Vec<_> = (0..3).filter_map(|r| rank_pid(child.id(), r)).collect();
                if pids.len() == 3 {
                    break pids;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "the 3 ranks never started"
                );
                std::thread::sleep(Duration::from_millis(20));
            };
            // Past MPI's start-up, into the walk.
            std::thread::sleep(Duration::from_millis(1500));
            let pid = ranks[victim as usize];
            // SAFETY: kill has no memory preconditions; pid is a rank of
            // the job this test started.
            assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
            let what = format!("rank {victim} of 3 killed over {btl}");
            let out = wait_at_most(child, &ranks, Duration::from_secs(60), &what);
            remove_session(&cmd);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{what}: {stderr}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{what}: {stderr}");
            assert!(
                stderr.contains(&format!("rank {victim}")) && stderr.contains("signal 9"),
                "{what}: {stderr}"
            );
            let left: Vec<_> = ranks.iter().filter(|&&pid| running(pid)).collect();
            assert!(left.is_empty(), "{what}: ranks still running: {left:?}");
        }
    }
}

/// Whether the traverse-mpi process `pid` still runs (a zombie, dead but
/// not yet waited for, does not count; nor does another program given the
/// same pid since).
fn running(pid: u32) -> bool {
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_traverse-mpi")).ok();
    let proc = std::path::Path::new("/proc").join(pid.to_string());
    std::fs::read_link(proc.join("exe")).ok() == exe
        && std::fs::read_to_string(proc.join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.starts_with(" Z"))
        })
}

/// `child`'s output once it exits; if it has not exited within `limit`,
/// it and the `ranks` are killed and the test fails.
fn wait_at_most(
    mut child: std::process::Child,
    ranks: &[u32],
    limit: Duration,
    what: &str,
) -> std::process::Output {
    let started = Instant::now();
    while child
        .try_wait()
        .expect("mpirun can be waited for")
        .is_none()
    {
        if started.elapsed() > limit {
            for &pid in ranks.iter().filter(|&&pid| running(pid)) {
                // SAFETY: as above; pid is still one of this job's ranks.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = child.kill();
            let out = child.wait_with_output().expect("mpirun's output");
            panic!(
                "{what}: mpirun still ran {limit:?} later: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("mpirun's output")
}

/// A filesystem mounted below PATH: with -x, its mount point is an entry
/// without size and is not read, as traverse counts it; without -x, it is
/// walked like the rest.
#[test]
fn a_mount_point_below_path_is_counted_as_traverse_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    tree(&root, 30, 120);
    let src = dir.path().join("src");
    tree(&src, 10, 40);
    let mnt = root.join("d1/mnt");
    let Some(_fs) = TestFs::mount(&src, &mnt, &[]) else {
        return;
    };
    let r = root.to_str().unwrap();
    for args in [
        vec!["-x", r],
        vec!["-x", "--json", r],
        vec!["-x", "--inodes", r],
        vec!["-x", "-d", "1", "--json", r],
        vec!["--json", r],
        vec!["-d", "2", r],
    ] {
        same_as_traverse(&args, false);
    }
}

/// A bind mount of the same filesystem below PATH: with -x, left out as
/// traverse leaves it out (same device, another mount id).
#[test]
fn a_bind_mount_below_path_is_left_out_with_x() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    tree(&root, 30, 120);
    let src = dir.path().join("src");
    tree(&src, 10, 40);
    let Some(_bind) = Bind::mount(&src, &root.join("d1/bind")) else {
        return;
    };
    let r = root.to_str().unwrap();
    for args in [vec!["-x", r], vec!["-x", "--json", r], vec!["--json", r]] {
        same_as_traverse(&args, false);
    }
}

/// `mount --bind`, undone when dropped.
struct Bind(std::path::PathBuf);

impl Bind {
    /// `None` (with the reason printed) where this process cannot mount.
    fn mount(src: &std::path::Path, at: &std::path::Path) -> Option<Bind> {
        std::fs::create_dir_all(at).unwrap();
        let out = std::process::Command::new("mount")
            .arg("--bind")
            .arg(src)
            .arg(at)
            .output()
            .expect("mount runs");
        if !out.status.success() {
            eprintln!(
                "skipped: cannot bind-mount here ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Bind(at.to_owned()))
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}
