//! Listings sorted per directory (`WalkBuilder::sort_by`), with every
//! engine, against walkdir's `sort_by_file_name` on the same tree: each
//! directory's entries come together, in walkdir's order, however many
//! workers read the directory's parts.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use traverse::{Engine, Event, FileType, WalkBuilder};

#[cfg(feature = "reference-engines")]
const ENGINES: &[Engine] = &[Engine::Threads, Engine::Uring, Engine::Std, Engine::Tokio];
#[cfg(not(feature = "reference-engines"))]
const ENGINES: &[Engine] = &[Engine::Threads, Engine::Uring];

/// Directories of several sizes: one large enough to be read and stat'ed
/// in several parts by several workers (above the engines' chunk of 2 048
/// entries), names whose byte order differs from a human's.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for d in ["a/b/c", "Z", "big", "a/empty"] {
        fs::create_dir_all(r.join(d)).unwrap();
    }
    for i in (0..6000).rev() {
        fs::write(r.join(format!("big/f{i}")), b"").unwrap();
    }
    for f in [
        "a/b/c/x", "a/b/B", "a/b/a", "Z/1", "Z/10", "Z/9", "é", "e", "E",
    ] {
        fs::write(r.join(f), b"x").unwrap();
    }
    std::os::unix::fs::symlink("a", r.join("link")).unwrap();
    dir
}

/// The listing as it came: every entry's path, in order.
fn listed(builder: WalkBuilder, root: &Path) -> Vec<PathBuf> {
    let got = Mutex::new(Vec::new());
    builder
        .list(true)
        .build()
        .run_with(root, |event| match event {
            Event::Entry(e) => got.lock().unwrap().push(e.path().to_owned()),
            Event::Error(e) => panic!("{e}"),
        });
    got.into_inner().unwrap()
}

/// The listing cut into runs of one parent each, in order; panics when a
/// directory's entries are split into more than one run.
fn runs(list: &[PathBuf]) -> BTreeMap<PathBuf, Vec<OsString>> {
    let mut runs: BTreeMap<PathBuf, Vec<OsString>> = BTreeMap::new();
    let mut current: Option<&Path> = None;
    for path in &list[1..] {
        let parent = path.parent().unwrap();
        if current != Some(parent) {
            assert!(
                !runs.contains_key(parent),
                "the entries of {} are split",
                parent.display()
            );
            current = Some(parent);
        }
        let names = runs.entry(parent.to_owned()).or_default();
        names.push(path.file_name().unwrap().to_owned());
    }
    runs
}

/// walkdir's listing of each directory, sorted by its `sort_by_file_name`.
fn walkdir_runs(root: &Path) -> BTreeMap<PathBuf, Vec<OsString>> {
    let mut runs: BTreeMap<PathBuf, Vec<OsString>> = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
        let e = e.unwrap();
        let parent = e.path().parent().unwrap().to_owned();
        runs.entry(parent)
            .or_default()
            .push(e.file_name().to_owned());
    }
    runs
}

#[test]
fn each_directory_comes_whole_in_walkdirs_order() {
    let dir = tree();
    let want = walkdir_runs(dir.path());
    for &engine in ENGINES {
        // With metadata every entry is stat'ed, and the large directory's
        // stats are shared out in parts.
        for (jobs, metadata) in [(1, false), (4, false), (4, true)] {
            let builder = WalkBuilder::new()
                .engine(engine)
                .jobs(jobs)
                .list_metadata(metadata)
                .sort_by_file_name();
            let list = listed(builder, dir.path());
            assert_eq!(list[0], dir.path(), "{engine:?}: the root first");
            let what = format!("{engine:?} with {jobs} jobs, metadata {metadata}");
            assert_eq!(runs(&list), want, "{what}");
        }
    }
}

#[test]
fn a_custom_order_and_metadata() {
    let dir = tree();
    // Largest name first, directories before the rest.
    let mut want = walkdir_runs(dir.path());
    for names in want.values_mut() {
        names.reverse();
    }
    for &engine in ENGINES {
        let got = Mutex::new(Vec::new());
        let walk = WalkBuilder::new()
            .engine(engine)
            .list(true)
            .list_metadata(true)
            .min_depth(1)
            .sort_by(|a, b| b.path().file_name().cmp(&a.path().file_name()))
            .build();
        walk.run_with(dir.path(), |event| {
            if let Event::Entry(e) = event {
                let meta = e.metadata().expect("metadata in a sorted listing");
                let is_dir = e.file_type() == FileType::Directory;
                assert_eq!(meta.is_dir(), is_dir, "{}", e.path().display());
                got.lock().unwrap().push(e.path().to_owned());
            }
        });
        let mut list = got.into_inner().unwrap();
        list.insert(0, dir.path().to_owned());
        assert_eq!(runs(&list), want, "{engine:?}");
    }
}

#[test]
fn an_unsorted_listing_lists_the_same_entries() {
    let dir = tree();
    for &engine in ENGINES {
        let plain: BTreeSet<_> = listed(WalkBuilder::new().engine(engine), dir.path())
            .into_iter()
            .collect();
        let sorted = listed(
            WalkBuilder::new().engine(engine).sort_by_file_name(),
            dir.path(),
        );
        assert_eq!(sorted.len(), plain.len(), "{engine:?}: listed twice");
        assert_eq!(sorted.into_iter().collect::<BTreeSet<_>>(), plain);
    }
}
