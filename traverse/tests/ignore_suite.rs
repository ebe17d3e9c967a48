//! The `ignore` crate's walk tests (ripgrep's `crates/ignore/src/walk.rs`,
//! `mod tests`), case by case where they test a behaviour traverse's walk
//! has, rewritten against `traverse::WalkBuilder::ignore_rules` with every
//! engine. The `ignore` crate's own walker, run on the same tree, is the
//! reference, beside each case's expected list.

use std::fs;
use std::path::Path;
use std::sync::Mutex;

use traverse::{Engine, Event, IgnoreRules, WalkBuilder};

#[cfg(feature = "reference-engines")]
const ENGINES: &[Engine] = &[Engine::Threads, Engine::Uring, Engine::Std, Engine::Tokio];
#[cfg(not(feature = "reference-engines"))]
const ENGINES: &[Engine] = &[Engine::Threads, Engine::Uring];

/// Paths relative to `root`, the root left out, sorted.
fn relative(root: &Path, paths: impl Iterator<Item = std::path::PathBuf>) -> Vec<String> {
    let mut got: Vec<String> = paths
        .map(|p| p.strip_prefix(root).unwrap().to_str().unwrap().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    got.sort();
    got
}

/// traverse's listing with `builder`, by `engine`, in the same form; an
/// error fails the test.
fn ours(root: &Path, builder: &WalkBuilder, engine: Engine) -> Vec<String> {
    let got = Mutex::new(Vec::new());
    let walk = builder.clone().engine(engine).jobs(3).list(true).build();
    walk.run_with(root, |event| match event {
        Event::Entry(e) => got.lock().unwrap().push(e.path().to_owned()),
        Event::Error(e) => panic!("{engine:?}: {e}"),
    });
    relative(root, got.into_inner().unwrap().into_iter())
}

/// The `ignore` crate's parallel walk of the same tree, in the same form.
fn theirs(root: &Path, builder: &ignore::WalkBuilder) -> Vec<String> {
    let got = Mutex::new(Vec::new());
    builder.build_parallel().run(|| {
        Box::new(|entry| {
            got.lock().unwrap().push(entry.unwrap().into_path());
            ignore::WalkState::Continue
        })
    });
    relative(root, got.into_inner().unwrap().into_iter())
}

/// The rules as the `ignore` crate's defaults, without the machine's
/// global excludes file (neither walk should depend on it).
fn rules() -> IgnoreRules {
    IgnoreRules::new().git_global(false)
}

fn reference(root: &Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(root);
    b.git_global(false);
    b
}

/// Checks traverse with `ours_b` (every engine) against the `ignore`
/// crate with `theirs_b` and against the case's own list.
fn assert_paths(root: &Path, ours_b: WalkBuilder, theirs_b: &ignore::WalkBuilder, want: &[&str]) {
    let mut want: Vec<String> = want.iter().map(|p| p.to_string()).collect();
    want.sort();
    assert_eq!(theirs(root, theirs_b), want, "the reference");
    for &engine in ENGINES {
        assert_eq!(ours(root, &ours_b, engine), want, "{engine:?}");
    }
}

fn write(path: impl AsRef<Path>, text: &str) {
    let path = path.as_ref();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn with(rules: IgnoreRules) -> WalkBuilder {
    WalkBuilder::new().ignore_rules(rules)
}

#[test]
fn no_ignores() {
    // ignore: no_ignores.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join("a/b/c")).unwrap();
    write(r.join("a/b/foo"), "");
    write(r.join("x/y/foo"), "");
    let want = ["x", "x/y", "x/y/foo", "a", "a/b", "a/b/foo", "a/b/c"];
    assert_paths(r, with(rules()), &reference(r), &want);
}

#[test]
fn gitignore_in_a_repository_only() {
    // ignore: gitignore (and require_git, the default).
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join(".git")).unwrap();
    write(r.join(".gitignore"), "foo");
    for f in ["foo", "a/foo", "bar", "a/bar"] {
        write(r.join(f), "");
    }
    assert_paths(r, with(rules()), &reference(r), &["bar", "a", "a/bar"]);
    // Without `.git`, `.gitignore` is not applied...
    fs::remove_dir(r.join(".git")).unwrap();
    let want = ["foo", "a/foo", "bar", "a", "a/bar"];
    assert_paths(r, with(rules()), &reference(r), &want);
    // ... unless asked.
    let mut theirs_b = reference(r);
    theirs_b.require_git(false);
    let b = with(rules().require_git(false));
    assert_paths(r, b, &theirs_b, &["bar", "a", "a/bar"]);
}

#[test]
fn dot_ignore_without_a_repository() {
    // ignore: custom_ignore, with the standard `.ignore` file name.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    write(r.join(".ignore"), "foo");
    for f in ["foo", "a/foo", "bar", "a/bar"] {
        write(r.join(f), "");
    }
    assert_paths(r, with(rules()), &reference(r), &["bar", "a", "a/bar"]);
    let mut theirs_b = reference(r);
    theirs_b.ignore(false);
    let want = ["foo", "a/foo", "bar", "a", "a/bar"];
    assert_paths(r, with(rules().dot_ignore(false)), &theirs_b, &want);
}

#[test]
fn hidden_with_trailing_dot() {
    // ignore: hidden_with_trailing_dot.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    for f in [
        "visible.",
        ".hidden",
        ".hidden.",
        ".hidden..",
        "...",
        ".dir./inner",
    ] {
        write(r.join(f), "");
    }
    assert_paths(r, with(rules()), &reference(r), &["visible."]);
    let mut theirs_b = reference(r);
    theirs_b.hidden(false);
    let want = [
        ".dir.",
        ".dir./inner",
        ".hidden",
        ".hidden.",
        ".hidden..",
        "...",
        "visible.",
    ];
    assert_paths(r, with(rules().hidden(false)), &theirs_b, &want);
}

#[test]
fn gitignore_parent() {
    // ignore: gitignore_parent.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join(".git")).unwrap();
    write(r.join(".gitignore"), "foo");
    write(r.join("a/foo"), "");
    write(r.join("a/bar"), "");
    let root = r.join("a");
    assert_paths(&root, with(rules()), &reference(&root), &["bar"]);
    let mut theirs_b = reference(&root);
    theirs_b.parents(false);
    let b = with(rules().parents(false));
    assert_paths(&root, b, &theirs_b, &["bar", "foo"]);
}

#[test]
fn nested_negated_and_precedence() {
    // Beyond the `ignore` suite: nested files, a negation below, `.ignore`
    // over `.gitignore`, a directory pattern, hidden names.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join(".git")).unwrap();
    write(r.join(".gitignore"), "*.log\nbuild/\n/top-only\n");
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
        "top-only",
        "sub/top-only",
        ".hidden/f",
        "sub/.h",
    ] {
        write(r.join(f), "");
    }
    let want = ["src", "src/main.rs", "sub", "sub/other.log", "sub/top-only"];
    assert_paths(r, with(rules()), &reference(r), &want);
    let mut theirs_b = reference(r);
    theirs_b.hidden(false);
    let want = theirs(r, &theirs_b);
    assert!(want.contains(&".hidden/f".to_owned()));
    for &engine in ENGINES {
        assert_eq!(
            ours(r, &with(rules().hidden(false)), engine),
            want,
            "{engine:?}"
        );
    }
}

#[test]
fn max_depth_and_min_depth() {
    // ignore: max_depth, max_depth_does_not_load_unreachable_ignore_files,
    // min_depth.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join("a/b/c")).unwrap();
    for f in ["foo", "a/foo", "a/b/foo", "a/b/c/foo"] {
        write(r.join(f), "");
    }
    write(r.join("leaf/.ignore"), "{invalid\n");
    for depth in 0..4 {
        let mut theirs_b = reference(r);
        theirs_b.max_depth(Some(depth));
        let want = theirs(r, &theirs_b);
        for &engine in ENGINES {
            let b = with(rules()).max_depth(depth);
            assert_eq!(ours(r, &b, engine), want, "{engine:?} max_depth {depth}");
        }
    }
    for depth in [0, 1, 2, 3, 10] {
        let mut theirs_b = reference(r);
        theirs_b.min_depth(Some(depth));
        let want = theirs(r, &theirs_b);
        for &engine in ENGINES {
            let b = with(rules()).min_depth(depth);
            assert_eq!(ours(r, &b, engine), want, "{engine:?} min_depth {depth}");
        }
    }
    let want = ["a/b", "a/b/c", "a/b/c/foo", "a/b/foo", "a/foo"];
    let mut theirs_b = reference(r);
    theirs_b.min_depth(Some(2));
    assert_paths(r, with(rules()).min_depth(2), &theirs_b, &want);
}

#[test]
fn symlinks_and_loops() {
    // ignore: symlinks, symlink_loop.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join("a/b")).unwrap();
    std::os::unix::fs::symlink(r.join("a/b"), r.join("z")).unwrap();
    write(r.join("a/b/foo"), "");
    assert_paths(
        r,
        with(rules()),
        &reference(r),
        &["a", "a/b", "a/b/foo", "z"],
    );
    let mut theirs_b = reference(r);
    theirs_b.follow_links(true);
    let want = ["a", "a/b", "a/b/foo", "z", "z/foo"];
    // Every path to a directory walked, as ignore walks them (without
    // `count_links`, one reached twice is walked once, as `du -L` counts).
    // The reference engines follow no link.
    assert_eq!(theirs(r, &theirs_b), want);
    for engine in [Engine::Threads, Engine::Uring] {
        let b = with(rules()).follow_links(true).count_links(true);
        assert_eq!(ours(r, &b, engine), want, "{engine:?}");
    }

    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join("a/b")).unwrap();
    std::os::unix::fs::symlink(r.join("a"), r.join("a/b/c")).unwrap();
    assert_paths(r, with(rules()), &reference(r), &["a", "a/b", "a/b/c"]);
}

#[test]
fn filter() {
    // ignore: filter.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join("a/b/c")).unwrap();
    write(r.join("a/b/foo"), "");
    write(r.join("x/y/foo"), "");
    let mut theirs_b = reference(r);
    theirs_b.filter_entry(|e| e.file_name() != "a");
    let b = with(rules()).filter_entry(|e| e.name() != "a");
    assert_paths(r, b, &theirs_b, &["x", "x/y", "x/y/foo"]);
}

#[test]
fn a_tree_with_a_gitignore_at_every_level() {
    // Beyond the suite: the shape of a source tree, a `.gitignore` in most
    // directories, large enough for several workers.
    let td = tempfile::tempdir().unwrap();
    let r = td.path();
    fs::create_dir_all(r.join(".git")).unwrap();
    write(
        r.join(".gitignore"),
        "*.o\n/out\n!keep.o\n.*\n!.gitignore\n",
    );
    for d in 0..12 {
        let dir = r.join(format!("d{d}"));
        write(dir.join(".gitignore"), &format!("gen{d}*\n!*.keep\n"));
        for s in 0..6 {
            let sub = dir.join(format!("s{s}"));
            if s % 2 == 0 {
                write(sub.join(".gitignore"), "*.tmp\n/local/\n");
            }
            for f in ["a.c", "a.o", "keep.o", "x.tmp", "gen0.c", "gen3.keep", ".h"] {
                write(sub.join(f), "");
            }
            write(sub.join("local/f"), "");
            write(sub.join("deep/local/f.tmp"), "");
        }
    }
    write(r.join("out/f"), "");
    write(r.join("d0/out/f"), "");
    let want = theirs(r, &reference(r));
    assert!(want.len() > 300 && !want.iter().any(|p| p.ends_with("a.o")));
    for &engine in ENGINES {
        assert_eq!(ours(r, &with(rules()), engine), want, "{engine:?}");
    }
}

#[test]
fn a_fifo_or_a_link_named_gitignore_is_not_read() {
    // Not in ignore's suite: its walker follows a link named `.gitignore`
    // and waits on a FIFO. Here neither is read: the listing is the one
    // the `ignore` crate gives of the tree without them (their own names
    // are hidden).
    let td = tempfile::tempdir().unwrap();
    let r = td.path().join("root");
    let outside = td.path().join("outside");
    write(&outside, "*\n");
    fs::create_dir_all(r.join(".git")).unwrap();
    for f in ["file", "sub/file", "sub/deeper/file", "other/file"] {
        write(r.join(f), "");
    }
    let want = theirs(&r, &reference(&r));
    assert_eq!(want.len(), 7, "{want:?}");
    std::os::unix::fs::symlink(&outside, r.join("other/.gitignore")).unwrap();
    let fifo = r.join("sub/.gitignore");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for &engine in ENGINES {
        // On a thread of its own: a walk blocked on the FIFO never
        // returns, and the wait for it is bounded.
        let (tx, rx) = std::sync::mpsc::channel();
        let root = r.clone();
        std::thread::spawn(move || tx.send(ours(&root, &with(rules()), engine)));
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        let got = got.unwrap_or_else(|_| panic!("{engine:?}: the walk waits on the FIFO"));
        assert_eq!(got, want, "{engine:?}");
    }
}
