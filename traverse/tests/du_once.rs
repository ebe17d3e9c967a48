//! Every inode once, as GNU du counts it when given several PATHs or -L
//! (du.c's `hash_all`), against the local GNU du: a file PATH inside a
//! directory PATH given before or after it, a directory reached through
//! two links under -L, a file reached as itself and through a link, and a
//! link to an ancestor (no message: du passes over it). A directory
//! reached by two names gets its lines under du's first
//! (`tests/du_follow.rs` compares the order of the lines too).

mod testenv;

use std::os::unix::fs::symlink;
use std::path::Path;

use testenv::*;

/// Exit status, the lines sorted, and stderr; traverse with its default
/// engine.
fn du(gnu: bool, dir: &Path, args: &[&str]) -> (i32, Vec<String>, String) {
    let (code, out, err) = du_output((!gnu).then_some("auto"), dir, args);
    let mut lines: Vec<String> = out.lines().map(str::to_owned).collect();
    lines.sort();
    (code.unwrap_or(-1), lines, err)
}

fn same_as_gnu(dir: &Path, args: &[&str]) {
    assert_eq!(du(false, dir, args), du(true, dir, args), "du {args:?}");
}

/// `real/` (files, a subdirectory) and `top/` with two links to it.
fn tree(env: &TestEnv) {
    env.file("real/f", 5000);
    env.file("real/sub/g", 9000);
    env.mkdir("top");
    let r = env.root();
    symlink("../real", r.join("top/l1")).unwrap();
    symlink("../real", r.join("top/l2")).unwrap();
}

#[test]
fn a_file_path_inside_another_path_counts_once() {
    let env = TestEnv::new();
    tree(&env);
    let dir = env.root();
    for args in [
        &["real", "real/f"][..],
        &["real/f", "real"],
        &["-a", "real/f", "real"],
        &["-a", "-c", "real", "real/sub/g"],
        &["-c", "real/sub/g", "real/sub", "real"],
        &["-s", "real/f", "./real/f", "real/sub/../f"],
        &["-l", "-c", "real", "real/f"],
        &["-S", "-c", "real/sub/g", "real"],
        &["--inodes", "-c", "real", "real/f"],
        &["-c", "real/f", "top/l1"],
        &["-l", "-c", "real", "real/sub", "real/f", "real"],
        &["-H", "-c", "real/f", "top/l1"],
    ] {
        same_as_gnu(dir, args);
    }
}

#[test]
fn a_hard_linked_file_path_inside_another_path_counts_once() {
    let env = TestEnv::new();
    env.file("d/f", 7000);
    std::fs::hard_link(env.root().join("d/f"), env.root().join("f2")).unwrap();
    for args in [
        &["-c", "d", "f2"][..],
        &["-c", "f2", "d"],
        &["-a", "d", "d/f"],
    ] {
        same_as_gnu(env.root(), args);
    }
}

#[test]
fn under_dereference_a_directory_or_file_reached_twice_counts_once() {
    let env = TestEnv::new();
    tree(&env);
    let dir = env.root();
    for args in [
        &["-L", "top"][..],
        &["-L", "-a", "top"],
        &["-L", "-s", "top"],
        &["-L", "-S", "top"],
        &["-L", "--inodes", "top"],
        &["-L", "-c", "top/l1", "top/l2"],
        &["-L", "-l", "top"],
        &["-L", "-l", "-a", "-c", "top", "real"],
    ] {
        same_as_gnu(dir, args);
    }
    // A file as itself and through a link: one name counts it.
    symlink("../real/f", dir.join("top/lf")).unwrap();
    env.mkdir("both");
    std::fs::rename(dir.join("top"), dir.join("both/top")).unwrap();
    std::fs::rename(dir.join("real"), dir.join("both/real")).unwrap();
    for args in [
        &["-L", "-s", "both"][..],
        &["-L", "-s", "both/top"],
        &["-L", "-s", "-c", "both/real", "both/top"],
    ] {
        same_as_gnu(dir, args);
    }
}

/// A link to an ancestor under -L: du follows it into nothing new, says
/// nothing and exits 0 (fts reports FTS_DC, which du warns about only
/// when not following links).
#[test]
fn under_dereference_a_link_to_an_ancestor_is_passed_over_silently() {
    let env = TestEnv::new();
    env.file("t/a/b/f", 100);
    symlink("..", env.root().join("t/a/b/up")).unwrap();
    symlink("../..", env.root().join("t/a/b/top")).unwrap();
    for args in [
        &["-L", "t"][..],
        &["-L", "-a", "t"],
        &["-L", "-c", "t", "t/a"],
    ] {
        let gnu = du(true, env.root(), args);
        assert_eq!((gnu.0, gnu.2.as_str()), (0, ""), "GNU du {args:?}");
        same_as_gnu(env.root(), args);
    }
}

/// Under -L, a file PATH reached before through a link to it.
#[test]
fn under_dereference_a_file_path_reached_through_an_earlier_link_counts_once() {
    let env = TestEnv::new();
    env.file("real/f", 5000);
    env.mkdir("top");
    symlink("../real/f", env.root().join("top/lf")).unwrap();
    for args in [
        &["-L", "-c", "top", "real/f"][..],
        &["-L", "-c", "real/f", "top"],
        &["-L", "-c", "top/lf", "real"],
        &["-L", "-a", "-c", "top", "real"],
    ] {
        same_as_gnu(env.root(), args);
    }
}

/// A directory claiming its parent's inode number (testfs, FUSE): a
/// cycle that no mount point explains, which du reports with its
/// "WARNING: Circular directory structure" (and exit 1) when it follows
/// no link, and passes over silently when it remembers every inode
/// (several PATHs, or -L; not with -l).
#[test]
fn a_false_cycle_is_reported_as_du_reports_it() {
    let env = TestEnv::new();
    let src = env.mkdir("src");
    env.file("src/a/file", 20);
    env.file("src/a/b/c/deep", 30);
    env.file("src/x/y", 50);
    let options = testfs::Options::new().inode_of("a/b", "a");
    // Mounted at `mnt`, beside `src`.
    let Some(_mount) = mount_testfs(&env, &src, &options) else {
        return;
    };
    for args in [
        &["mnt"][..],
        &["-a", "mnt"],
        &["-s", "mnt"],
        &["-H", "mnt/a"],
        &["-L", "mnt"],
        &["-c", "mnt/x", "mnt"],
        &["-l", "-c", "mnt/x", "mnt"],
        &["-l", "-L", "mnt"],
    ] {
        let want = du(true, env.root(), args);
        let got = du(false, env.root(), args);
        assert_eq!(got, want, "du {args:?}");
    }
}

/// A file an earlier PATH's walk left out (`--exclude`), given again under
/// a name the pattern does not match, counts then, as du counts it; under
/// a name it matches, it stays out.
#[test]
fn a_file_left_out_by_exclude_counts_when_given_later() {
    let env = TestEnv::new();
    tree(&env);
    for args in [
        &["-c", "--exclude=real/f", "real", "top/l1/f"][..],
        &["-a", "--exclude=real/sub/*", "real", "top/l1/sub/g"],
        &["-c", "--exclude=real/f", "real", "real/f"],
        &["-c", "--exclude=sub", "real", "top/l2/sub/g"],
    ] {
        same_as_gnu(env.root(), args);
    }
}
