//! walkdir's own test suite (`src/tests/recursive.rs`), case by case,
//! rewritten against `tokio_uring_getdents::walk`: each case builds the
//! tree walkdir's builds, walks it with the same options through both of
//! our walks (the default one, on every backend, where the options allow
//! it; the walk in order), and compares with walkdir itself, run on the
//! same tree as the reference, and with what walkdir's case asserts.

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use tokio_uring_getdents::fs::{FileType, STATX_TYPE};
use tokio_uring_getdents::walk::{Visit, WalkBuilder, WalkEntry};
use tokio_uring_getdents::PathError;

/// An entry as both walks report it: path, depth, type ('d', 'f', 'l' or
/// 'o'), whether the path is a link, the metadata's type.
type Ent = (PathBuf, usize, char, bool, char);
/// An error: path, depth, loop ancestor.
type Err = (Option<PathBuf>, usize, Option<PathBuf>);

fn kind(ft: FileType) -> char {
    match ft {
        FileType::Directory => 'd',
        FileType::Regular => 'f',
        FileType::Symlink => 'l',
        _ => 'o',
    }
}

fn std_kind(ft: fs::FileType) -> char {
    if ft.is_dir() {
        'd'
    } else if ft.is_file() {
        'f'
    } else if ft.is_symlink() {
        'l'
    } else {
        'o'
    }
}

/// The options a case sets, on both walkers.
#[derive(Clone, Copy, Default)]
struct Opts {
    follow: bool,
    root_nofollow: bool,
    min_depth: usize,
    max_depth: Option<usize>,
    contents_first: bool,
    max_open: Option<usize>,
}

impl Opts {
    fn needs_order(&self) -> bool {
        self.follow || self.contents_first
    }

    fn ours(&self, root: &Path) -> WalkBuilder {
        let mut b = WalkBuilder::new(root)
            .follow_links(self.follow)
            .follow_root_links(!self.root_nofollow)
            .min_depth(self.min_depth)
            .contents_first(self.contents_first)
            .statx(STATX_TYPE);
        if let Some(d) = self.max_depth {
            b = b.max_depth(d);
        }
        if let Some(n) = self.max_open {
            b = b.max_open(n);
        }
        b
    }

    fn walkdir(&self, root: &Path) -> walkdir::WalkDir {
        let mut w = walkdir::WalkDir::new(root)
            .follow_links(self.follow)
            .follow_root_links(!self.root_nofollow)
            .min_depth(self.min_depth)
            .contents_first(self.contents_first);
        if let Some(d) = self.max_depth {
            w = w.max_depth(d);
        }
        if let Some(n) = self.max_open {
            w = w.max_open(n);
        }
        w
    }
}

fn ours_of(e: &WalkEntry) -> Ent {
    let meta = e.metadata().map_or('?', |m| kind(m.file_type()));
    let link = e.path_is_symlink();
    (
        e.path().to_owned(),
        e.depth(),
        kind(e.file_type()),
        link,
        meta,
    )
}

fn our_err(e: &std::io::Error) -> Err {
    let p = PathError::of(e).unwrap_or_else(|| panic!("no PathError in {e:?}"));
    let depth = p.depth().unwrap_or_else(|| panic!("no depth in {e:?}"));
    (
        Some(p.path().to_owned()),
        depth,
        p.loop_ancestor().map(Path::to_owned),
    )
}

async fn run_ours(builder: WalkBuilder) -> (Vec<Ent>, Vec<Err>) {
    let mut walk = builder.build();
    let (mut ents, mut errs) = (Vec::new(), Vec::new());
    while let Some(item) = walk.next().await {
        match item {
            Ok(e) => ents.push(ours_of(&e)),
            Err(e) => errs.push(our_err(&e)),
        }
    }
    (ents, errs)
}

fn run_walkdir(w: walkdir::WalkDir) -> (Vec<Ent>, Vec<Err>) {
    let (mut ents, mut errs) = (Vec::new(), Vec::new());
    for item in w {
        match item {
            Ok(e) => {
                let meta = std_kind(e.metadata().unwrap().file_type());
                let ft = std_kind(e.file_type());
                ents.push((
                    e.path().to_owned(),
                    e.depth(),
                    ft,
                    e.path_is_symlink(),
                    meta,
                ));
            }
            Err(e) => errs.push((
                e.path().map(Path::to_owned),
                e.depth(),
                e.loop_ancestor().map(Path::to_owned),
            )),
        }
    }
    (ents, errs)
}

/// Walks `root` with `opts` every way we can and checks each against
/// walkdir; returns walkdir's result (sorted by path) for the case's own
/// assertions. In order (sorted by name), the sequences must be equal;
/// otherwise the sets.
fn check(root: &Path, opts: Opts) -> (Vec<Ent>, Vec<Err>) {
    let (mut want, mut want_errs) = run_walkdir(opts.walkdir(root).sort_by_file_name());
    let ordered = tokio_uring::start(run_ours(opts.ours(root).sort_by_file_name()));
    assert_eq!(ordered.0, want, "in order, sorted by name");
    let mut got_errs = ordered.1;
    got_errs.sort();
    want_errs.sort();
    assert_eq!(got_errs, want_errs, "errors, in order");
    want.sort();
    let mut ways: Vec<(String, WalkBuilder)> = Vec::new();
    if !opts.needs_order() {
        for choice in common::backends() {
            let b = opts.ours(root).dir_builder(common::builder(choice));
            ways.push((format!("default walk, {choice:?}"), b));
        }
    }
    // The walk in order, each directory in the order read: the same set.
    let unsorted = opts.ours(root).sort_by(|_, _| std::cmp::Ordering::Equal);
    ways.push(("in order, unsorted".into(), unsorted));
    for (what, builder) in ways {
        let (mut got, mut errs) = tokio_uring::start(run_ours(builder));
        got.sort();
        errs.sort();
        assert_eq!(got, want, "{what}");
        assert_eq!(errs, want_errs, "{what}: errors");
    }
    (want, want_errs)
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn mkdirs(root: &Path, dirs: &[&str]) {
    for d in dirs {
        fs::create_dir_all(root.join(d)).unwrap();
    }
}

fn touch(root: &Path, files: &[&str]) {
    for f in files {
        fs::write(root.join(f), b"").unwrap();
    }
}

fn paths(ents: &[Ent]) -> Vec<PathBuf> {
    ents.iter().map(|e| e.0.clone()).collect()
}

fn follow() -> Opts {
    Opts {
        follow: true,
        ..Opts::default()
    }
}

#[test]
fn the_builder_and_entries_are_send_and_sync() {
    // walkdir: send_sync_traits.
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<WalkBuilder>();
    send_sync::<WalkEntry>();
    send_sync::<PathError>();
    send::<tokio_uring_getdents::walk::WalkReceiver>();
}

#[test]
fn an_empty_root() {
    // walkdir: empty, empty_follow.
    let dir = tmp();
    for opts in [Opts::default(), follow()] {
        let (ents, errs) = check(dir.path(), opts);
        assert!(errs.is_empty());
        assert_eq!(ents.len(), 1);
        assert_eq!((ents[0].1, ents[0].2, ents[0].3), (0, 'd', false));
    }
}

#[test]
fn a_root_that_is_a_file() {
    // walkdir: empty_file, empty_file_follow.
    let dir = tmp();
    touch(dir.path(), &["a"]);
    for opts in [Opts::default(), follow()] {
        let (ents, errs) = check(&dir.path().join("a"), opts);
        assert!(errs.is_empty());
        assert_eq!(ents, [(dir.path().join("a"), 0, 'f', false, 'f')]);
    }
}

#[test]
fn flat_and_nested_trees() {
    // walkdir: one_dir, one_file, one_dir_one_file, many_files, many_dirs,
    // many_mixed, nested, nested_small_max_open, siblings.
    let dir = tmp();
    let root = dir.path();
    mkdirs(root, &["one_dir/foo"]);
    touch(root, &["one_file"]);
    mkdirs(root, &["one_dir_one_file/foo"]);
    touch(root, &["one_dir_one_file/foo/a"]);
    mkdirs(root, &["many/foo", "many/bar", "many/baz", "many/quux"]);
    touch(root, &["many/a", "many/b", "many/c", "many/d"]);
    let nested = "nested/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z";
    mkdirs(root, &[nested]);
    touch(
        root,
        &["nested/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z/A"],
    );
    mkdirs(root, &["siblings/foo", "siblings/bar"]);
    touch(root, &["siblings/foo/abc", "siblings/bar/xyz"]);
    let (ents, _) = check(root, Opts::default());
    assert_eq!(ents.len(), 1 + 2 + 1 + 3 + 9 + 28 + 5);
    for sub in ["one_dir", "one_dir_one_file", "many", "nested", "siblings"] {
        check(&root.join(sub), Opts::default());
    }
    let small = Opts {
        max_open: Some(1),
        ..Opts::default()
    };
    let (ents, _) = check(&root.join("nested"), small);
    assert_eq!(ents.len(), 28);
    check(&root.join("one_file"), Opts::default());
}

#[test]
fn a_root_that_is_a_link_to_a_file() {
    // walkdir: sym_root_file_nofollow, sym_root_file_follow.
    let dir = tmp();
    touch(dir.path(), &["a"]);
    symlink(dir.path().join("a"), dir.path().join("a-link")).unwrap();
    let link = dir.path().join("a-link");
    let (ents, errs) = check(&link, Opts::default());
    assert!(errs.is_empty());
    assert_eq!(ents, [(link.clone(), 0, 'l', true, 'l')]);
    let (ents, _) = check(&link, follow());
    assert_eq!(ents, [(link.clone(), 0, 'f', true, 'f')]);
}

#[test]
fn a_root_that_is_a_dangling_link() {
    // walkdir: broken_sym_root_dir_nofollow_and_root_nofollow,
    // broken_sym_root_dir_follow_and_root_nofollow,
    // broken_sym_root_dir_root_is_always_followed.
    let dir = tmp();
    symlink("broken", dir.path().join("a-link")).unwrap();
    let link = dir.path().join("a-link");
    let alone = Opts {
        root_nofollow: true,
        ..Opts::default()
    };
    let (ents, errs) = check(&link, alone);
    assert!(errs.is_empty());
    assert_eq!(ents, [(link.clone(), 0, 'l', true, 'l')]);
    for opts in [
        Opts {
            root_nofollow: true,
            ..follow()
        },
        follow(),
        Opts::default(),
    ] {
        let (ents, errs) = check(&link, opts);
        assert!(ents.is_empty());
        assert_eq!(errs.len(), 1);
    }
}

#[test]
fn a_root_that_is_a_link_to_a_directory() {
    // walkdir: sym_root_dir_nofollow_root_nofollow,
    // sym_root_dir_nofollow_root_follow, sym_root_dir_follow.
    let dir = tmp();
    mkdirs(dir.path(), &["a"]);
    touch(dir.path(), &["a/zzz"]);
    symlink(dir.path().join("a"), dir.path().join("a-link")).unwrap();
    let link = dir.path().join("a-link");
    let alone = Opts {
        root_nofollow: true,
        ..Opts::default()
    };
    let (ents, _) = check(&link, alone);
    assert_eq!(paths(&ents), std::slice::from_ref(&link));
    let (ents, _) = check(&link, Opts::default());
    assert_eq!(ents[0], (link.clone(), 0, 'l', true, 'l'));
    assert_eq!(ents[1], (link.join("zzz"), 1, 'f', false, 'f'));
    let (ents, _) = check(&link, follow());
    assert_eq!(ents[0], (link.clone(), 0, 'd', true, 'd'));
    assert_eq!(ents[1], (link.join("zzz"), 1, 'f', false, 'f'));
}

#[test]
fn links_below_the_root() {
    // walkdir: sym_file_nofollow, sym_file_follow, sym_dir_nofollow,
    // sym_dir_follow.
    let dir = tmp();
    mkdirs(dir.path(), &["a"]);
    touch(dir.path(), &["a/zzz", "f"]);
    symlink(dir.path().join("a"), dir.path().join("a-link")).unwrap();
    symlink(dir.path().join("f"), dir.path().join("f-link")).unwrap();
    let (ents, _) = check(dir.path(), Opts::default());
    assert!(ents.contains(&(dir.path().join("a-link"), 1, 'l', true, 'l')));
    assert!(ents.contains(&(dir.path().join("f-link"), 1, 'l', true, 'l')));
    assert!(ents.contains(&(dir.path().join("f"), 1, 'f', false, 'f')));
    let (ents, _) = check(dir.path(), follow());
    assert!(ents.contains(&(dir.path().join("a-link"), 1, 'd', true, 'd')));
    assert!(ents.contains(&(dir.path().join("a-link/zzz"), 2, 'f', false, 'f')));
    assert!(ents.contains(&(dir.path().join("f-link"), 1, 'f', true, 'f')));
}

#[test]
fn a_link_back_up_is_a_loop_only_when_followed() {
    // walkdir: sym_noloop, sym_loop_detect.
    let dir = tmp();
    mkdirs(dir.path(), &["a/b/c"]);
    symlink(dir.path().join("a"), dir.path().join("a/b/c/a-link")).unwrap();
    let (ents, errs) = check(dir.path(), Opts::default());
    assert!(errs.is_empty());
    assert_eq!(ents.len(), 5);
    let (ents, errs) = check(dir.path(), follow());
    assert_eq!(ents.len(), 4);
    let want = (
        Some(dir.path().join("a/b/c/a-link")),
        4,
        Some(dir.path().join("a")),
    );
    assert_eq!(errs, [want]);
}

#[test]
fn a_link_to_itself() {
    // walkdir: sym_self_loop_no_error, sym_file_self_loop_io_error,
    // sym_dir_self_loop_io_error.
    let dir = tmp();
    symlink("a", dir.path().join("a")).unwrap();
    let (ents, errs) = check(dir.path(), Opts::default());
    assert!(errs.is_empty());
    assert_eq!(ents[1], (dir.path().join("a"), 1, 'l', true, 'l'));
    let (ents, errs) = check(dir.path(), follow());
    assert_eq!(ents.len(), 1);
    assert_eq!(errs, [(Some(dir.path().join("a")), 1, None)]);
}

#[test]
fn min_and_max_depth() {
    // walkdir: min_depth_1, min_depth_2, max_depth_0, max_depth_1,
    // max_depth_2, min_max_depth_diff_nada, min_max_depth_diff_0,
    // min_max_depth_diff_1.
    let dir = tmp();
    mkdirs(dir.path(), &["a/b/c"]);
    touch(dir.path(), &["a/f", "a/b/g"]);
    for (min, max) in [
        (1, None),
        (2, None),
        (0, Some(0)),
        (0, Some(1)),
        (0, Some(2)),
        (3, Some(2)),
        (1, Some(1)),
        (1, Some(2)),
    ] {
        let opts = Opts {
            min_depth: min,
            max_depth: max,
            ..Opts::default()
        };
        let (ents, _) = check(dir.path(), opts);
        // As in walkdir, a maximum set below the minimum is raised to it.
        let max = max.map_or(usize::MAX, |m| m.max(min));
        assert!(ents.iter().all(|e| e.1 >= min && e.1 <= max));
    }
}

#[test]
fn contents_first() {
    // walkdir: contents_first.
    let dir = tmp();
    mkdirs(dir.path(), &["a/b"]);
    touch(dir.path(), &["a/b/c", "a/d"]);
    let opts = Opts {
        contents_first: true,
        ..Opts::default()
    };
    let (ents, _) = check(dir.path(), opts);
    assert_eq!(ents.len(), 5);
    let ordered = tokio_uring::start(run_ours(opts.ours(dir.path()).sort_by_file_name()));
    let order = paths(&ordered.0);
    let root = dir.path();
    let want = [
        root.join("a/b/c"),
        root.join("a/b"),
        root.join("a/d"),
        root.join("a"),
        root.to_owned(),
    ];
    assert_eq!(order, want);
}

/// Walks `builder`, skipping the directories `skip` names when they come.
async fn skipping(builder: WalkBuilder, skip: &[&str]) -> Vec<PathBuf> {
    let mut walk = builder.build();
    let mut got = Vec::new();
    while let Some(item) = walk.next().await {
        let e = item.unwrap();
        let name = e.file_name().to_str().unwrap().to_owned();
        got.push(e.path().to_owned());
        if e.file_type() == FileType::Directory && skip.contains(&name.as_str()) {
            walk.skip_current_dir();
        }
    }
    got
}

#[test]
fn skip_current_dir() {
    // walkdir: skip_current_dir, regression_skip_current_dir.
    let dir = tmp();
    mkdirs(dir.path(), &["foo/a/b", "bar/a", "baz/x"]);
    touch(dir.path(), &["foo/a/b/f", "bar/a/g", "baz/x/h"]);
    let mut want: Vec<PathBuf> = Vec::new();
    let mut it = walkdir::WalkDir::new(dir.path())
        .sort_by_file_name()
        .into_iter();
    while let Some(e) = it.next() {
        let e = e.unwrap();
        want.push(e.path().to_owned());
        if e.file_type().is_dir() && ["bar", "foo"].contains(&e.file_name().to_str().unwrap()) {
            it.skip_current_dir();
        }
    }
    let root = dir.path();
    let got = tokio_uring::start(skipping(
        WalkBuilder::new(root).sort_by_file_name(),
        &["bar", "foo"],
    ));
    assert_eq!(got, want);
    let mut got = tokio_uring::start(skipping(WalkBuilder::new(root), &["bar", "foo"]));
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn filter_entry() {
    // walkdir: filter_entry.
    let dir = tmp();
    mkdirs(dir.path(), &["foo/bar/baz/abc", "quux"]);
    let keep = |name: &str| name != "baz";
    let want: Vec<PathBuf> = walkdir::WalkDir::new(dir.path())
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| keep(e.file_name().to_str().unwrap()))
        .map(|e| e.unwrap().path().to_owned())
        .collect();
    let filter = move |e: &WalkEntry| {
        if keep(e.file_name().to_str().unwrap()) {
            Visit::Continue
        } else {
            Visit::Skip
        }
    };
    let b = WalkBuilder::new(dir.path()).filter(filter);
    let (ents, errs) = tokio_uring::start(run_ours(b.sort_by_file_name()));
    assert!(errs.is_empty());
    assert_eq!(paths(&ents), want);
}

#[test]
fn sort_by_sort_by_key_and_by_file_name() {
    // walkdir: sort_by, sort_by_key, sort_by_file_name, sort_max_open.
    let dir = tmp();
    mkdirs(dir.path(), &["foo/bar/baz/abc", "quux"]);
    touch(dir.path(), &["foo/zz", "foo/aa", "quux/m"]);
    let reverse: Vec<PathBuf> = walkdir::WalkDir::new(dir.path())
        .sort_by(|a, b| b.file_name().cmp(a.file_name()))
        .into_iter()
        .map(|e| e.unwrap().path().to_owned())
        .collect();
    let b = WalkBuilder::new(dir.path()).sort_by(|a, b| b.file_name().cmp(a.file_name()));
    let (ents, _) = tokio_uring::start(run_ours(b));
    assert_eq!(paths(&ents), reverse);
    let b = WalkBuilder::new(dir.path())
        .sort_by_key(|e| std::cmp::Reverse(e.file_name().to_owned()))
        .max_open(3);
    let (ents, _) = tokio_uring::start(run_ours(b));
    assert_eq!(paths(&ents), reverse);
    let small = Opts {
        max_open: Some(1),
        ..Opts::default()
    };
    check(dir.path(), small);
}
