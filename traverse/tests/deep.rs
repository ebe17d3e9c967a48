//! Trees deep enough to crash or stall a walk: a chain of tens of
//! thousands of directories, exported (`--export`), ranked (`--top`) and
//! listed (`--list`) by every engine, against du and find. Each run is
//! bounded in time only to stop a hang: the bounds are tens of times what
//! a walk takes.

mod testenv;

use std::ffi::CString;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testenv::*;

/// Levels of the deep chain: 50 000, or `TEST_DEEP_LEVELS` (the test VM,
/// which emulates its CPU, sets it lower).
fn levels() -> usize {
    match std::env::var("TEST_DEEP_LEVELS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("TEST_DEEP_LEVELS={v:?}: {e}")),
        Err(_) => 50_000,
    }
}

/// Levels for `engine`: the reference engines `std` and `tokio` check
/// every directory against all its ancestors for a loop (their stat does
/// not tell a mount root), which is quadratic in depth already for the
/// plain walk (50 000 levels: 23 s and 127 s in a release build), so they
/// get a fifth and a twentieth of the chain (`tokio`, every call a task on
/// its blocking pool, took over 60 s for 1 000 levels in the test VM).
fn levels_for(engine: &str) -> usize {
    match engine {
        "std" => levels() / 5,
        "tokio" => levels() / 20,
        _ => levels(),
    }
}

/// A chain of directories `d/d/d/...` below `top`, `levels` deep, made
/// relative to each level (no long path is ever passed to the kernel).
/// Removed the same way when dropped: a recursive removal could overflow
/// a stack.
struct Chain {
    top: PathBuf,
}

impl Chain {
    fn new(top: PathBuf, levels: usize) -> Chain {
        fs::create_dir(&top).unwrap();
        let mut dir = fs::File::open(&top).unwrap();
        for _ in 0..levels {
            // SAFETY: a valid descriptor and a NUL-terminated name.
            let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), c"d".as_ptr(), 0o755) };
            assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            // SAFETY: as above; the new descriptor is owned by the File below.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    c"d".as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            assert!(fd >= 0, "{}", std::io::Error::last_os_error());
            // SAFETY: `fd` was just opened and is owned by nobody else.
            dir = unsafe { fs::File::from_raw_fd(fd) };
        }
        Chain { top }
    }
}

impl Drop for Chain {
    /// Pulls the chain up one level at a time (`top/d/d` becomes `top/d`
    /// once the old `top/d` is gone), then removes the top.
    fn drop(&mut self) {
        let Ok(top) = fs::File::open(&self.top) else {
            return;
        };
        let at = |name: &std::ffi::CStr| CString::from(name);
        let (d, dd, tmp) = (at(c"d"), at(c"d/d"), at(c"tmp"));
        loop {
            let fd = top.as_raw_fd();
            // SAFETY: valid descriptor and NUL-terminated names throughout.
            unsafe {
                if libc::renameat(fd, dd.as_ptr(), fd, tmp.as_ptr()) != 0 {
                    libc::unlinkat(fd, d.as_ptr(), libc::AT_REMOVEDIR);
                    break;
                }
                libc::unlinkat(fd, d.as_ptr(), libc::AT_REMOVEDIR);
                libc::renameat(fd, tmp.as_ptr(), fd, d.as_ptr());
            }
        }
        let _ = fs::remove_dir(&self.top);
    }
}

/// Waits for `child` at most `limit`: its exit status, or `None` (the
/// child killed) when it ran over.
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run's output, or a failure naming the command when it ran over
/// `limit` (a hang, or time growing with the square of the depth).
fn output_bounded(cmd: &mut Command, limit: Duration) -> (i32, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = wait_bounded(&mut child, limit);
    let (out, err) = (reader.join().unwrap(), err_reader.join().unwrap());
    let status = status.unwrap_or_else(|| panic!("{cmd:?} ran over {limit:?}: {err}"));
    (status.code().unwrap_or(-1), out, err)
}

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_deep_export_is_written_whole_by_every_engine() {
    let env = TestEnv::in_memory();
    for engine in ENGINES {
        let n = levels_for(engine);
        let chain = Chain::new(env.root().join(format!("chain-{engine}")), n);
        let file = env.root().join(format!("export-{engine}.json"));
        let (code, out, err) = output_bounded(
            Command::new(bin())
                .args(["--engine", engine, "--export"])
                .arg(&file)
                .arg(&chain.top),
            LIMIT,
        );
        assert_eq!(code, 0, "{engine}: {err}");
        assert!(out.contains(&format!("{} dirs", n + 1)), "{engine}: {out}");
        let json = fs::read(&file).unwrap();
        assert!(json.ends_with(b"]\n"), "{engine}: the file ends");
        let count = |b: u8| json.iter().filter(|&&c| c == b).count();
        assert_eq!(count(b'['), count(b']'), "{engine}: brackets balance");
        let names = json.windows(10).filter(|w| w == b"\"name\":\"d\"").count();
        assert_eq!(names, n, "{engine}: every level is in it");
        drop(chain);
    }
    // No temporary file is left beside the exports.
    let left: Vec<_> = fs::read_dir(env.root())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().ends_with(".part"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The export of a chain of `n` levels.
fn export_chain(env: &TestEnv, n: usize) -> (Chain, PathBuf) {
    let chain = Chain::new(env.root().join("chain"), n);
    let file = env.root().join("export.json");
    let (code, _, err) = output_bounded(
        Command::new(bin())
            .arg("--export")
            .arg(&file)
            .arg(&chain.top),
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    (chain, file)
}

#[test]
fn a_deep_export_loads_in_ncdu() {
    if !installed("ncdu") || !installed("tmux") {
        return;
    }
    let env = TestEnv::in_memory();
    let n = levels();
    let (chain, file) = export_chain(&env, n);
    let bytes = du(&chain.top, &["-sb"]);
    let Some(pane) = Pane::start(
        "deep",
        (160, 40),
        &["ncdu".as_ref(), "-f".as_ref(), file.as_os_str()],
    ) else {
        return;
    };
    // ncdu itself takes time in proportion to the square of the depth to
    // load it (about 15 s for 50 000 levels).
    let screen = pane.wait_within("ncdu's totals", Duration::from_secs(180), |s| {
        s.contains("Total disk usage")
    });
    drop(pane);
    assert!(
        screen.contains(&format!("Items: {n}")),
        "ncdu shows every level: {screen}"
    );
    let mib = format!("{:.1} MiB", bytes as f64 / 1_048_576.0);
    assert!(screen.contains(&mib), "{mib} (du -sb) in {screen}");
}

/// gdu reads the export with Go's encoding/json, which refuses nesting
/// deeper than 10 000 ("exceeded max depth"; the export nests one array
/// per level): a chain of 9 000 levels loads, every level counted.
#[test]
fn a_deep_export_loads_in_gdu_up_to_its_nesting_limit() {
    if !installed("gdu") {
        return;
    }
    let env = TestEnv::in_memory();
    let n = levels().min(9_000);
    let (_chain, file) = export_chain(&env, n);
    let (code, out, err) = output_bounded(
        Command::new("gdu")
            .args(["-n", "-p", "-s", "--no-prefix", "-a", "-f"])
            .arg(&file),
        LIMIT,
    );
    assert_eq!(code, 0, "gdu: {err}");
    // gdu gives every directory it imports 4 096 bytes, whatever the
    // export says (a chain of 3 exported with 220 bytes shows 16 384).
    let total: u64 = out.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(total, 4096 * (n as u64 + 1), "{out}");
}

#[test]
fn top_of_a_deep_chain_takes_about_the_time_of_the_walk() {
    let env = TestEnv::in_memory();
    for engine in ENGINES {
        let chain = Chain::new(
            env.root().join(format!("chain-{engine}")),
            levels_for(engine),
        );
        let top = &chain.top;
        // The three largest are the three highest levels, as `du -sb` sizes them.
        let want: String = [top.clone(), top.join("d"), top.join("d/d")]
            .iter()
            .map(|p| format!("{}\t{}\n", du(p, &["-sb"]), p.display()))
            .collect();
        // Apparent sizes when asked; disk usage, the default, otherwise.
        for extra in [&["--apparent-size"][..], &[][..]] {
            let (code, out, err) = output_bounded(
                Command::new(bin())
                    .args(["--engine", engine, "--top", "3"])
                    .args(extra)
                    .arg(top),
                LIMIT,
            );
            assert_eq!(code, 0, "{engine}: {err}");
            if !extra.is_empty() {
                assert_eq!(out, want, "{engine}");
            } else {
                // Disk usage: ties (tmpfs directories use no blocks) are
                // broken by path, the shorter first.
                let paths: Vec<&str> = out.lines().map(|l| l.split('\t').nth(1).unwrap()).collect();
                let want: Vec<String> = want
                    .lines()
                    .map(|l| l.split('\t').nth(1).unwrap().to_owned())
                    .collect();
                assert_eq!(out.lines().count(), 3, "{engine}: {out}");
                if du(top, &["-sB1"]) == 0 {
                    assert_eq!(paths, want, "{engine}");
                }
            }
        }
    }
}

/// `--list` of a deep chain gives find's lines in find's order (one
/// directory below the other), streamed: 50 000 levels are 2.5 GB.
#[test]
fn list_of_a_deep_chain_matches_find() {
    let env = TestEnv::in_memory();
    for engine in ENGINES {
        let chain = Chain::new(
            env.root().join(format!("chain-{engine}")),
            levels_for(engine),
        );
        let mut ours = Command::new(bin())
            .args(["--engine", engine, "--list"])
            .arg(&chain.top)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut find = Command::new("find")
            .arg(&chain.top)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut a = BufReader::new(ours.stdout.take().unwrap());
        let mut b = BufReader::new(find.stdout.take().unwrap());
        let compare = std::thread::spawn(move || {
            let (mut la, mut lb) = (Vec::new(), Vec::new());
            let mut lines = 0usize;
            loop {
                la.clear();
                lb.clear();
                let (na, nb) = (
                    a.read_until(b'\n', &mut la).unwrap(),
                    b.read_until(b'\n', &mut lb).unwrap(),
                );
                if la != lb {
                    return Err(format!(
                        "line {lines} differs: {} vs {} bytes",
                        la.len(),
                        lb.len()
                    ));
                }
                if na == 0 && nb == 0 {
                    return Ok(lines);
                }
                lines += 1;
            }
        });
        let status = wait_bounded(&mut ours, LIMIT);
        let _ = wait_bounded(&mut find, LIMIT);
        let lines = compare.join().unwrap();
        assert!(status.is_some(), "{engine}: --list ran over {LIMIT:?}");
        assert!(status.unwrap().success(), "{engine}");
        assert_eq!(lines, Ok(levels_for(engine) + 1), "{engine}");
    }
}
