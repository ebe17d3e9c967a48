//! walkdir's test suite (`src/tests/recursive.rs`), the cases that apply
//! to a parallel walk that lists entries in no order, rewritten against
//! `traverse::Walk` with every engine, and compared with walkdir itself
//! run on the same tree.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use traverse::{Engine, Event, FileType, WalkBuilder};

// The reference engines are there when the package's own tests build it
// (its dev-dependency on itself); a crate unpacked from crates.io has not
// that dev-dependency, and tests the engines a user gets.
#[cfg(feature = "reference-engines")]
const ENGINES: &[Engine] = &[Engine::Threads, Engine::Uring, Engine::Std, Engine::Tokio];
#[cfg(not(feature = "reference-engines"))]
const ENGINES: &[Engine] = &[Engine::Threads, Engine::Uring];

/// path, depth, type ('d', 'f', 'l', 'o'), whether the path is a link.
type Ent = (PathBuf, usize, char, bool);

fn kind(ft: FileType) -> char {
    match ft {
        FileType::Directory => 'd',
        FileType::Regular => 'f',
        FileType::Symlink => 'l',
        _ => 'o',
    }
}

/// What traverse lists, and its errors (path, depth).
fn ours(builder: WalkBuilder, root: &Path) -> (BTreeSet<Ent>, Vec<(PathBuf, Option<usize>)>) {
    let got = Mutex::new((BTreeSet::new(), Vec::new()));
    builder.list(true).build().run_with(root, |event| {
        let mut got = got.lock().unwrap();
        match event {
            Event::Entry(e) => {
                let ent = (
                    e.path().to_owned(),
                    e.depth(),
                    kind(e.file_type()),
                    e.path_is_symlink(),
                );
                assert!(got.0.insert(ent), "listed twice: {}", e.path().display());
            }
            Event::Error(e) => got.1.push((e.path().to_owned(), e.depth())),
        }
    });
    got.into_inner().unwrap()
}

/// walkdir's walk of the same tree: never following a link, a link root
/// included (traverse, like du, counts a link it is given).
fn theirs(w: walkdir::WalkDir) -> BTreeSet<Ent> {
    w.follow_root_links(false)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let ft = e.file_type();
            let k = if ft.is_dir() {
                'd'
            } else if ft.is_file() {
                'f'
            } else if ft.is_symlink() {
                'l'
            } else {
                'o'
            };
            (e.path().to_owned(), e.depth(), k, e.path_is_symlink())
        })
        .collect()
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    fs::create_dir_all(r.join("a/b/c")).unwrap();
    fs::create_dir_all(r.join("many/x")).unwrap();
    for f in ["a/f", "a/b/g", "a/b/c/h", "many/1", "many/2", "many/x/3"] {
        fs::write(r.join(f), b"data").unwrap();
    }
    symlink(r.join("a"), r.join("a-link")).unwrap();
    symlink("a/f", r.join("f-link")).unwrap();
    symlink("nowhere", r.join("dangling")).unwrap();
    symlink(r.join("a"), r.join("a/b/c/up")).unwrap();
    dir
}

#[test]
fn the_builder_and_the_walk_are_send_and_sync() {
    // walkdir: send_sync_traits.
    fn send_sync<T: Send + Sync>() {}
    send_sync::<WalkBuilder>();
    send_sync::<traverse::Walk>();
    send_sync::<traverse::Error>();
}

#[test]
fn trees_with_links_match_walkdir() {
    // walkdir: one_dir, one_file, one_dir_one_file, many_files, many_dirs,
    // many_mixed, nested, siblings, sym_file_nofollow, sym_dir_nofollow,
    // sym_noloop, sym_self_loop_no_error.
    let dir = tree();
    symlink("self", dir.path().join("self")).unwrap();
    let want = theirs(walkdir::WalkDir::new(dir.path()));
    for &engine in ENGINES {
        let (got, errs) = ours(WalkBuilder::new().engine(engine), dir.path());
        assert!(errs.is_empty(), "{engine:?}: {errs:?}");
        assert_eq!(got, want, "{engine:?}");
    }
}

#[test]
fn a_root_that_is_a_file_or_a_link() {
    // walkdir: empty_file, sym_root_file_nofollow,
    // sym_root_dir_nofollow_root_nofollow,
    // broken_sym_root_dir_nofollow_and_root_nofollow.
    let dir = tree();
    let r = dir.path();
    for root in ["a/f", "f-link", "a-link", "dangling"] {
        let root = r.join(root);
        let want = theirs(walkdir::WalkDir::new(&root));
        assert_eq!(want.len(), 1);
        for &engine in ENGINES {
            let (got, errs) = ours(WalkBuilder::new().engine(engine), &root);
            assert!(errs.is_empty(), "{engine:?}: {errs:?}");
            assert_eq!(got, want, "{engine:?} {}", root.display());
            let totals = WalkBuilder::new()
                .engine(engine)
                .build()
                .totals(&root)
                .totals;
            let meta = fs::symlink_metadata(&root).unwrap();
            assert_eq!(totals.bytes, u128::from(meta.len()), "{engine:?}");
            let (files, links) = (totals.files, totals.symlinks);
            assert_eq!(
                (files, links),
                (u64::from(meta.is_file()), u64::from(meta.is_symlink()))
            );
        }
    }
}

#[test]
fn min_and_max_depth_match_walkdir() {
    // walkdir: min_depth_1, min_depth_2, max_depth_0, max_depth_1,
    // max_depth_2, min_max_depth_diff_nada, min_max_depth_diff_0,
    // min_max_depth_diff_1.
    let dir = tree();
    for (min, max) in [
        (1, 9),
        (2, 9),
        (0, 0),
        (0, 1),
        (0, 2),
        (3, 2),
        (1, 1),
        (1, 2),
    ] {
        let want = theirs(
            walkdir::WalkDir::new(dir.path())
                .min_depth(min)
                .max_depth(max),
        );
        for &engine in ENGINES {
            let b = WalkBuilder::new()
                .engine(engine)
                .min_depth(min)
                .max_depth(max);
            let (got, _) = ours(b, dir.path());
            assert_eq!(got, want, "{engine:?} min {min} max {max}");
        }
    }
}

#[test]
fn errors_name_their_depth() {
    // walkdir: the depth of errors (sym_loop_detect's `err.depth()`): a
    // missing root at 0, a directory gone before it is opened at its own.
    let dir = tree();
    for &engine in ENGINES {
        let missing = dir.path().join("missing");
        let (_, errs) = ours(WalkBuilder::new().engine(engine), &missing);
        assert_eq!(errs, [(missing.clone(), Some(0))], "{engine:?}");
    }
    for &engine in ENGINES {
        let r = tempfile::tempdir().unwrap();
        fs::create_dir_all(r.path().join("a/gone")).unwrap();
        let gone = r.path().join("a/gone");
        let victim = gone.clone();
        let b = WalkBuilder::new().engine(engine).filter_entry(move |e| {
            if e.name() == "gone" {
                let _ = fs::remove_dir(&victim);
            }
            true
        });
        let (_, errs) = ours(b, r.path());
        assert_eq!(errs, [(gone, Some(2))], "{engine:?}");
    }
}

/// A listing in the order it came: path, depth.
fn in_order(builder: WalkBuilder, root: &Path) -> Vec<(PathBuf, usize)> {
    let got = Mutex::new(Vec::new());
    builder
        .list(true)
        .build()
        .run_with(root, |event| match event {
            Event::Entry(e) => got.lock().unwrap().push((e.path().to_owned(), e.depth())),
            Event::Error(e) => panic!("{e}"),
        });
    got.into_inner().unwrap()
}

/// Panics unless every path comes after everything below it: after each
/// of its entries, which come after theirs.
fn assert_contents_first(list: &[(PathBuf, usize)], what: &str) {
    let at: BTreeMap<&Path, usize> = list.iter().enumerate().map(|(i, e)| (&*e.0, i)).collect();
    for (i, (path, _)) in list.iter().enumerate() {
        if let Some(&parent) = path.parent().and_then(|p| at.get(p)) {
            assert!(
                parent > i,
                "{what}: {} before its contents",
                list[parent].0.display()
            );
        }
    }
}

/// Each directory's entries in the order listed (not necessarily together).
fn per_dir(list: &[(PathBuf, usize)]) -> BTreeMap<PathBuf, Vec<PathBuf>> {
    let mut dirs: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for (path, depth) in list {
        if *depth > 0 {
            let parent = path.parent().unwrap().to_owned();
            dirs.entry(parent).or_default().push(path.clone());
        }
    }
    dirs
}

/// The suite's tree with a directory large enough to be read in parts by
/// several workers, and a deeper chain.
fn wide_tree() -> tempfile::TempDir {
    let dir = tree();
    let r = dir.path();
    fs::create_dir_all(r.join("deep/1/2/3/4")).unwrap();
    fs::create_dir_all(r.join("wide")).unwrap();
    for i in (0..3000).rev() {
        fs::write(r.join(format!("wide/f{i}")), b"").unwrap();
    }
    for i in 0..40 {
        fs::create_dir_all(r.join(format!("wide/d{i}/e"))).unwrap();
        fs::write(r.join(format!("wide/d{i}/e/g")), b"").unwrap();
    }
    dir
}

#[test]
fn contents_first_lists_a_file_then_the_root() {
    // walkdir: contents_first.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a"), b"").unwrap();
    let want: Vec<PathBuf> = walkdir::WalkDir::new(dir.path())
        .contents_first(true)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    assert_eq!(want, [dir.path().join("a"), dir.path().to_owned()]);
    for &engine in ENGINES {
        let b = WalkBuilder::new().engine(engine).contents_first(true);
        let got: Vec<PathBuf> = in_order(b, dir.path()).into_iter().map(|e| e.0).collect();
        assert_eq!(got, want, "{engine:?}");
    }
}

#[test]
fn contents_first_matches_walkdir_on_a_larger_tree() {
    // walkdir: contents_first, on the tree of nested and many_mixed, with
    // min_depth and max_depth as in min_max_depth_diff_1.
    let dir = wide_tree();
    for (min, max) in [(0, 99), (1, 99), (0, 2), (2, 3), (0, 0)] {
        let theirs: Vec<(PathBuf, usize)> = walkdir::WalkDir::new(dir.path())
            .contents_first(true)
            .min_depth(min)
            .max_depth(max)
            .into_iter()
            .map(|e| e.map(|e| (e.path().to_owned(), e.depth())).unwrap())
            .collect();
        assert_contents_first(&theirs, "walkdir");
        let want: BTreeSet<_> = theirs.iter().cloned().collect();
        for &engine in ENGINES {
            for jobs in [1, 4] {
                let b = WalkBuilder::new()
                    .engine(engine)
                    .jobs(jobs)
                    .contents_first(true)
                    .min_depth(min)
                    .max_depth(max);
                let list = in_order(b, dir.path());
                let what = format!("{engine:?}, {jobs} jobs, depths {min}..={max}");
                assert_eq!(list.len(), want.len(), "{what}: listed twice");
                assert_eq!(
                    list.iter().cloned().collect::<BTreeSet<_>>(),
                    want,
                    "{what}"
                );
                assert_contents_first(&list, &what);
            }
        }
    }
}

#[test]
fn contents_first_and_sorted_match_walkdir() {
    // walkdir: contents_first with sort_by_file_name, and sort_by (largest
    // name first): each directory's entries in walkdir's order, together,
    // after everything below them.
    let dir = wide_tree();
    let theirs = |w: walkdir::WalkDir| -> Vec<(PathBuf, usize)> {
        w.contents_first(true)
            .into_iter()
            .map(|e| e.map(|e| (e.path().to_owned(), e.depth())).unwrap())
            .collect()
    };
    let by_name = theirs(walkdir::WalkDir::new(dir.path()).sort_by_file_name());
    let reversed =
        theirs(walkdir::WalkDir::new(dir.path()).sort_by(|a, b| b.file_name().cmp(a.file_name())));
    for &engine in ENGINES {
        for jobs in [1, 4] {
            let what = format!("{engine:?}, {jobs} jobs");
            let b = WalkBuilder::new()
                .engine(engine)
                .jobs(jobs)
                .contents_first(true);
            let list = in_order(b.clone().sort_by_file_name(), dir.path());
            assert_contents_first(&list, &what);
            assert_eq!(per_dir(&list), per_dir(&by_name), "{what}");
            assert_eq!(list.last(), by_name.last(), "{what}: the root last");
            let b = b.sort_by(|a, b| b.path().file_name().cmp(&a.path().file_name()));
            let list = in_order(b, dir.path());
            assert_contents_first(&list, &what);
            assert_eq!(per_dir(&list), per_dir(&reversed), "{what}, reversed");
            // Each directory's entries come together.
            let mut parents: Vec<&Path> = list[..list.len() - 1]
                .iter()
                .map(|(p, _)| p.parent().unwrap())
                .collect();
            parents.dedup();
            assert_eq!(
                parents.len(),
                per_dir(&list).len(),
                "{what}: a directory split"
            );
        }
    }
}

#[test]
fn followed_links_match_walkdir() {
    // walkdir: sym_file_follow, sym_dir_follow: a link followed has its
    // target's type and `path_is_symlink()`. Every path to a directory is
    // walked, as walkdir walks them, with `count_links` (without it, one
    // reached twice is walked once, as `du -L` counts). The reference
    // engines follow no link.
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    fs::create_dir_all(r.join("a/b")).unwrap();
    fs::write(r.join("a/f"), b"data").unwrap();
    fs::write(r.join("a/b/g"), b"data").unwrap();
    symlink(r.join("a"), r.join("a-link")).unwrap();
    symlink("a/f", r.join("f-link")).unwrap();
    symlink("../f", r.join("a/b/up-f")).unwrap();
    let want = theirs(walkdir::WalkDir::new(r).follow_links(true));
    assert!(want.contains(&(r.join("a-link/b/up-f"), 3, 'f', true)));
    for engine in [Engine::Threads, Engine::Uring] {
        for sorted in [false, true] {
            let b = WalkBuilder::new()
                .engine(engine)
                .follow_links(true)
                .count_links(true);
            let b = if sorted { b.sort_by_file_name() } else { b };
            let (got, errs) = ours(b, r);
            assert!(errs.is_empty(), "{engine:?}: {errs:?}");
            assert_eq!(got, want, "{engine:?}, sorted {sorted}");
        }
    }
}
