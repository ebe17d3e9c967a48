//! Per-directory output (`-d N`, `--top N`, `-h`, `--exclude`,
//! `--export`) against du, ncdu and gdu, with every engine.

mod testenv;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};
use std::thread::sleep;
use std::time::{Duration, Instant};

use testenv::*;

/// Runs a program, its exit status and output as text.
fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let out: Output = cmd.output().expect("run");
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `du ARGS PATH`'s lines, sorted; checks it succeeded.
fn du_lines(path: &Path, args: &[&str]) -> Vec<String> {
    let (code, out, err) = run(Command::new("du").args(args).arg(path));
    assert_eq!(code, Some(0), "du {args:?}: {err}");
    sorted(&out)
}

/// `du -b ARGS PATH`'s lines under today's rule of apparent sizes
/// (directories count 0), sorted.
fn du_b_lines(path: &Path, args: &[&str]) -> Vec<String> {
    let (code, out, err) = run(Command::new("du").arg("-b").args(args).arg(path));
    assert_eq!(code, Some(0), "du -b {args:?}: {err}");
    sorted(&apparent_as_today(Path::new("/"), &out))
}

/// `traverse ARGS PATH`'s lines, sorted; checks it succeeded.
fn traverse_lines(path: &Path, args: &[&str]) -> Vec<String> {
    let (code, out, err) = run(Command::new(bin()).args(args).arg(path));
    assert_eq!(code, Some(0), "traverse {args:?}: {err}");
    sorted(&out)
}

fn sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// A small tree with what du counts in its own ways: hard links inside one
/// directory, symlinks, empty directories, a FIFO, nested levels.
fn small_tree(env: &TestEnv) -> std::path::PathBuf {
    let t = env.mkdir("t");
    env.file("t/a/one", 5000);
    env.file("t/a/b/two", 123);
    env.file("t/a/b/c/three", 70_000);
    fs::hard_link(t.join("a/one"), t.join("a/one-again")).unwrap();
    fs::hard_link(t.join("a/b/c/three"), t.join("a/b/c/three-again")).unwrap();
    symlink("../a", t.join("a/b/up")).unwrap();
    symlink("nowhere-at-all", t.join("dangling")).unwrap();
    env.mkdir("t/empty");
    env.mkdir("t/deep/er/est");
    env.file("t/deep/er/f", 4097);
    env.file("t/top", 1);
    let fifo =
        std::ffi::CString::new(t.join("a/fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    t
}

/// A larger tree: 60 directories on three levels with files of varied
/// sizes, and one directory wide enough for the parallel engines to share
/// its entries out in chunks.
fn large_tree(env: &TestEnv) -> std::path::PathBuf {
    let t = env.mkdir("big");
    let mut n = 0usize;
    for i in 0..4 {
        for j in 0..5 {
            for k in 0..3 {
                let dir = t.join(format!("d{i}/e{j}/f{k}"));
                fs::create_dir_all(&dir).unwrap();
                for f in 0..(i * 7 + j * 3 + k) {
                    n += 1;
                    fs::write(dir.join(format!("x{f}")), vec![b'x'; (n * 37) % 9000]).unwrap();
                }
            }
        }
    }
    let wide = t.join("d1/wide");
    fs::create_dir_all(&wide).unwrap();
    for f in 0..10_000 {
        fs::write(wide.join(format!("w{f}")), vec![b'w'; f % 300]).unwrap();
    }
    t
}

/// `-b -d 1` and `-b -d 2` equal `du -b -d N` (apparent sizes, today's
/// rule), `-B1 -d N` and `-d N` equal `du -B1 -d N` and `du -d N` line for
/// line, with every engine.
fn check_depths(path: &Path) {
    for depth in ["1", "2"] {
        let bytes = du_b_lines(path, &["-d", depth]);
        let disk = du_lines(path, &["-B1", "-d", depth]);
        assert!(bytes.len() > 2, "{bytes:?}");
        assert_eq!(
            traverse_lines(path, &["-d", depth]),
            du_lines(path, &["-d", depth])
        );
        for engine in ENGINES {
            let args = ["--engine", engine, "-b", "-d", depth];
            assert_eq!(traverse_lines(path, &args), bytes, "{engine} -d {depth}");
            let args = ["--engine", engine, "-d", depth, "-B1"];
            assert_eq!(
                traverse_lines(path, &args),
                disk,
                "{engine} -d {depth} disk"
            );
        }
    }
}

#[test]
fn depths_match_du_on_a_small_tree() {
    let env = TestEnv::new();
    check_depths(&small_tree(&env));
}

#[test]
fn depths_match_du_on_a_large_tree() {
    let env = TestEnv::in_memory();
    check_depths(&large_tree(&env));
}

#[test]
fn lines_come_in_du_order_children_first_siblings_as_du_lists_them() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    let du = Command::new("du")
        .args(["-d", "2"])
        .arg(&t)
        .output()
        .unwrap();
    let want: Vec<String> = String::from_utf8_lossy(&du.stdout)
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().to_owned())
        .collect();
    for engine in ENGINES {
        let (code, out, err) = run(Command::new(bin())
            .args(["--engine", engine, "-d", "2"])
            .arg(&t));
        assert_eq!(code, Some(0), "{err}");
        let paths: Vec<&str> = out.lines().map(|l| l.split('\t').nth(1).unwrap()).collect();
        assert_eq!(paths, want, "{engine}");
    }
}

#[test]
fn depth_zero_is_the_plain_output() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    let summary = run(Command::new(bin()).arg("-s").arg(&t));
    assert_eq!(run(Command::new(bin()).args(["-d", "0"]).arg(&t)), summary);
    let plain = run(Command::new(bin()).arg("--json").arg(&t));
    assert_eq!(
        run(Command::new(bin()).args(["--json", "-d", "0"]).arg(&t)),
        plain
    );
}

#[test]
fn json_lines_have_the_keys_of_the_totals_and_the_depth() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    let du_bytes = du_lines(&t, &["-b", "-d", "1"]);
    for engine in ENGINES {
        let (code, out, err) = run(Command::new(bin())
            .args(["--engine", engine, "--json", "-d", "1"])
            .arg(&t));
        assert_eq!(code, Some(0), "{err}");
        let mut from_json = Vec::new();
        for line in out.lines() {
            let (depth_part, rest) = line.rsplit_once(",\"depth\":").expect("a depth key");
            let depth: usize = rest.trim_end_matches('}').parse().unwrap();
            let (path, totals) = parse_json(&format!("{depth_part}}}"));
            let path = path.trim_matches('"');
            assert_eq!(depth, usize::from(path != t.to_str().unwrap()), "{line}");
            from_json.push(format!("{}\t{path}", totals.bytes));
        }
        from_json.sort();
        assert_eq!(from_json, du_bytes, "{engine}");
        // The root's object counts as the plain totals do.
        let plain = totals(&t, engine, &[]);
        let root_line = out.lines().last().unwrap();
        let (_, root) = parse_json(&format!("{}}}", root_line.rsplit_once(',').unwrap().0));
        assert_eq!(root, plain, "{engine}");
    }
}

/// Sizes that du prints with -h in several units and roundings.
#[test]
fn human_sizes_match_du_h() {
    let env = TestEnv::new();
    let t = env.mkdir("h");
    let sizes = [
        0,
        1,
        1000,
        1023,
        1024,
        1025,
        10_239,
        10_241,
        1 << 20,
        3_500_000,
    ];
    for (i, size) in sizes.iter().enumerate() {
        env.file(&format!("h/d{i}/f"), *size);
    }
    let si = du_lines(&t, &["--si", "-d", "1"]);
    let disk = du_lines(&t, &["-h", "-d", "1"]);
    for engine in ENGINES {
        let args = ["--engine", engine, "--si", "-d", "1"];
        assert_eq!(traverse_lines(&t, &args), si, "{engine}");
        let args = ["--engine", engine, "-h", "-d", "1"];
        assert_eq!(traverse_lines(&t, &args), disk, "{engine}");
    }
}

#[test]
fn top_matches_the_largest_of_du() {
    let env = TestEnv::in_memory();
    let t = large_tree(&env);
    for (du_size, ours) in [("-b", Some("--apparent-size")), ("-B1", None)] {
        // Every directory with its subtree size, largest first; ties by
        // path, as traverse breaks them.
        let mut all: Vec<(u128, String)> = du_lines(&t, &[du_size])
            .iter()
            .map(|l| {
                let (size, path) = l.split_once('\t').unwrap();
                (size.parse().unwrap(), path.to_owned())
            })
            .collect();
        all.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let want: Vec<String> = all
            .iter()
            .take(7)
            .map(|(s, p)| format!("{s}\t{p}"))
            .collect();
        for engine in ENGINES {
            let mut args = vec!["--engine", engine, "--top", "7"];
            args.extend(ours);
            let (code, out, err) = run(Command::new(bin()).args(&args).arg(&t));
            assert_eq!(code, Some(0), "{err}");
            let got: Vec<&str> = out.lines().collect();
            assert_eq!(got, want, "{engine} {ours:?}");
        }
    }
}

#[test]
fn exclude_matches_du_exclude() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    env.file("t/a/x.o", 999);
    env.file("t/deep/y.o", 12345);
    env.file("t/skip/inside", 777);
    env.file("t/a/skip/more", 555);
    let du_args = [
        "-B1",
        "-d",
        "2",
        "--exclude=*.o",
        "--exclude=skip",
        "--exclude=t?o",
    ];
    let want = du_lines(&t, &du_args);
    for engine in ENGINES {
        let args = [
            "--engine",
            engine,
            "-B1",
            "-d",
            "2",
            "--exclude",
            "*.o",
            "--exclude",
            "skip",
            "--exclude",
            "t?o",
        ];
        assert_eq!(traverse_lines(&t, &args), want, "{engine}");
    }
    // The plain totals leave the same entries out.
    let excluded = totals(&t, "auto", &["--exclude", "*.o", "--exclude", "skip"]);
    let all = totals(&t, "auto", &[]);
    assert_eq!(all.files - excluded.files, 4);
    assert_eq!(all.dirs - excluded.dirs, 2);
    // What fnmatch takes literally, du's --exclude does too.
    let (code, _, err) = run(Command::new(bin()).args(["--exclude", "[z"]).arg(&t));
    assert_eq!(code, Some(0), "{err}");
}

/// An inode with names in three directories counts in the directory of
/// the name du meets first, with every engine and on every run; the
/// total counts it once, as du does.
#[test]
fn hard_links_across_directories_count_under_the_name_du_meets_first() {
    let env = TestEnv::new();
    let t = env.mkdir("l");
    env.file("l/m/one", 40_000);
    env.mkdir("l/b");
    env.mkdir("l/z");
    fs::hard_link(t.join("m/one"), t.join("z/again")).unwrap();
    fs::hard_link(t.join("m/one"), t.join("b/third")).unwrap();
    let root_bytes = u128::from(du(&t, &["-sb"]));
    // Under whichever name comes first in the order du reads the
    // directory (not the first by name: b, m and z were made m, b, z).
    let want = du_b_lines(&t, &["-d", "1"]);
    assert_eq!(want.iter().filter(|l| l.starts_with("40000\t")).count(), 2);
    for engine in ENGINES {
        for _ in 0..3 {
            assert_eq!(
                traverse_lines(&t, &["--engine", engine, "-b", "-d", "1"]),
                want,
                "{engine}"
            );
        }
        assert_eq!(totals(&t, engine, &[]).bytes, root_bytes, "{engine}");
    }
    // With --count-links every name counts, as du -l.
    let want = du_b_lines(&t, &["-l", "-d", "1"]);
    for engine in ENGINES {
        let args = ["--engine", engine, "-b", "--count-links", "-d", "1"];
        assert_eq!(traverse_lines(&t, &args), want, "{engine}");
    }
}

#[test]
fn unreadable_directory_is_reported_and_the_lines_go_on() {
    let env = TestEnv::new();
    env.open_to_all();
    let t = env.mkdir("t");
    env.file("t/ok/file", 100);
    env.file("t/secret/hidden", 5000);
    env.file("t/z/after", 7);
    for dir in ["t", "t/ok", "t/z"] {
        fs::set_permissions(env.root().join(dir), fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::set_permissions(t.join("secret"), fs::Permissions::from_mode(0o000)).unwrap();
    let exe = env.runnable_copy_of_bin();
    let (du_code, du_out, _) = run(as_unprivileged(
        Command::new("du").args(["-B1", "-d", "1"]).arg(&t),
    ));
    assert_eq!(du_code, Some(1), "du fails too, so the test is real");
    for engine in ENGINES {
        let (code, out, err) = run(as_unprivileged(
            Command::new(&exe)
                .args(["--engine", engine, "-B1", "-d", "1"])
                .arg(&t),
        ));
        assert_eq!(code, Some(1), "{engine}: {err}");
        assert!(
            err.contains("/t/secret") && err.contains("Permission denied"),
            "{engine}: {err}"
        );
        assert_eq!(sorted(&out), sorted(&du_out), "{engine}");
    }
    fs::set_permissions(t.join("secret"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// ncdu's size format: one decimal and a binary unit ("108.0 KiB").
fn ncdu_size(n: u64) -> String {
    let n = n as f32;
    let (value, unit) = if n < 1000.0 {
        (n, "  B")
    } else if n < 1023e3 {
        (n / 1024.0, "KiB")
    } else if n < 1023e6 {
        (n / 1048576.0, "MiB")
    } else {
        (n / 1073741824.0, "GiB")
    };
    format!("{value:5.1} {unit}")
}

/// The export of a tree with hard links, symlinks, a FIFO and a wide
/// directory.
fn exported(env: &TestEnv, t: &Path, engine: &str) -> std::path::PathBuf {
    let file = env.root().join(format!("export-{engine}.json"));
    let (code, out, err) = run(Command::new(bin())
        .args(["--engine", engine, "--export"])
        .arg(&file)
        .arg(t));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("files"), "the totals are printed: {out}");
    file
}

#[test]
fn export_loads_in_ncdu_with_du_s_totals() {
    if !installed("ncdu") || !installed("tmux") {
        return;
    }
    let env = TestEnv::new();
    let t = small_tree(&env);
    for engine in ENGINES {
        let file = exported(&env, &t, engine);
        let want = format!(
            "Total disk usage: {}  Apparent size: {}",
            ncdu_size(du(&t, &["-sB1"])),
            ncdu_size(du(&t, &["-sb"]))
        );
        let Some(pane) = Pane::start(
            &format!("ncdu-{engine}"),
            (160, 40),
            &["ncdu".as_ref(), "-f".as_ref(), file.as_os_str()],
        ) else {
            return;
        };
        let screen = pane.wait("ncdu's totals", |s| s.contains("Total disk usage"));
        pane.keys(&["q"]);
        drop(pane);
        assert!(
            screen.contains(&want),
            "{engine}: want {want:?} on\n{screen}"
        );
        for name in ["a", "deep", "empty", "dangling", "top"] {
            assert!(
                screen
                    .lines()
                    .any(|l| l.trim_end().ends_with(&format!("/{name}"))
                        || l.trim_end().ends_with(&format!(" {name}"))),
                "{engine}: {name} on\n{screen}"
            );
        }
    }
}

#[test]
fn export_loads_in_gdu_with_du_s_totals() {
    if !installed("gdu") {
        return;
    }
    let env = TestEnv::new();
    let t = small_tree(&env);
    for engine in ENGINES {
        let file = exported(&env, &t, engine);
        for (gdu_flag, du_flag) in [(None, "-sB1"), (Some("-a"), "-sb")] {
            let mut cmd = Command::new("gdu");
            cmd.args(["-n", "-p", "-s", "--no-prefix"])
                .args(gdu_flag)
                .arg("-f")
                .arg(&file);
            let (code, out, err) = run(&mut cmd);
            assert_eq!(code, Some(0), "gdu: {err}");
            let total: u64 = out.split_whitespace().next().unwrap().parse().unwrap();
            assert_eq!(total, du(&t, &[du_flag]), "{engine} {gdu_flag:?}: {out}");
        }
    }
}

#[test]
fn export_to_stdout_is_the_only_output() {
    let env = TestEnv::new();
    let t = small_tree(&env);
    let (code, out, err) = run(Command::new(bin()).args(["--export", "-"]).arg(&t));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("[1,2,{\"progname\":\"traverse\""), "{out}");
    assert!(out.ends_with("]\n"), "{out}");
    // Every name below the root is in it, once.
    let out_find = run(Command::new("find")
        .arg(&t)
        .args(["-mindepth", "1", "-printf", "%f\n"]))
    .1;
    for name in out_find.lines() {
        let key = format!("\"name\":\"{name}\"");
        assert!(out.contains(&key), "{key} in {out}");
    }
    let (code, _, err) = run(Command::new(bin()).args(["--export", "-"]).arg(&t).arg(&t));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("one PATH"), "{err}");
    // Other output asked for beside it is refused, not left out silently.
    for (extra, option) in [
        (&["--json"][..], "--json"),
        (&["-d", "1"][..], "--max-depth"),
        (&["-d", "0"][..], "--max-depth"),
        (&["--top", "2"][..], "--top"),
    ] {
        let (code, out, err) = run(Command::new(bin())
            .args(["--export", "-"])
            .args(extra)
            .arg(&t));
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(out.is_empty(), "{extra:?}: {out}");
        assert!(
            err.contains("--export -") && err.contains(option),
            "{extra:?}: {err}"
        );
    }
}

/// An export that fails for want of space (a tmpfs of 64 KiB, mounted for
/// the test: skipped where mounting is not allowed) leaves no file behind,
/// neither under its name nor under the temporary one; the walk's totals
/// are still printed and the exit status is 1.
#[test]
fn a_failed_export_leaves_no_file() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    for i in 0..2000 {
        env.file(&format!("t/d{}/a-rather-long-file-name-{i}", i % 20), 1);
    }
    let small = env.mkdir("small");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        println!("skipped: cannot mount a tmpfs here");
        return;
    }
    for engine in ENGINES {
        let file = small.join("tree.json");
        let (code, out, err) = run(Command::new(bin())
            .args(["--engine", engine, "--export"])
            .arg(&file)
            .arg(&t));
        assert_eq!(code, Some(1), "{engine}: {err}");
        assert!(
            err.contains("tree.json: write error") && err.contains("No space left on device"),
            "{engine}: {err}"
        );
        assert!(out.contains("2000 files"), "{engine}: {out}");
        let left: Vec<_> = fs::read_dir(&small)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{engine}: {left:?} left behind");
    }
    let unmounted = Command::new("umount").arg(&small).status().unwrap();
    assert!(unmounted.success());
}

/// On a terminal, the progress line shows while a breakdown walks (a slow
/// FUSE mount keeps it walking past the first second), and the lines come
/// after it.
#[test]
fn progress_line_shows_on_a_terminal() {
    if !installed("tmux") {
        return;
    }
    let env = TestEnv::new();
    let src = env.mkdir("src");
    for d in 0..20 {
        for f in 0..20 {
            env.file(&format!("src/d{d}/f{f}"), f);
        }
    }
    let options = testfs::Options::new().delay(Duration::from_millis(3));
    let Some(mount) = mount_testfs(&env, &src, &options) else {
        return;
    };
    let script = format!(
        "{} -j 1 --top 5 {} ; sleep 30",
        bin().display(),
        mount.mountpoint().display()
    );
    let Some(pane) = Pane::start("progress", (160, 40), &[script.as_ref()]) else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut progress, mut lines) = (false, false);
    while Instant::now() < deadline && !lines {
        let screen = pane.screen();
        progress |= screen.contains(" entries, ") && screen.contains(" bytes...");
        lines = screen.contains(&format!("\t{}\n", mount.mountpoint().display()))
            || screen
                .lines()
                .any(|l| l.ends_with(&format!(" {}", mount.mountpoint().display())));
        sleep(Duration::from_millis(50));
    }
    drop(pane);
    assert!(progress, "no progress line seen");
    assert!(lines, "the lines did not come");
}

/// The Linux source tree (86 629 files), from the Debian package's tarball
/// where it is installed (`.ci/run` and the kernel build install it);
/// skipped elsewhere (the test VM).
#[test]
fn depths_match_du_on_the_linux_tree() {
    let tarball = Path::new("/usr/src/linux-source-6.12.tar.xz");
    if !tarball.exists() {
        println!("skipped: {} is not installed", tarball.display());
        return;
    }
    let env = TestEnv::new();
    let (code, _, err) = run(Command::new("tar")
        .arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(env.root()));
    assert_eq!(code, Some(0), "tar: {err}");
    check_depths(&env.root().join("linux-source-6.12"));
}

/// Several PATHs: an inode counted under one is not counted again under a
/// later one, in the lines as in the totals, as du does.
#[test]
fn several_paths_count_a_shared_inode_under_the_first() {
    let env = TestEnv::new();
    let a = env.mkdir("a");
    let b = env.mkdir("b");
    env.file("a/sub/one", 30_000);
    env.mkdir("b/sub");
    fs::hard_link(a.join("sub/one"), b.join("sub/again")).unwrap();
    let (code, out, err) = run(Command::new("du").args(["-B1", "-d", "1"]).arg(&a).arg(&b));
    assert_eq!(code, Some(0), "{err}");
    for engine in ENGINES {
        let (code, got, err) = run(Command::new(bin())
            .args(["--engine", engine, "-B1", "-d", "1"])
            .arg(&a)
            .arg(&b));
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(sorted(&got), sorted(&out), "{engine}");
    }
}

/// Three sparse files of 2^63-1 bytes in a subdirectory: its line and the
/// root's pass 2^64 and are exact, never wrapped (du overflows there).
#[test]
fn directory_sums_past_two_to_the_64_are_exact() {
    let env = TestEnv::in_memory();
    let t = env.mkdir("sparse");
    let s = env.mkdir("sparse/s");
    if !sparse_max_files(&s, 3) {
        return;
    }
    // Apparent sizes as du counts them today: directories count 0.
    let sub = 3 * u128::from(i64::MAX as u64);
    assert!(sub > u128::from(u64::MAX));
    let want = format!("{sub}\t{}\n{sub}\t{}\n", s.display(), t.display());
    for engine in ENGINES {
        let (code, out, err) = run(Command::new(bin())
            .args(["--engine", engine, "-b", "-d", "1"])
            .arg(&t));
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(out, want, "{engine}");
    }
    // 24 EiB less 3 bytes, plus the directories: rounded up as du -h does.
    let (_, out, _) = run(Command::new(bin()).args(["-hA", "--top", "1"]).arg(&t));
    assert_eq!(out, format!("25E\t{}\n", t.display()));
}

/// A tree of hard links (200 inodes, 4 names each over 20 directories):
/// the `threads` and `uring` engines count a further name from its
/// `d_ino` without a stat, `std` stats every name; all give the same
/// lines, on every run, and the root's equals `du -sb`.
#[test]
fn many_hard_links_give_the_same_lines_with_or_without_a_stat_per_name() {
    let env = TestEnv::in_memory();
    let t = env.mkdir("links");
    for i in 0..200 {
        let first = env.file(&format!("links/d{}/f{i}", i % 20), 100 + i);
        for k in 1..4 {
            let dir = t.join(format!("d{}", (i * 7 + k * 3) % 20));
            fs::create_dir_all(&dir).unwrap();
            fs::hard_link(&first, dir.join(format!("f{i}-{k}"))).unwrap();
        }
    }
    let reference = traverse_lines(&t, &["--engine", "std", "-B1", "-d", "1"]);
    let root = format!("{}\t{}", du(&t, &["-sB1"]), t.display());
    assert!(reference.contains(&root), "{reference:?}");
    for engine in ENGINES {
        for _ in 0..3 {
            let args = ["--engine", engine, "-B1", "-d", "1"];
            assert_eq!(traverse_lines(&t, &args), reference, "{engine}");
        }
    }
}

/// The same tree twice, a tree and its subdirectory, and the other way
/// round: every directory is counted once per invocation, as du counts
/// every inode once across its arguments (a PATH counted before prints
/// nothing; a PATH holding an earlier one leaves it out), in the lines of
/// `-d 1`, in the per-PATH totals and in the grand total.
#[test]
fn overlapping_paths_count_each_directory_once_as_du() {
    let env = TestEnv::new();
    let a = env.mkdir("a");
    env.file("a/sub/x/f", 6);
    env.file("a/other/g", 9);
    env.file("a/top", 3000);
    let sub = a.join("sub");
    let x = sub.join("x");
    let cases: [&[&Path]; 4] = [&[&a, &a], &[&a, &sub], &[&sub, &a], &[&sub, &x, &a, &a]];
    for paths in cases {
        let (code, want_d1, err) = run(Command::new("du").args(["-B1", "-d", "1"]).args(paths));
        assert_eq!(code, Some(0), "{err}");
        let (_, want_s, _) = run(Command::new("du").args(["-sbc"]).args(paths));
        // du -sbc: "SIZE\tPATH" per PATH counted, then the total.
        let want_s: Vec<(u128, String)> = want_s
            .lines()
            .map(|l| {
                let (size, path) = l.split_once('\t').unwrap();
                (size.parse().unwrap(), path.to_owned())
            })
            .collect();
        for engine in ENGINES {
            let (code, got, err) = run(Command::new(bin())
                .args(["--engine", engine, "-B1", "-d", "1"])
                .args(paths));
            assert_eq!(code, Some(0), "{engine} {paths:?}: {err}");
            assert_eq!(sorted(&got), sorted(&want_d1), "{engine} {paths:?}");
            let (code, got, err) = run(Command::new(bin())
                .args(["--engine", engine, "--json"])
                .args(paths));
            assert_eq!(code, Some(0), "{engine} {paths:?}: {err}");
            let got: Vec<(u128, String)> = got
                .lines()
                .map(|l| {
                    let (path, t) = parse_json(l);
                    let path = if path == "null" {
                        "total".to_owned()
                    } else {
                        path.trim_matches('"').to_owned()
                    };
                    (t.bytes, path)
                })
                .collect();
            assert_eq!(got, want_s, "{engine} {paths:?}");
        }
    }
}

/// FILE is never opened for writing: the export is a new file renamed
/// over it. A symlink at FILE (planted by whoever owns its directory) is
/// replaced, its target left as it was; a device or a FIFO at FILE is
/// refused and left alone (`-` writes to stdout).
#[test]
fn an_export_never_writes_through_a_symlink_or_a_device() {
    use std::os::unix::fs::FileTypeExt;
    let env = TestEnv::new();
    let t = small_tree(&env);
    let victim = env.root().join("victim");
    fs::write(&victim, b"precious").unwrap();
    let link = env.root().join("link.json");
    symlink(&victim, &link).unwrap();
    let (code, _, err) = run(Command::new(bin()).arg("--export").arg(&link).arg(&t));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_file());
    assert!(fs::read(&link).unwrap().ends_with(b"]\n"));

    let (code, _, err) = run(Command::new(bin()).args(["--export", "/dev/null"]).arg(&t));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("/dev/null") && err.contains("not a regular file"),
        "{err}"
    );
    let null = fs::symlink_metadata("/dev/null").unwrap();
    assert!(
        null.file_type().is_char_device(),
        "/dev/null is still a device"
    );
    // Nothing left beside the export's name.
    let names: Vec<_> = fs::read_dir(env.root())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".part"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}
