//! Pruning: `WalkBuilder::filter_entry` and `WalkBuilder::max_depth`, with
//! every engine, against a walk of the same tree by `std::fs::read_dir`
//! that applies the same rule.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use traverse::{DirTotals, DirVisitor, Engine, Event, FileType, Ignore, Totals, WalkBuilder};

mod testenv;

/// Every engine, as the CLI names them ([`testenv::ENGINES`]).
fn engines() -> Vec<Engine> {
    testenv::ENGINES
        .iter()
        .map(|e| e.parse().unwrap())
        .collect()
}

/// A tree four levels deep: files, symlinks and empty directories at
/// every level, directories named `skip` at levels 1 and 3, and a large
/// directory at level 2 (read in chunks) holding subdirectories.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("a/b/c/d")).unwrap();
    fs::create_dir_all(root.join("a/b/skip/e")).unwrap();
    fs::create_dir_all(root.join("skip/x")).unwrap();
    fs::create_dir_all(root.join("a/big")).unwrap();
    for (path, len) in [
        ("f1", 1),
        ("a/f2", 20),
        ("a/b/f3", 300),
        ("a/b/c/f4", 4000),
        ("a/b/skip/g4", 50),
        ("skip/g2", 7),
        ("skip/x/g3", 9),
    ] {
        fs::write(root.join(path), vec![b'x'; len]).unwrap();
    }
    std::os::unix::fs::symlink("f3", root.join("a/b/l3")).unwrap();
    std::os::unix::fs::symlink("a", root.join("l1")).unwrap();
    for i in 0..3000 {
        if i % 300 == 0 {
            fs::create_dir(root.join(format!("a/big/sub{i}"))).unwrap();
            fs::write(root.join(format!("a/big/sub{i}/inner")), b"abc").unwrap();
        } else {
            fs::write(root.join(format!("a/big/f{i}")), b"y").unwrap();
        }
    }
    dir
}

/// The rule of the tests' filter, on what a directory entry tells: leave
/// out directories named `skip` (and all below them), and regular files
/// deeper than level 2.
fn keep(name: &OsStr, dir: bool, regular: bool, depth: usize) -> bool {
    !((dir && name == "skip") || (regular && depth > 2))
}

/// What the reference walk finds: the totals, and every entry with its
/// depth.
struct Found {
    totals: Totals,
    entries: BTreeSet<(PathBuf, usize)>,
}

/// Walks `root` with `std::fs::read_dir`, leaving out what `filter` refuses
/// and what lies deeper than `max_depth`, and not reading directories at
/// `max_depth`.
fn reference(root: &Path, filter: bool, max_depth: Option<usize>) -> Found {
    let mut found = Found {
        totals: Totals::default(),
        entries: BTreeSet::new(),
    };
    let add = |found: &mut Found, path: &Path, depth: usize| {
        let meta = fs::symlink_metadata(path).unwrap();
        let t = &mut found.totals;
        let ft = meta.file_type();
        if ft.is_dir() {
            t.dirs += 1;
            t.dir_bytes += u128::from(meta.len());
        } else if ft.is_file() {
            t.files += 1;
        } else if ft.is_symlink() {
            t.symlinks += 1;
        } else {
            t.other += 1;
        }
        t.bytes += u128::from(meta.len());
        t.disk_bytes += u128::from(meta.blocks()) * 512;
        found.entries.insert((path.to_owned(), depth));
    };
    add(&mut found, root, 0);
    let mut stack = vec![(root.to_owned(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        if max_depth.is_some_and(|max| depth >= max) {
            continue;
        }
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let ft = entry.file_type().unwrap();
            let name = entry.file_name();
            if filter && !keep(&name, ft.is_dir(), ft.is_file(), depth + 1) {
                continue;
            }
            add(&mut found, &entry.path(), depth + 1);
            if ft.is_dir() {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    found
}

/// A walk with the tests' filter when `filter`, and `max_depth`.
fn builder(engine: Engine, jobs: usize, filter: bool, max_depth: Option<usize>) -> WalkBuilder {
    let mut builder = WalkBuilder::new().engine(engine).jobs(jobs);
    if filter {
        builder = builder.filter_entry(|e| {
            let ft = e.file_type();
            keep(
                e.name(),
                ft == FileType::Directory,
                ft == FileType::Regular,
                e.depth(),
            )
        });
    }
    if let Some(max) = max_depth {
        builder = builder.max_depth(max);
    }
    builder
}

/// Checks the totals, and in listing mode the entries and their depths, of
/// every engine against the reference.
fn check(filter: bool, max_depth: Option<usize>) {
    let dir = tree();
    let want = reference(dir.path(), filter, max_depth);
    for engine in engines() {
        for jobs in [1, 3] {
            let what = format!("{engine} -j {jobs}, filter {filter}, max_depth {max_depth:?}");
            let walk = builder(engine, jobs, filter, max_depth).build();
            let summary = walk.totals(dir.path());
            assert_eq!(summary.totals, want.totals, "{what}");
            assert!(!summary.partial, "{what}");

            let seen = Mutex::new(Vec::new());
            let listing = builder(engine, jobs, filter, max_depth).list(true).build();
            let summary = listing.run_with(dir.path(), |event| match event {
                Event::Entry(e) => seen.lock().unwrap().push((e.path().to_owned(), e.depth())),
                Event::Error(err) => panic!("{what}: {err}"),
            });
            let seen = seen.into_inner().unwrap();
            let got: BTreeSet<_> = seen.iter().cloned().collect();
            assert_eq!(got.len(), seen.len(), "{what}: an entry listed twice");
            assert_eq!(got, want.entries, "{what}");
            let counts = |t: &Totals| (t.files, t.dirs, t.symlinks, t.other);
            assert_eq!(counts(&summary.totals), counts(&want.totals), "{what}");
        }
    }
}

#[test]
fn the_reference_sees_the_whole_tree_and_prunes() {
    let dir = tree();
    let all = reference(dir.path(), false, None);
    assert_eq!(all.entries.iter().map(|e| e.1).max(), Some(4));
    assert_eq!(
        (all.totals.files, all.totals.dirs),
        (7 + 2990 + 10, 10 + 10)
    );
    let pruned = reference(dir.path(), true, None);
    // Of the files, f1 and a/f2 stay (a/big's are at level 3); of the
    // directories, the root, a, a/b, a/b/c, a/b/c/d, a/big and its 10
    // subdirectories.
    assert_eq!((pruned.totals.files, pruned.totals.dirs), (2, 1 + 5 + 10));
    assert_eq!(reference(dir.path(), false, Some(0)).entries.len(), 1);
}

#[test]
fn a_filter_prunes_directories_and_drops_files_in_every_engine() {
    check(true, None);
}

#[test]
fn max_depth_0_counts_the_root_only_in_every_engine() {
    check(false, Some(0));
}

#[test]
fn max_depth_1_and_2_count_directories_at_the_limit_without_reading_them() {
    check(false, Some(1));
    check(false, Some(2));
}

#[test]
fn max_depth_at_and_past_the_tree_s_depth_counts_everything() {
    let dir = tree();
    assert_eq!(
        reference(dir.path(), false, Some(4)).totals,
        reference(dir.path(), false, None).totals
    );
    check(false, Some(4));
}

#[test]
fn a_filter_and_max_depth_together_in_every_engine() {
    check(true, Some(2));
    check(true, Some(3));
}

/// The totals of the root, from a breakdown.
#[derive(Default)]
struct RootTotals(Mutex<Option<Totals>>);

impl DirVisitor for RootTotals {
    fn dir(&self, dir: &DirTotals<'_>) {
        if dir.depth() == 0 {
            *self.0.lock().unwrap() = Some(*dir.totals());
        }
    }
}

#[test]
fn a_breakdown_counts_the_directories_at_max_depth_in_their_parent() {
    let dir = tree();
    for max_depth in [0, 1, 2] {
        let want = reference(dir.path(), true, Some(max_depth)).totals;
        for engine in engines() {
            let root = Arc::new(RootTotals::default());
            let walk = builder(engine, 2, true, Some(max_depth)).build();
            let summary = walk.run_dirs(dir.path(), &Ignore, root.clone());
            assert_eq!(summary.totals, want, "{engine} max_depth {max_depth}");
            let got = root.0.lock().unwrap().take();
            assert_eq!(got, Some(want), "{engine} max_depth {max_depth}");
        }
    }
}
