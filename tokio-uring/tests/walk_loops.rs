//! A bind mount of a directory below itself: every walk reports it as a
//! loop naming the ancestor, and lists nothing below it, as `find` does;
//! compared with a `std::fs` recursion that stops at a directory whose
//! device and inode an ancestor has. Needs the right to mount (root):
//! skipped elsewhere.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tokio_uring_getdents::walk::WalkBuilder;
use tokio_uring_getdents::PathError;

/// Unmounts on drop, so a failing test leaves no mount behind.
struct Bind(PathBuf);

impl Bind {
    fn new(source: &Path, target: &Path) -> Option<Bind> {
        let status = Command::new("mount")
            .arg("--bind")
            .arg(source)
            .arg(target)
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Bind(target.to_owned()))
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The tree by `std::fs`, stopping at loops: (entries, loops as path and
/// ancestor).
fn reference(root: &Path) -> (BTreeSet<PathBuf>, BTreeSet<(PathBuf, PathBuf)>) {
    fn go(
        dir: &Path,
        ancestors: &mut Vec<((u64, u64), PathBuf)>,
        out: &mut (BTreeSet<PathBuf>, BTreeSet<(PathBuf, PathBuf)>),
    ) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            out.0.insert(path.clone());
            if !meta.is_dir() {
                continue;
            }
            let id = (meta.dev(), meta.ino());
            if let Some((_, ancestor)) = ancestors.iter().find(|(a, _)| *a == id) {
                out.1.insert((path, ancestor.clone()));
                continue;
            }
            ancestors.push((id, path.clone()));
            go(&path, ancestors, out);
            ancestors.pop();
        }
    }
    let meta = fs::metadata(root).unwrap();
    let mut out = (BTreeSet::from([root.to_owned()]), BTreeSet::new());
    go(
        root,
        &mut vec![((meta.dev(), meta.ino()), root.to_owned())],
        &mut out,
    );
    out
}

async fn walk(builder: WalkBuilder) -> (BTreeSet<PathBuf>, BTreeSet<(PathBuf, PathBuf)>) {
    let mut walk = builder.build();
    let mut out = (BTreeSet::new(), BTreeSet::new());
    while let Some(item) = walk.next().await {
        match item {
            Ok(e) => assert!(out.0.insert(e.path().to_owned()), "twice: {e:?}"),
            Err(e) => {
                let p = PathError::of(&e).unwrap_or_else(|| panic!("{e:?}"));
                let ancestor = p.loop_ancestor().unwrap_or_else(|| panic!("{e:?}"));
                out.1.insert((p.path().to_owned(), ancestor.to_owned()));
            }
        }
    }
    out
}

#[test]
fn a_bind_mount_of_an_ancestor_is_a_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("a/b/mnt")).unwrap();
    fs::write(root.join("a/f"), b"x").unwrap();
    let Some(_bind) = Bind::new(&root.join("a"), &root.join("a/b/mnt")) else {
        eprintln!("skipped: cannot bind-mount here (not root?)");
        return;
    };
    let want = reference(root);
    assert_eq!(
        want.1,
        BTreeSet::from([(root.join("a/b/mnt"), root.join("a"))]),
        "the reference sees the loop"
    );
    // The loop's directory is an entry of its parent, read before it is
    // opened, in the default walk; the walk in order reports it instead
    // of it, as walkdir does.
    for choice in common::backends() {
        let b = WalkBuilder::new(root).dir_builder(common::builder(choice));
        let got = tokio_uring::start(walk(b));
        assert_eq!(got, want, "{choice:?}");
    }
    let got = tokio_uring::start(walk(WalkBuilder::new(root).sort_by_file_name()));
    let mut entries = want.0.clone();
    entries.remove(&root.join("a/b/mnt"));
    assert_eq!(got, (entries, want.1));
}
