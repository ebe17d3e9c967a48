//! traverse-mpi against traverse and du: every output mode, with 1 to 4
//! ranks, over shared memory and TCP.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::*;

fn sorted(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_output_mode_matches_traverse_on_a_generated_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    tree(&root, 300, 3000);
    let r = s(&root);
    for args in [
        vec![r],
        vec!["--json", r],
        vec!["-d", "1", r],
        vec!["-d", "2", "--json", r],
        vec!["--top", "7", r],
        vec!["--top", "5", "-a", "--disk-usage", r],
        vec!["-a", "-d", "2", "-h", r],
        vec!["--inodes", "-d", "1", r],
        vec!["-t", "40K", "-d", "3", r],
        vec!["-c", "-d", "1", r],
        vec!["-x", "-d", "1", r],
        vec!["--exclude", "d1*", "-d", "1", r],
        // du's options alone: du's lines for every directory, as traverse
        // prints them.
        vec!["-a", r],
        vec!["-c", r],
        vec!["-x", r],
        vec!["-t", "40K", r],
        vec!["-t", "-8K", "-a", r],
        vec!["-h", r],
        vec!["-A", r],
        vec!["-A", "-a", "-d", "2", r],
        vec!["--inodes", r],
        vec!["-d", "0", r],
        vec!["--exclude", "d1*", r],
        // Patterns on paths, as du matches them; a PATH matched itself.
        vec!["--exclude", "d1/d3", "--exclude", "*/d2/*", "-d", "2", r],
        vec!["--exclude", "t", r],
        vec!["--exclude", "t", "--json", r],
        vec!["--count-links", r],
        vec!["-c", "--json", r],
        vec!["-x", "--json", r],
    ] {
        same_as_traverse(&args, false);
    }
}

#[test]
fn totals_and_lines_match_du() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    tree(&root, 200, 2000);
    let r = s(&root);
    let bytes: u128 = du(&["-sb", r]).split('\t').next().unwrap().parse().unwrap();
    let disk: u128 = du(&["-sB1", r])
        .split('\t')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    for ranks in RANKS {
        let out = run(&mut mpi(ranks, "vader,self", &["--json", r]));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(&format!("\"bytes\":{bytes},")),
            "{ranks}: {text}"
        );
        assert!(
            text.contains(&format!("\"disk_bytes\":{disk},")),
            "{ranks}: {text}"
        );
        // The same lines as du's; du prints them in directory order.
        let lines = run(&mut mpi(ranks, "tcp,self", &["-d", "2", r]));
        assert_eq!(
            sorted(&String::from_utf8(lines.stdout).unwrap()),
            sorted(&du(&["-d", "2", r]))
        );
    }
}

#[test]
fn hard_links_across_subtrees_count_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    // Many subtrees, so that ranks take different ones; every file has a
    // name in two or three of them.
    for i in 0..40 {
        file(&root.join(format!("a{i}/f")), 1000 + i * 10);
        std::fs::create_dir_all(root.join(format!("b{i}/deep"))).unwrap();
        std::fs::hard_link(
            root.join(format!("a{i}/f")),
            root.join(format!("b{i}/deep/g")),
        )
        .unwrap();
        if i % 3 == 0 {
            std::fs::hard_link(root.join(format!("a{i}/f")), root.join(format!("c{i}"))).unwrap();
        }
    }
    let r = s(&root);
    for args in [
        vec![r],
        vec!["-d", "2", "--json", r],
        vec!["--inodes", "-d", "1", r],
        vec!["-a", "-d", "9", r],
        vec!["--top", "10", r],
        vec!["--count-links", "-d", "1", r],
    ] {
        same_as_traverse(&args, false);
    }
    let a = root.join("a1");
    let b = root.join("b1");
    // Several PATHs: an inode counted under the first is not counted again.
    same_as_traverse(&[s(&a), s(&b)], false);
    same_as_traverse(&["-c", "-d", "1", s(&a), s(&b)], false);
    // du attributes an inode to the name it meets first: only the total
    // line is the same.
    let ours = String::from_utf8(run(&mut mpi(3, "vader,self", &["-d", "1", r])).stdout).unwrap();
    assert_eq!(ours.lines().last(), du(&["-d", "1", r]).lines().last());
}

#[test]
fn unreadable_directories_are_reported_once_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    tree(&root, 60, 300);
    for d in ["d1", "d2", "d5/d17"] {
        let p = root.join(d);
        if p.exists() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
        }
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = s(&root);
    same_as_traverse(&[r], true);
    same_as_traverse(&["-d", "1", "--json", r], true);
    // du's messages with du's lines.
    same_as_traverse(&["-d", "1", r], true);
}

#[test]
fn a_directory_of_200_000_entries_is_shared_by_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..200_000u32 {
        std::fs::File::create(big.join(format!("entry-{i}"))).unwrap();
        if i % 1000 == 0 {
            std::fs::write(big.join(format!("entry-{i}")), vec![1u8; i as usize / 100]).unwrap();
        }
    }
    let r = s(dir.path());
    same_as_traverse(&["--json", r], false);
    same_as_traverse(&["--top", "3", "-a", r], false);
}

/// du's order across ranks: a directory of more than 10 000 entries, read
/// in shares, whose entries du sorts by inode (on disk; not on tmpfs),
/// with freed inodes taken again so that inode order is neither listing
/// nor name order, and one inode named in ten of its subdirectories
/// (counted under the one du meets first). Every line in du's order, as
/// GNU du prints them.
#[test]
fn du_order_and_first_names_cross_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..12_000u32 {
        std::fs::File::create(big.join(format!("entry-{i}"))).unwrap();
    }
    for i in (0..900).step_by(9) {
        std::fs::remove_file(big.join(format!("entry-{i}"))).unwrap();
        file(&big.join(format!("new-{i}")), i as usize);
    }
    let orig = big.join("h7/link");
    file(&orig, 70_000);
    for i in [3, 9, 0, 5, 1, 8, 2, 6, 4] {
        std::fs::create_dir(big.join(format!("h{i}"))).unwrap();
        std::fs::hard_link(&orig, big.join(format!("h{i}/link"))).unwrap();
    }
    let r = s(dir.path());
    assert_eq!(
        String::from_utf8(run(&mut traverse(&["-a", r])).stdout).unwrap(),
        du(&["-a", r])
    );
    same_as_traverse(&["-a", r], false);
}

#[test]
fn a_deep_chain_is_walked_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = dir.path().join("c");
    for i in 0..1500 {
        p.push("d");
        if i % 100 == 0 {
            file(&p.join("f"), i);
        }
    }
    std::fs::create_dir_all(&p).unwrap();
    let r = dir.path().join("c");
    same_as_traverse(&[s(&r)], false);
    same_as_traverse(&["--top", "2", s(&r)], false);
}

/// 4 000 inodes with two names each, in different directories below
/// `root`: more names than one batch holds for any rank.
fn linked_tree(root: &Path) {
    for d in 0..40 {
        for f in 0..100 {
            let a = root.join(format!("a{d}/file-with-a-longish-name-{f}"));
            file(&a, 100 + f);
            let b = root.join(format!("b{}/deep/link-{d}-{f}", (d * 7 + f) % 40));
            std::fs::create_dir_all(b.parent().unwrap()).unwrap();
            std::fs::hard_link(&a, &b).unwrap();
        }
    }
}

/// What `TRAVERSE_MPI_STATS` says of each rank's batches of hard links:
/// (the most on their way at once, how many were sent). Each rank's line
/// must arrive whole: the ranks share mpirun's stderr, and a line written
/// in pieces was cut by another rank's (in about a third of the runs).
fn batch_stats(stderr: &str) -> Vec<(u64, u64)> {
    stderr
        .lines()
        .filter(|l| l.contains("stats:"))
        .map(|l| {
            let words: Vec<&str> = l
                .strip_prefix("traverse-mpi stats: rank ")
                .and_then(|l| l.strip_suffix(" batches of hard links"))
                .filter(|l| !l.contains("stats:"))
                .map(|l| l.split(' ').collect())
                .unwrap_or_default();
            let n = |at: usize| words.get(at).and_then(|w| w.parse::<u64>().ok());
            match (words.len(), n(7), n(11)) {
                (12, Some(peak), Some(sent)) => (peak, sent),
                _ => panic!("a stats line cut by another: {l:?}\n{stderr}"),
            }
        })
        .collect()
}

#[test]
fn many_hard_links_go_to_their_owners_in_batches_during_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    linked_tree(&root);
    let r = s(&root);
    for args in [
        vec![r],
        vec!["--inodes", "-d", "2", r],
        vec!["-a", "-d", "1", r],
    ] {
        same_as_traverse(&args, false);
    }
    // The batches left during the walk: the stats of every rank say how
    // many each sent.
    let out = run(mpi(4, "vader,self", &[r]).env("TRAVERSE_MPI_STATS", "1"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let batches: u64 = batch_stats(&stderr).iter().map(|b| b.1).sum();
    assert!(batches >= 4, "{stderr}");
}

/// With the cap on batches in flight set to one, a rank that has a batch
/// on its way takes in the others' before it sends the next: every rank
/// reports at most one in flight, batches still leave during the walk, and
/// the lines are still traverse's (each inode in the directory of the name
/// du meets first), their total du's.
#[test]
fn batches_of_hard_links_in_flight_stay_under_their_cap() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    linked_tree(&root);
    let r = s(&root);
    let want = String::from_utf8(run(&mut traverse(&["-d", "1", r])).stdout).unwrap();
    assert_eq!(want.lines().last(), du(&["-s", r]).lines().next());
    for btl in TRANSPORTS {
        let mut cmd = mpi(4, btl, &["-d", "1", r]);
        cmd.env("TRAVERSE_MPI_STATS", "1")
            .env("TRAVERSE_MPI_IN_FLIGHT", "1");
        let out = run(&mut cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want,
            "{btl}: {stderr}"
        );
        let stats = batch_stats(&stderr);
        assert_eq!(stats.len(), 4, "{btl}: {stderr}");
        assert!(stats.iter().all(|&(peak, _)| peak <= 1), "{btl}: {stderr}");
        assert!(
            stats.iter().map(|b| b.1).sum::<u64>() >= 4,
            "{btl}: {stderr}"
        );
    }
}

#[test]
fn a_directory_given_twice_or_below_another_path_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    tree(&root, 40, 200);
    let (r, sub) = (s(&root), root.join("d1"));
    let sub = s(&sub);
    let slash = format!("{r}/");
    let missing = dir.path().join("missing");
    for args in [
        vec![r, r],
        vec![sub, r],
        vec![r, sub],
        vec![&slash, r],
        vec!["-d", "1", sub, r, sub],
        vec!["-c", sub, r],
        vec!["-a", "-c", r, sub, r],
        vec!["--json", sub, r, sub],
        vec!["--top", "3", sub, r],
    ] {
        same_as_traverse(&args, false);
    }
    // A PATH that does not exist: an error, and no line in du's output.
    for args in [vec![s(&missing), r], vec!["-d", "1", s(&missing), r]] {
        same_as_traverse(&args, false);
    }
}

#[test]
fn paths_longer_than_path_max_are_walked_as_traverse_walks_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    std::fs::create_dir(&root).unwrap();
    // 30 levels of 200-byte names: paths of 6 000 bytes and more at the
    // bottom, beyond PATH_MAX (4 096), so made from each level's parent;
    // a file here and there, and a side branch at the 25th level.
    let name = "n".repeat(200);
    let mut at = open_dir_at(None, root.to_str().unwrap());
    for i in 1..=30 {
        at = mkdir_at(&at, &name);
        if i % 4 == 0 {
            write_at(&at, &format!("f{i}"), i * 1000);
        }
        if i == 25 {
            let side = mkdir_at(&mkdir_at(&at, "side"), "x");
            write_at(&side, "g", 3);
        }
    }
    let r = s(&root);
    for args in [
        vec![r],
        vec!["--json", r],
        vec!["-a", r],
        vec!["-d", "28", "--json", r],
        vec!["--top", "3", r],
        vec!["--inodes", "-d", "26", r],
    ] {
        same_as_traverse(&args, false);
    }
}
