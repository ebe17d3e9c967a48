//! Lines in GNU du's order, compared unsorted with the local du: a
//! directory after everything below it, the entries of a directory in
//! the order fts reads them (`getdents64`'s), or by inode number in a
//! directory of more than 10 000 entries on a filesystem other than
//! tmpfs, NFS or CIFS; a hard-linked file under the name du meets first.
//! Names are created out of name order, so a listing by name fails. On
//! the temporary directory's filesystem and on tmpfs, every engine.

mod testenv;

use std::fs;
use std::path::Path;

use testenv::*;

fn same_order_as_gnu(dir: &Path, args: &[&str]) {
    let want = du_output(None, dir, args);
    assert_eq!(want.0, Some(0), "du {args:?}: {}", want.2);
    for engine in ENGINES {
        let got = du_output(Some(engine), dir, args);
        assert_eq!(
            got,
            want,
            "--engine {engine} du {args:?} in {}",
            dir.display()
        );
    }
}

/// Directories and files whose names, in creation order, are not in name
/// order, two levels deep.
fn mixed_tree(env: &TestEnv) {
    for (i, name) in ["m", "zeta", "b", "alpha", "q", "c9", "c10"]
        .iter()
        .enumerate()
    {
        env.file(&format!("t/{name}"), 100 * (i + 1));
        env.file(&format!("t/d-{name}/x"), 5000);
        env.file(&format!("t/d-{name}/e/{name}"), 7000);
        env.mkdir(&format!("t/d-{name}/{name}-empty"));
    }
}

#[test]
fn siblings_come_in_the_order_du_lists_them() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        mixed_tree(&env);
        for args in [
            &["t"][..],
            &["-a", "t"],
            &["-d", "1", "t"],
            &["-a", "-S", "t"],
            &["--inodes", "-a", "t"],
            &["-a", "t/d-m", "t"],
        ] {
            same_order_as_gnu(env.root(), args);
        }
    }
}

#[test]
fn a_directory_of_more_than_10000_entries_is_listed_as_fts_sorts_it() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        let big = env.mkdir("big/d");
        for i in 0..10_040 {
            fs::write(big.join(format!("f{i}")), b"").unwrap();
        }
        // Freed inodes taken again: inode order then differs from creation
        // order as well as from the listing's.
        for i in (0..600).step_by(7) {
            fs::remove_file(big.join(format!("f{i}"))).unwrap();
            fs::write(big.join(format!("g{i}")), b"1").unwrap();
        }
        for sub in ["s2", "s1", "zz"] {
            env.file(&format!("big/d/{sub}/inner"), 10);
        }
        // One inode named in ten subdirectories: du counts it under the
        // subdirectory whose inode comes first, which only the whole
        // listing of big/d tells (walkers may meet the names before it ends).
        let orig = env.file("big/d/h7/link", 70_000);
        for i in [3, 9, 0, 5, 1, 8, 2, 6, 4] {
            env.mkdir(&format!("big/d/h{i}"));
            fs::hard_link(&orig, big.join(format!("h{i}/link"))).unwrap();
        }
        env.mkdir("big/small");
        same_order_as_gnu(env.root(), &["-a", "big"]);
        same_order_as_gnu(env.root(), &["big"]);
    }
}

#[test]
fn a_hard_linked_file_comes_under_the_name_du_meets_first() {
    for env in [TestEnv::new(), TestEnv::in_memory()] {
        let first = env.file("h/zz/deep/orig", 9000);
        for (i, dir) in ["y", "a", "zz", "k"].iter().enumerate() {
            env.mkdir(&format!("h/{dir}"));
            fs::hard_link(&first, env.root().join(format!("h/{dir}/link{i}"))).unwrap();
        }
        fs::hard_link(&first, env.root().join("h/top")).unwrap();
        same_order_as_gnu(env.root(), &["-a", "h"]);
        same_order_as_gnu(env.root(), &["-a", "h/k", "h"]);
    }
}
