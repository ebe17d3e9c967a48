//! Slow-filesystem checks for traverse: on testfs with 150 µs per
//! request, every engine's totals equal `du -sb` and `std::fs` on the
//! source, and injected EIO is reported while the walk goes on.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use common::require_fuse;
use testfs::{Fault, Mount, Options};
use traverse::{Engine, Entry, Error, Visitor, VisitorBuilder, WalkBuilder};

/// 30 directories of 10 files (sizes vary), one nested level, a hard link
/// and a symlink.
fn build_tree(root: &Path) {
    for d in 0..30 {
        let dir = root
            .join(format!("d{d:02}"))
            .join(if d % 3 == 0 { "inner" } else { "" });
        fs::create_dir_all(&dir).unwrap();
        for f in 0..10 {
            let size = (d * 131 + f * 977) % 6000;
            fs::write(dir.join(format!("f{f}")), vec![7u8; size]).unwrap();
        }
    }
    fs::hard_link(root.join("d01/f1"), root.join("d02/hardlink")).unwrap();
    symlink("d01", root.join("link")).unwrap();
}

/// Regular files below `dir`, by `std::fs` (a hard link counts each time,
/// as find does; traverse counts names, not inodes).
fn files_below(dir: &Path) -> u64 {
    let mut count = 0;
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            count += files_below(&entry.path());
        } else if kind.is_file() {
            count += 1;
        }
    }
    count
}

fn dirs_below(dir: &Path) -> u64 {
    let mut count = 1;
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            count += dirs_below(&entry.path());
        }
    }
    count
}

fn du_sb(dir: &Path) -> u64 {
    let out = Command::new("du").arg("-sb").arg(dir).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .split('\t')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Collects (path, errno) of every error any worker reports.
#[derive(Default)]
struct Errors(Mutex<BTreeMap<PathBuf, Option<i32>>>);
struct Collect<'a>(&'a Errors);

impl Visitor for Collect<'_> {
    fn visit_entry(&mut self, _: &Entry<'_>) {}
    fn error(&mut self, err: Error) {
        let errno = err.cause().raw_os_error();
        self.0
             .0
            .lock()
            .unwrap()
            .insert(err.path().to_path_buf(), errno);
    }
}

impl VisitorBuilder for Errors {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(Collect(self))
    }
}

fn engines() -> Vec<Engine> {
    Engine::NAMES
        .iter()
        .map(|name| name.parse().unwrap())
        .collect()
}

#[test]
fn totals_are_exact_on_a_slow_filesystem() {
    require_fuse!();
    let source = tempfile::tempdir().unwrap();
    build_tree(source.path());
    let mnt = tempfile::tempdir().unwrap();
    let options = Options::new().delay(Duration::from_micros(150));
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();

    let bytes = du_sb(source.path());
    let files = files_below(source.path());
    let dirs = dirs_below(source.path());
    for engine in engines() {
        let errors = Errors::default();
        let walk = WalkBuilder::new().engine(engine).jobs(8).build();
        let summary = walk.run(mount.mountpoint(), &errors);
        let errors = errors.0.into_inner().unwrap();
        assert!(errors.is_empty(), "{engine}: {errors:?}");
        let t = summary.totals;
        assert_eq!((t.files, t.dirs, t.symlinks), (files, dirs, 1), "{engine}");
        assert_eq!(t.bytes, u128::from(bytes), "{engine}: du -sb on the source");
        assert!(!summary.partial);
    }
    assert!(mount.stats().delayed > 0);
}

#[test]
fn injected_eio_is_reported_and_the_walk_goes_on() {
    require_fuse!();
    let source = tempfile::tempdir().unwrap();
    build_tree(source.path());
    let mnt = tempfile::tempdir().unwrap();
    let options = Options::new()
        .delay(Duration::from_micros(150))
        .fault("d06", Fault::EioReaddir)
        .fault("d13", Fault::Eio);
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();

    let lost = files_below(&source.path().join("d06")) + files_below(&source.path().join("d13"));
    let files = files_below(source.path()) - lost;
    for engine in engines() {
        let errors = Errors::default();
        let walk = WalkBuilder::new().engine(engine).jobs(8).build();
        let summary = walk.run(mount.mountpoint(), &errors);
        let errors = errors.0.into_inner().unwrap();
        let failed: Vec<_> = errors
            .keys()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(failed, ["d06", "d13"], "{engine}: {errors:?}");
        assert!(
            errors.values().all(|e| *e == Some(libc::EIO)),
            "{engine}: {errors:?}"
        );
        assert_eq!(summary.totals.errors, 2, "{engine}");
        assert_eq!(summary.totals.files, files, "{engine}: the rest is counted");
        assert!(!summary.partial);
    }
}
