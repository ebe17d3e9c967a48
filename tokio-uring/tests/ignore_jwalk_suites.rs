//! The `ignore` crate's walk tests (ripgrep's `crates/ignore/src/walk.rs`,
//! `mod tests`) and jwalk's (`tests/integration.rs`), case by case where
//! they test a behaviour our walk has, rewritten against
//! `tokio_uring_getdents::walk`. The `ignore` crate's own walker, run on
//! the same tree, is the reference for the ignore rules, beside each
//! case's expected list.

mod common;

use std::fs;
use std::path::Path;

use tokio_uring_getdents::fs::FileType;
use tokio_uring_getdents::walk::{IgnoreRules, Visit, WalkBuilder};
use tokio_uring_getdents::PathError;

/// The walk's paths relative to `root`, the root itself left out, sorted.
fn ours(root: &Path, builder: WalkBuilder) -> Vec<String> {
    let mut got: Vec<String> = tokio_uring::start(async {
        let mut walk = builder.build();
        let mut got = Vec::new();
        while let Some(item) = walk.next().await {
            let e = item.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            if !rel.is_empty() {
                got.push(rel);
            }
        }
        got
    });
    got.sort();
    got
}

/// The `ignore` crate's walk of the same tree, in the same form.
fn theirs(root: &Path, builder: &ignore::WalkBuilder) -> Vec<String> {
    let mut got: Vec<String> = builder
        .build()
        .map(|e| {
            e.unwrap()
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned()
        })
        .filter(|p| !p.is_empty())
        .collect();
    got.sort();
    got
}

fn sorted(paths: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    v.sort();
    v
}

/// Our rules as the `ignore` crate's defaults, without the machine's
/// global excludes file (neither walk should depend on it).
fn rules() -> IgnoreRules {
    IgnoreRules::new().git_global(false)
}

fn reference(root: &Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(root);
    b.git_global(false);
    b
}

/// Checks our walk with `rules` against the `ignore` crate's and against
/// the case's own list.
fn assert_paths(root: &Path, ours_b: WalkBuilder, theirs_b: &ignore::WalkBuilder, want: &[&str]) {
    let want = sorted(want);
    assert_eq!(theirs(root, theirs_b), want, "the reference");
    assert_eq!(ours(root, ours_b), want);
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn write(path: impl AsRef<Path>, text: &str) {
    let path = path.as_ref();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn ignore_no_ignores() {
    // ignore: no_ignores.
    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join("a/b/c")).unwrap();
    write(r.join("a/b/foo"), "");
    write(r.join("x/y/foo"), "");
    let want = ["x", "x/y", "x/y/foo", "a", "a/b", "a/b/foo", "a/b/c"];
    let b = WalkBuilder::new(r).ignore_rules(rules());
    assert_paths(r, b, &reference(r), &want);
}

#[test]
fn ignore_gitignore_in_a_repository_only() {
    // ignore: gitignore (and require_git, the default).
    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join(".git")).unwrap();
    write(r.join(".gitignore"), "foo");
    for f in ["foo", "a/foo", "bar", "a/bar"] {
        write(r.join(f), "");
    }
    let b = WalkBuilder::new(r).ignore_rules(rules());
    assert_paths(r, b, &reference(r), &["bar", "a", "a/bar"]);
    // Without `.git`, `.gitignore` is not applied...
    fs::remove_dir(r.join(".git")).unwrap();
    let want = ["foo", "a/foo", "bar", "a", "a/bar"];
    let b = WalkBuilder::new(r).ignore_rules(rules());
    assert_paths(r, b, &reference(r), &want);
    // ... unless asked.
    let b = WalkBuilder::new(r).ignore_rules(rules().require_git(false));
    let mut theirs_b = reference(r);
    theirs_b.require_git(false);
    assert_paths(r, b, &theirs_b, &["bar", "a", "a/bar"]);
}

#[test]
fn ignore_dot_ignore_without_a_repository() {
    // ignore: custom_ignore, with the standard `.ignore` file name.
    let td = tmp();
    let r = td.path();
    write(r.join(".ignore"), "foo");
    for f in ["foo", "a/foo", "bar", "a/bar"] {
        write(r.join(f), "");
    }
    let b = WalkBuilder::new(r).ignore_rules(rules());
    assert_paths(r, b, &reference(r), &["bar", "a", "a/bar"]);
    let b = WalkBuilder::new(r).ignore_rules(rules().dot_ignore(false));
    let mut theirs_b = reference(r);
    theirs_b.ignore(false);
    let want = ["foo", "a/foo", "bar", "a", "a/bar"];
    assert_paths(r, b, &theirs_b, &want);
}

#[test]
fn ignore_gitignore_parent() {
    // ignore: gitignore_parent.
    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join(".git")).unwrap();
    write(r.join(".gitignore"), "foo");
    write(r.join("a/foo"), "");
    write(r.join("a/bar"), "");
    let root = r.join("a");
    let b = WalkBuilder::new(&root).ignore_rules(rules());
    assert_paths(&root, b, &reference(&root), &["bar"]);
    let b = WalkBuilder::new(&root).ignore_rules(rules().parents(false));
    let mut theirs_b = reference(&root);
    theirs_b.parents(false);
    assert_paths(&root, b, &theirs_b, &["bar", "foo"]);
}

#[test]
fn ignore_nested_negated_and_precedence() {
    // Beyond the `ignore` suite: nested files, a negation below, `.ignore`
    // over `.gitignore`, a directory pattern, hidden names.
    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join(".git")).unwrap();
    write(r.join(".gitignore"), "*.log\nbuild/\n");
    write(r.join("sub/.gitignore"), "!keep.log\n");
    write(r.join("sub/.ignore"), "keep.log\n!other.log\n");
    for f in [
        "a.log",
        "sub/keep.log",
        "sub/other.log",
        "sub/x.log",
        "build/out",
        "sub/build/out",
        "src/main.rs",
        ".hidden/f",
        "sub/.h",
    ] {
        write(r.join(f), "");
    }
    let b = WalkBuilder::new(r).ignore_rules(rules());
    let want = ["src", "src/main.rs", "sub", "sub/other.log"];
    assert_paths(r, b, &reference(r), &want);
    let b = WalkBuilder::new(r).ignore_rules(rules().hidden(false));
    let mut theirs_b = reference(r);
    theirs_b.hidden(false);
    let want = theirs(r, &theirs_b);
    assert!(want.contains(&".hidden/f".to_owned()));
    assert_eq!(ours(r, b), want);
}

#[test]
fn ignore_max_depth_and_min_depth() {
    // ignore: max_depth, max_depth_does_not_load_unreachable_ignore_files,
    // min_depth.
    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join("a/b/c")).unwrap();
    for f in ["foo", "a/foo", "a/b/foo", "a/b/c/foo"] {
        write(r.join(f), "");
    }
    write(r.join("leaf/.ignore"), "{invalid\n");
    for depth in 0..4 {
        let b = WalkBuilder::new(r).ignore_rules(rules()).max_depth(depth);
        let mut theirs_b = reference(r);
        theirs_b.max_depth(Some(depth));
        assert_eq!(ours(r, b), theirs(r, &theirs_b), "max_depth {depth}");
    }
    // The `ignore` crate's serial walker panics with a minimum depth here:
    // its full walk, cut at the depth, is the reference.
    let all = theirs(r, &reference(r));
    for depth in [0, 1, 2, 3, 10] {
        let b = WalkBuilder::new(r).ignore_rules(rules()).min_depth(depth);
        let want: Vec<String> = all
            .iter()
            .filter(|p| Path::new(p).components().count() >= depth)
            .cloned()
            .collect();
        assert_eq!(ours(r, b), want, "min_depth {depth}");
    }
    let b = WalkBuilder::new(r).ignore_rules(rules()).min_depth(2);
    assert_eq!(
        ours(r, b),
        sorted(&["a/b", "a/b/c", "a/b/c/foo", "a/b/foo", "a/foo"])
    );
}

#[test]
fn ignore_symlinks_and_loops() {
    // ignore: symlinks, first_path_not_symlink, symlink_loop.
    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join("a/b")).unwrap();
    std::os::unix::fs::symlink(r.join("a/b"), r.join("z")).unwrap();
    write(r.join("a/b/foo"), "");
    let b = WalkBuilder::new(r).ignore_rules(rules());
    assert_paths(r, b, &reference(r), &["a", "a/b", "a/b/foo", "z"]);
    let b = WalkBuilder::new(r).ignore_rules(rules()).follow_links(true);
    let mut theirs_b = reference(r);
    theirs_b.follow_links(true);
    assert_paths(r, b, &theirs_b, &["a", "a/b", "a/b/foo", "z", "z/foo"]);

    let first = tokio_uring::start(async {
        let mut walk = WalkBuilder::new(r.join("a")).ignore_rules(rules()).build();
        walk.next().await.unwrap().unwrap()
    });
    assert!(!first.path_is_symlink());

    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join("a/b")).unwrap();
    std::os::unix::fs::symlink(r.join("a"), r.join("a/b/c")).unwrap();
    let b = WalkBuilder::new(r).ignore_rules(rules());
    assert_paths(r, b, &reference(r), &["a", "a/b", "a/b/c"]);
    // Followed, the loop is an error (left out of the paths).
    let got = tokio_uring::start(async {
        let b = WalkBuilder::new(r).ignore_rules(rules()).follow_links(true);
        let mut walk = b.build();
        let (mut ok, mut loops) = (Vec::new(), Vec::new());
        while let Some(item) = walk.next().await {
            match item {
                Ok(e) => ok.push(e.path().to_owned()),
                Err(e) => loops.push(
                    PathError::of(&e)
                        .unwrap()
                        .loop_ancestor()
                        .unwrap()
                        .to_owned(),
                ),
            }
        }
        (ok.len(), loops)
    });
    assert_eq!(got, (3, vec![r.join("a")]));
}

#[test]
fn ignore_filter() {
    // ignore: filter.
    let td = tmp();
    let r = td.path();
    fs::create_dir_all(r.join("a/b/c")).unwrap();
    write(r.join("a/b/foo"), "");
    write(r.join("x/y/foo"), "");
    let b = WalkBuilder::new(r).ignore_rules(rules()).filter(|e| {
        if e.file_name() == "a" {
            Visit::Skip
        } else {
            Visit::Continue
        }
    });
    let mut theirs_b = reference(r);
    theirs_b.filter_entry(|e| e.file_name() != "a");
    assert_paths(r, b, &theirs_b, &["x", "x/y", "x/y/foo"]);
}

/// jwalk's `test_dir`: three files, two groups, one hidden file.
fn jwalk_tree() -> tempfile::TempDir {
    let td = tmp();
    let r = td.path();
    for f in [
        "a.txt",
        "b.txt",
        "c.txt",
        "group 1/d.txt",
        "group 2/.hidden_file.txt",
        "group 2/e.txt",
    ] {
        write(r.join(f), "");
    }
    td
}

/// Paths relative to the root with their depth, in the walk's order.
async fn local_paths(root: &Path, builder: WalkBuilder) -> Vec<String> {
    let mut walk = builder.build();
    let mut got = Vec::new();
    while let Some(item) = walk.next().await {
        let e = item.unwrap();
        let rel = e
            .path()
            .strip_prefix(root)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        got.push(format!("{rel} ({})", e.depth()));
    }
    got
}

#[test]
fn jwalk_sorted_walks_and_hidden_files() {
    // jwalk: sort, walk_serial, sort_by_name_rayon_custom_2_threads,
    // walk_rayon_global (jwalk leaves hidden files out by default:
    // `hidden` alone of the rules), see_hidden_files.
    let td = jwalk_tree();
    let r = td.path();
    let hidden_only = IgnoreRules::new()
        .parents(false)
        .dot_ignore(false)
        .git_ignore(false)
        .git_global(false);
    let b = WalkBuilder::new(r)
        .sort_by_file_name()
        .ignore_rules(hidden_only);
    let got = tokio_uring::start(local_paths(r, b));
    let want = [
        " (0)",
        "a.txt (1)",
        "b.txt (1)",
        "c.txt (1)",
        "group 1 (1)",
        "group 1/d.txt (2)",
        "group 2 (1)",
        "group 2/e.txt (2)",
    ];
    assert_eq!(got, want);
    // The same order from walkdir, the reference.
    let walkdir_order: Vec<String> = walkdir::WalkDir::new(r)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_str().unwrap().starts_with('.'))
        .map(|e| {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(r)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            format!("{rel} ({})", e.depth())
        })
        .collect();
    assert_eq!(got, walkdir_order);
    let b = WalkBuilder::new(r).sort_by_file_name();
    let got = tokio_uring::start(local_paths(r, b));
    assert!(got.contains(&"group 2/.hidden_file.txt (2)".to_owned()));
}

#[test]
fn jwalk_a_file_root_and_a_missing_root() {
    // jwalk: walk_file, walk_file_serial, error_when_path_does_not_exist.
    let td = jwalk_tree();
    let r = td.path();
    for sorted in [false, true] {
        let got = tokio_uring::start(async {
            let mut b = WalkBuilder::new(r.join("a.txt"));
            if sorted {
                b = b.sort_by_file_name();
            }
            let mut walk = b.build();
            let first = walk.next().await.unwrap().unwrap();
            assert!(walk.next().await.is_none());
            (first.file_name().to_owned(), first.file_type())
        });
        assert_eq!(got, ("a.txt".into(), FileType::Regular));
        let got = tokio_uring::start(async {
            let mut b = WalkBuilder::new(r.join("path_does_not_exist"));
            if sorted {
                b = b.sort_by_file_name();
            }
            let mut walk = b.build();
            let first = walk.next().await.unwrap();
            (first.is_err(), walk.next().await.is_none())
        });
        assert_eq!(got, (true, true));
    }
}

#[test]
fn jwalk_a_directory_removed_during_the_walk() {
    // jwalk: error_when_path_removed_durring_iteration: a directory
    // removed after its parent was read (here by the filter, when its
    // entry comes up) is still an entry, followed by the error of its
    // read, at its depth.
    let td = jwalk_tree();
    let r = td.path().to_owned();
    let gone = td.path().join("gone");
    fs::create_dir(&gone).unwrap();
    let got = tokio_uring::start(async {
        let b = WalkBuilder::new(&r).sort_by_file_name().filter(move |e| {
            if e.file_name() == "gone" {
                fs::remove_dir(e.path()).unwrap();
            }
            Visit::Continue
        });
        let mut walk = b.build();
        let mut seen = Vec::new();
        while let Some(item) = walk.next().await {
            match item {
                Ok(e) => seen.push(e.file_name().to_str().unwrap().to_owned()),
                Err(e) => {
                    let p = PathError::of(&e).unwrap();
                    seen.push(format!("error {} at {:?}", p.path().display(), p.depth()));
                }
            }
        }
        seen
    });
    let at = got.iter().position(|s| s == "gone").unwrap();
    assert_eq!(got[at + 1], format!("error {} at Some(1)", gone.display()));
}

#[test]
fn jwalk_walk_root() {
    // jwalk: walk_root.
    let got = tokio_uring::start(async {
        let mut walk = WalkBuilder::new("/")
            .max_depth(1)
            .sort_by_file_name()
            .build();
        walk.next().await.unwrap().unwrap().path().to_owned()
    });
    assert_eq!(got, Path::new("/"));
}
