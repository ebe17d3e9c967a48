//! Under -L, a file or a directory reached through several names (links,
//! or itself and links) counts once, under GNU du's first name in its own
//! walk order (a directory with its whole subtree), whatever name a
//! worker reaches first: lines compared unsorted, byte for byte, with the
//! local du. The du-first name sits deep and the others shallow, so a
//! parallel walk meets a later one first. On the temporary directory's
//! filesystem and on tmpfs, in a small directory and in one of more than
//! 10 000 entries (which du -L sorts by inode on both).

mod testenv;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use testenv::*;

/// The engines that follow links below the root (the reference engines
/// `std` and `tokio` follow none).
const FOLLOWING: [&str; 3] = ["auto", "threads", "uring"];

fn same_as_gnu(dir: &Path, args: &[&str]) {
    let want = du_output(None, dir, args);
    assert_eq!(want.0, Some(0), "du {args:?}: {}", want.2);
    for engine in FOLLOWING {
        let got = du_output(Some(engine), dir, args);
        if got != want {
            // Only the lines that differ: -a prints 10 000 more.
            let (mine, theirs) = (got.1.lines(), want.1.lines());
            let differ: Vec<_> = mine.zip(theirs).filter(|(a, b)| a != b).take(20).collect();
            panic!(
                "--engine {engine} du {args:?} in {}: status {:?} (du {:?}), stderr {:?}, \
                 lines {} (du {}), first differing (traverse, du): {differ:#?}",
                dir.display(),
                got.0,
                want.0,
                got.2,
                got.1.lines().count(),
                want.1.lines().count()
            );
        }
    }
}

/// The subdirectories of `dir` named `names`, in the order GNU du walks
/// them: the order of their lines in `du -L dir`.
fn du_order(dir: &Path, names: &[String]) -> Vec<String> {
    let (_, out, _) = du_output(None, dir, &["-L", "."]);
    out.lines()
        .filter_map(|line| line.split_once("\t./").map(|(_, name)| name.to_owned()))
        .filter(|name| names.contains(name))
        .collect()
}

/// A link at `at` (below `root`) to `target` (below `root` too), relative.
fn link(root: &Path, target: &str, at: &str) {
    let up = "../".repeat(at.matches('/').count());
    symlink(format!("{up}{target}"), root.join(at)).unwrap();
}

/// `t/` whose subdirectories `d0`..`d9` du walks in its own order: in the
/// first, a deep link to `real/f` (or with `dirs` to `real/`) and another
/// to `t/<last>/own`, a file (a directory) also reached as itself; in the
/// others, a shallow link to the same as the first. With `fill`, `t`
/// holds 10 040 files more (sorted by inode where du sorts).
fn tree(env: &TestEnv, fill: bool, dirs: bool) {
    let root = env.root();
    env.file("real/f", 30_000);
    env.file("real/sub/g", 9_000);
    env.mkdir("real/sub/empty");
    let t = env.mkdir("t");
    if fill {
        for i in 0..10_040 {
            fs::write(t.join(format!("n{i}")), b"").unwrap();
        }
    }
    let names: Vec<String> = (0..10).map(|i| format!("d{}", (i * 7) % 10)).collect();
    for name in &names {
        env.mkdir(&format!("t/{name}"));
    }
    let order = du_order(&t, &names);
    assert_eq!(order.len(), names.len(), "du's lines: {order:?}");
    let (first, last) = (&order[0], &order[order.len() - 1]);
    let (target, own) = match dirs {
        true => ("real", format!("t/{last}/own/h")),
        false => ("real/f", format!("t/{last}/own")),
    };
    env.file(&own, 20_000);
    let deep = format!("t/{first}/a/b/c/d");
    env.mkdir(&deep);
    link(root, target, &format!("{deep}/r"));
    link(root, &format!("t/{last}/own"), &format!("{deep}/own"));
    for name in &order[1..] {
        link(root, target, &format!("t/{name}/r"));
    }
}

#[test]
fn a_file_reached_through_several_links_counts_under_dus_first_name() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        tree(&env, false, false);
        for args in [
            &["-aL", "t"][..],
            &["-L", "t"],
            &["-L", "--max-depth=1", "t"],
            &["-L", "-a", "--max-depth=3", "t"],
            &["-L", "--inodes", "-a", "t"],
            &["-L", "-a", "-c", "t", "real"],
        ] {
            same_as_gnu(env.root(), args);
        }
    }
}

#[test]
fn in_a_directory_of_more_than_10000_entries_the_first_name_is_dus() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        tree(&env, true, false);
        for args in [
            &["-aL", "t"][..],
            &["-L", "t"],
            &["-L", "--max-depth=1", "t"],
        ] {
            same_as_gnu(env.root(), args);
        }
    }
}

#[test]
fn a_directory_reached_through_several_links_counts_under_dus_first_name() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        tree(&env, false, true);
        for args in [
            &["-aL", "t"][..],
            &["-L", "t"],
            &["-L", "--max-depth=2", "t"],
            &["-L", "-a", "--max-depth=5", "t"],
            &["-L", "-S", "t"],
            &["-L", "--inodes", "-a", "t"],
            &["-L", "-a", "-c", "t", "real"],
            &["-L", "-a", "-c", "real", "t"],
        ] {
            same_as_gnu(env.root(), args);
        }
    }
}

#[test]
fn in_a_directory_of_more_than_10000_entries_a_directory_is_under_dus_first_name() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        tree(&env, true, true);
        for args in [
            &["-aL", "t"][..],
            &["-L", "t"],
            &["-L", "--max-depth=1", "t"],
        ] {
            same_as_gnu(env.root(), args);
        }
    }
}

/// Links both ways: `<first>/l2` leads to `<second>/d1/d4`, which holds a
/// link `l0` back to `<second>` and a subdirectory also reached from
/// `<first>/l9`. du walks `d4` under `l2` first, `<second>` then under
/// `l2/l0` (not where it is), and `d5` under `l2/d5`.
#[test]
fn directories_linked_both_ways_come_where_du_walks_them() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        let root = env.root();
        let t = env.mkdir("t");
        let names = ["p".to_owned(), "q".to_owned()];
        for name in &names {
            env.mkdir(&format!("t/{name}"));
        }
        let order = du_order(&t, &names);
        let (first, second) = (&order[0], &order[1]);
        env.file(&format!("t/{second}/f"), 3_000);
        env.file(&format!("t/{second}/d1/f"), 5_000);
        env.file(&format!("t/{second}/d1/d4/f"), 7_000);
        env.file(&format!("t/{second}/d1/d4/d5/f"), 11_000);
        link(root, &format!("t/{second}/d1/d4"), &format!("t/{first}/l2"));
        link(
            root,
            &format!("t/{second}"),
            &format!("t/{second}/d1/d4/l0"),
        );
        link(
            root,
            &format!("t/{second}/d1/d4/d5"),
            &format!("t/{first}/l9"),
        );
        for args in [
            &["-aL", "t"][..],
            &["-L", "t"],
            &["-L", "--inodes", "-a", "t"],
            &["-L", "--max-depth=2", "t"],
        ] {
            same_as_gnu(root, args);
        }
    }
}
