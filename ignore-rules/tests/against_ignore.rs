//! The rules applied by a plain recursive walk, compared with the `ignore`
//! crate's own walker on the same trees; and ignore files that are not
//! regular files.

use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use walk_ignore_rules::{IgnoreRules, Names, Rules, Scope};

/// Every path below `root` the rules keep (the root left out), sorted.
fn ours(root: &Path, settings: IgnoreRules) -> Vec<PathBuf> {
    let rules = Rules::new(settings, root);
    let mut got = Vec::new();
    walk(&rules, &rules.root_scope(), root, &mut got);
    got.sort();
    got
}

fn walk(rules: &Rules, above: &Scope, dir: &Path, got: &mut Vec<PathBuf>) {
    let fd = File::open(dir).unwrap();
    let entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    let mut names = Names::default();
    for e in &entries {
        names.note(e.file_name().as_bytes());
    }
    let scope = rules.enter(above, &fd, dir, &names);
    for e in entries {
        let is_dir = e.file_type().unwrap().is_dir();
        let path = e.path();
        if rules.ignored(&scope, &path, e.file_name().as_bytes(), is_dir) {
            continue;
        }
        got.push(path.clone());
        if is_dir {
            walk(rules, &scope, &path, got);
        }
    }
}

/// The `ignore` crate's walk of `root` with the same settings.
fn theirs(root: &Path, require_git: bool) -> Vec<PathBuf> {
    let mut b = ignore::WalkBuilder::new(root);
    b.git_global(false).require_git(require_git);
    let mut got: Vec<PathBuf> = b
        .build()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p != root)
        .collect();
    got.sort();
    got
}

fn write(path: impl AsRef<Path>, text: &str) {
    let path = path.as_ref();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A repository whose root is the walk's parent: `.gitignore` and
/// `.ignore` above the root, nested files, negations, hidden names, and
/// `.ignore` overriding `.gitignore`.
fn tree(top: &Path) -> PathBuf {
    fs::create_dir(top.join(".git")).unwrap();
    write(top.join(".gitignore"), "*.log\nbuild/\n");
    write(top.join(".ignore"), "secret*\n");
    let r = top.join("root");
    write(r.join(".gitignore"), "!keep.log\n*.tmp\n");
    write(r.join(".ignore"), "!wanted.tmp\n");
    for f in [
        "a.log",
        "keep.log",
        "x.tmp",
        "wanted.tmp",
        "secret.txt",
        ".hidden",
        "src/main.rs",
        "src/build/out",
        "src/b.log",
        "src/.cfg/inner",
        "docs/x.tmp",
    ] {
        write(r.join(f), "");
    }
    write(r.join("src/.gitignore"), "!b.log\nmain.rs\n");
    write(r.join("docs/.ignore"), "!.cfg\n");
    r
}

#[test]
fn the_ignore_crates_walk() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tree(tmp.path());
    let rules = IgnoreRules::new().git_global(false);
    let want = theirs(&root, true);
    assert!(want.iter().any(|p| p.ends_with("keep.log")), "{want:?}");
    assert_eq!(ours(&root, rules), want);
    // Out of the repository: `.gitignore` files apply only when asked.
    fs::remove_dir(tmp.path().join(".git")).unwrap();
    assert_eq!(ours(&root, rules), theirs(&root, true));
    assert_eq!(ours(&root, rules.require_git(false)), theirs(&root, false));
}

#[test]
fn a_fifo_or_a_link_is_no_ignore_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    write(&outside, "*\n");
    write(root.join("sub/file"), "");
    write(root.join("file"), "");
    fs::create_dir(root.join(".git")).unwrap();
    let want = theirs(&root, true);
    std::os::unix::fs::symlink(&outside, root.join(".ignore")).unwrap();
    let fifo = std::ffi::CString::new(root.join("sub/.gitignore").as_os_str().as_bytes()).unwrap();
    // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    // Neither is read (the walk below would block on the FIFO, and the
    // link's target leaves everything out): the listing is that of the
    // tree without them, but for their own names, hidden.
    let got = ours(&root, IgnoreRules::new().git_global(false));
    assert_eq!(got, want);
}
