//! du's flags in the lines: `-a`, `--inodes`, `-t SIZE` and `-c`, line
//! for line against du itself (`-B1`, `-k`, `-h`), with every engine, on
//! generated trees and on the Linux tree.

mod testenv;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use testenv::*;

/// The flag sets compared, each with the size modes that apply.
const FLAG_SETS: &[&[&str]] = &[
    &["-a", "-d", "2"],
    &["--inodes", "-d", "1"],
    &["-t", "1M", "-d", "2"],
    &["-c"],
];

/// The second name of each hard-linked pair of [`tree`], as the first.
/// du and traverse print a hard-linked file under the name du meets first
/// (directory order; tests/du_order.rs checks which): here the lines are
/// compared with both names made one, which checks that the inode has
/// exactly one line, with its size.
const SECOND_NAMES: &[(&str, &str)] = &[("/one-again", "/one"), ("/three-again", "/three")];

/// A program's output lines, sorted, with [`SECOND_NAMES`] made one;
/// checks it succeeded.
fn lines(cmd: &mut Command) -> Vec<String> {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            SECOND_NAMES
                .iter()
                .find_map(|(second, first)| {
                    l.strip_suffix(second).map(|head| format!("{head}{first}"))
                })
                .unwrap_or_else(|| l.to_owned())
        })
        .collect();
    lines.sort();
    lines
}

/// Every flag set of [`FLAG_SETS`], and with `more` a few more, with
/// every engine, against du; each du output must have more than
/// `min_lines` lines so that the comparison says something.
fn check(path: &Path, min_lines: usize, more: bool) {
    let mut sets: Vec<Vec<&str>> = FLAG_SETS.iter().map(|s| s.to_vec()).collect();
    if more {
        sets.extend([
            vec!["-a", "-t", "-4K"],
            vec!["-a", "--inodes", "-c", "-d", "3"],
            vec!["-c", "-h", "-d", "1"],
            vec!["-t", "0x2000", "-d", "1"],
        ]);
    }
    for set in &sets {
        let inodes = set.contains(&"--inodes");
        // The same size flag for both: --inodes has none. (Apparent sizes
        // are left out: Debian 12's du counts directories in them, as
        // coreutils did before 9.2; tests/coreutils_du.rs checks them.)
        let modes: &[(&str, &str)] = if inodes {
            &[("--inodes", "--inodes")]
        } else {
            &[("-B1", "-B1"), ("-k", "-k")]
        };
        for (du_mode, traverse_mode) in modes {
            let mut du = Command::new("du");
            du.arg(du_mode);
            let want = lines(du.args(set).arg(path));
            assert!(want.len() > min_lines, "du {set:?}: {want:?}");
            for engine in ENGINES {
                let got = lines(
                    Command::new(bin())
                        .args(["--engine", engine, traverse_mode])
                        .args(set)
                        .arg(path),
                );
                assert_eq!(got, want, "{engine} {traverse_mode} {set:?}");
            }
        }
    }
}

/// What du counts in its own ways: hard links within one directory,
/// symlinks, an empty directory, a FIFO, files above and below 1 MiB and
/// 4 KiB, four levels.
fn tree(env: &TestEnv) -> PathBuf {
    let t = env.mkdir("t");
    env.file("t/a/one", 5000);
    env.file("t/a/b/two", 123);
    env.file("t/a/b/c/three", 70_000);
    env.file("t/a/b/c/d/deepest", 300);
    env.file("t/big/one-m", 1 << 20);
    env.file("t/big/under", (1 << 20) - 1);
    env.file("t/big/sub/two-m", 2 << 20);
    fs::hard_link(t.join("a/one"), t.join("a/one-again")).unwrap();
    fs::hard_link(t.join("a/b/c/three"), t.join("a/b/c/three-again")).unwrap();
    symlink("../a", t.join("a/b/up")).unwrap();
    symlink("nowhere-at-all", t.join("dangling")).unwrap();
    env.mkdir("t/empty");
    env.file("t/top", 1);
    for i in 0..300 {
        env.file(&format!("t/wide/w{i}"), i * 40);
    }
    let fifo =
        std::ffi::CString::new(t.join("a/fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    t
}

#[test]
fn du_flags_match_du_on_a_generated_tree() {
    let env = TestEnv::new();
    check(&tree(&env), 3, true);
}

/// A hard-linked file with names in two directories: one line under
/// `-a` (under the name du meets first, where its size is counted), and one
/// entry in the counts of `--inodes`, as du gives.
#[test]
fn a_hard_linked_file_has_one_line_and_counts_once() {
    let env = TestEnv::new();
    let t = env.mkdir("h");
    env.file("h/x/f", 9000);
    env.mkdir("h/y");
    fs::hard_link(t.join("x/f"), t.join("y/g")).unwrap();
    // Under the name du meets first in directory order.
    let du_all = lines(Command::new("du").args(["-a", "-b"]).arg(&t));
    let want: Vec<&String> = du_all
        .iter()
        .filter(|l| l.ends_with("/f") || l.ends_with("/g"))
        .collect();
    assert_eq!(want.len(), 1, "{du_all:?}");
    for engine in ENGINES {
        let run = |args: &[&str]| {
            lines(
                Command::new(bin())
                    .args(["--engine", engine])
                    .args(args)
                    .arg(&t),
            )
        };
        let all = run(&["-a", "-b"]);
        let files: Vec<&String> = all
            .iter()
            .filter(|l| l.ends_with("/f") || l.ends_with("/g"))
            .collect();
        assert_eq!(files, want, "{engine}");
        let inodes = run(&["--inodes", "-d", "0"]);
        // h, x, y and the one inode.
        assert_eq!(inodes, [format!("4\t{}", t.display())], "{engine}");
    }
}

/// The Linux source tree (86 629 files) from the Debian package's
/// tarball where it is installed (`.ci/run` installs it); skipped
/// elsewhere (the test VM).
#[test]
fn du_flags_match_du_on_the_linux_tree() {
    let tarball = Path::new("/usr/src/linux-source-6.12.tar.xz");
    if !tarball.exists() {
        println!("skipped: {} is not installed", tarball.display());
        return;
    }
    let env = TestEnv::new();
    let out = Command::new("tar")
        .arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(env.root())
        .output()
        .expect("tar");
    assert!(
        out.status.success(),
        "tar: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&env.root().join("linux-source-6.12"), 20, false);
}

/// Bad thresholds are refused with du's reasons, naming the option.
#[test]
fn bad_thresholds_are_refused() {
    let env = TestEnv::new();
    for bad in ["-0", "1b", "1.5M", "9E", ""] {
        let out = traverse(["-t", bad, env.root().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--threshold"), "{bad}: {err}");
    }
}
