//! Mounts testfs over generated trees and checks it against `std::fs` on
//! the source. Tests that cannot mount here print "skipped: <why>".

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::require_fuse;
use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;
use tempfile::TempDir;
use testfs::{Fault, Mount, Options, STATS_FILE};

/// A tree with the cases a passthrough can get wrong: nesting, empty
/// files and directories, a large directory (several READDIR replies),
/// symlinks, a hard link, non-UTF-8 and odd names, varied sizes.
fn build_tree(root: &Path) {
    let mk = |rel: &str| fs::create_dir_all(root.join(rel)).unwrap();
    for dir in [
        "a/b/c/d",
        "a/e",
        "empty",
        "big",
        "bad/inner",
        "gone/deeper",
        "ok",
    ] {
        mk(dir);
    }
    let mut n = 0u64;
    let mut file = |rel: PathBuf| {
        n += 1;
        let size = (n * 7919) % 9000;
        fs::write(root.join(rel), vec![b'x'; size as usize]).unwrap();
    };
    for dir in [
        "",
        "a",
        "a/b",
        "a/b/c",
        "a/b/c/d",
        "a/e",
        "bad",
        "bad/inner",
        "gone",
        "ok",
    ] {
        for i in 0..5 {
            file(Path::new(dir).join(format!("f{i}.dat")));
        }
    }
    for i in 0..1500 {
        file(PathBuf::from(format!(
            "big/entry-with-a-longer-name-{i:05}"
        )));
    }
    file(PathBuf::from("a/name with spaces"));
    file(Path::new("a").join(OsStr::from_bytes(b"caf\xe9-latin1")));
    file(PathBuf::from("a/empty-file"));
    fs::write(root.join("a/empty-file"), b"").unwrap();
    symlink("b/c", root.join("a/link-to-dir")).unwrap();
    symlink("/nonexistent/target", root.join("a/dangling")).unwrap();
    fs::hard_link(root.join("a/f0.dat"), root.join("a/e/hardlink")).unwrap();
}

/// What a walker sees of an entry: type, size, blocks, mode, link count,
/// symlink target.
type Listing = BTreeMap<PathBuf, (String, u64, u64, u32, u64, Option<PathBuf>)>;

/// Recursive listing with `std::fs`, without following symlinks. Errors are
/// collected with their path instead of stopping the walk.
fn list(root: &Path) -> (Listing, BTreeMap<PathBuf, io::Error>) {
    let mut listing = Listing::new();
    let mut errors = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let entries = match fs::read_dir(root.join(&rel)) {
            Ok(entries) => entries,
            Err(e) => {
                errors.insert(rel, e);
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    errors.insert(rel.clone(), e);
                    break;
                }
            };
            let child = rel.join(entry.file_name());
            let meta = match fs::symlink_metadata(root.join(&child)) {
                Ok(meta) => meta,
                Err(e) => {
                    errors.insert(child, e);
                    continue;
                }
            };
            let target = meta
                .file_type()
                .is_symlink()
                .then(|| fs::read_link(root.join(&child)).unwrap());
            let kind = format!("{:?}", meta.file_type());
            if meta.is_dir() {
                stack.push(child.clone());
            }
            listing.insert(
                child,
                (
                    kind,
                    meta.size(),
                    meta.blocks(),
                    meta.mode(),
                    meta.nlink(),
                    target,
                ),
            );
        }
    }
    (listing, errors)
}

fn dirs() -> (TempDir, TempDir) {
    let source = tempfile::tempdir().unwrap();
    build_tree(source.path());
    (source, tempfile::tempdir().unwrap())
}

#[test]
fn listing_through_mount_matches_source() {
    require_fuse!();
    let (source, mnt) = dirs();
    let mount = Mount::new(source.path(), mnt.path(), &Options::new()).unwrap();

    let (expected, source_errors) = list(source.path());
    let (seen, errors) = list(mount.mountpoint());
    assert!(source_errors.is_empty(), "{source_errors:?}");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(seen.len(), expected.len());
    assert_eq!(seen, expected);
    assert!(!seen.contains_key(Path::new(STATS_FILE)));

    // Contents and links come through too.
    let name = Path::new("a/b/c/f3.dat");
    assert_eq!(
        fs::read(mount.mountpoint().join(name)).unwrap(),
        fs::read(source.path().join(name)).unwrap()
    );
    let inner = fs::metadata(mount.mountpoint().join("a/f0.dat")).unwrap();
    let link = fs::metadata(mount.mountpoint().join("a/e/hardlink")).unwrap();
    assert_eq!(inner.ino(), link.ino(), "hard links share one inode");

    let stats = mount.unmount().unwrap();
    assert!(stats.readdir > 0 && stats.lookup > 0);
    assert_eq!((stats.eio_injected, stats.enoent_injected), (0, 0));
    assert_eq!(stats.delayed, 0, "no delay was asked for");
}

#[test]
fn eio_on_a_subdirectory_leaves_the_rest_listable() {
    require_fuse!();
    let (source, mnt) = dirs();
    let options = Options::new()
        .fault("bad", Fault::EioReaddir)
        .fault(source.path().join("gone"), Fault::Eio);
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();

    let err = fs::read_dir(mount.mountpoint().join("bad"))
        .and_then(|mut entries| entries.next().unwrap())
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    // EioReaddir: the directory itself still answers stat.
    assert!(fs::symlink_metadata(mount.mountpoint().join("bad"))
        .unwrap()
        .is_dir());
    let err = fs::symlink_metadata(mount.mountpoint().join("gone")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");

    let (seen, errors) = list(mount.mountpoint());
    let failed: Vec<_> = errors.keys().cloned().collect();
    assert_eq!(failed, [PathBuf::from("bad"), PathBuf::from("gone")]);
    assert!(errors.values().all(|e| e.raw_os_error() == Some(libc::EIO)));

    let (mut expected, _) = list(source.path());
    expected.retain(|path, _| {
        !(path.starts_with("bad") && path != Path::new("bad") || path.starts_with("gone"))
    });
    assert_eq!(seen, expected);
    assert!(mount.stats().eio_injected >= 3);
}

#[test]
fn vanished_paths_are_listed_but_cannot_be_stat_ed() {
    require_fuse!();
    let (source, mnt) = dirs();
    let options = Options::new()
        .fault("gone", Fault::Vanish)
        .fault("a/f1.dat", Fault::Vanish);
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();

    // The parents still list both names, with their types.
    let names = |dir: &Path| -> Vec<(std::ffi::OsString, bool)> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), e.file_type().unwrap().is_dir())
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(mount.mountpoint()), names(source.path()));
    let a = mount.mountpoint().join("a");
    assert_eq!(names(&a), names(&source.path().join("a")));
    // ... but stat and open of them fail with ENOENT, every time.
    for _ in 0..2 {
        for path in [mount.mountpoint().join("gone"), a.join("f1.dat")] {
            let err = fs::symlink_metadata(&path).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{path:?}: {err}");
        }
    }
    let err = fs::read_dir(mount.mountpoint().join("gone")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");

    let (seen, errors) = list(mount.mountpoint());
    let failed: Vec<_> = errors.keys().cloned().collect();
    assert_eq!(failed, [PathBuf::from("a/f1.dat"), PathBuf::from("gone")]);
    assert!(errors
        .values()
        .all(|e| e.raw_os_error() == Some(libc::ENOENT)));
    let (mut expected, _) = list(source.path());
    expected.retain(|path, _| !(path.starts_with("gone") || path == Path::new("a/f1.dat")));
    assert_eq!(seen, expected);
    let stats = mount.unmount().unwrap();
    assert!(stats.enoent_injected >= 5, "{stats}");
    assert_eq!(stats.eio_injected, 0);
}

#[test]
fn entries_are_shown_under_names_longer_than_name_max() {
    require_fuse!();
    let (source, mnt) = dirs();
    let (file_name, dir_name) = ("f".repeat(300), "d".repeat(1024));
    let options = Options::new()
        .show_as("a/f1.dat", &file_name)
        .show_as("a/b", &dir_name);
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();
    let a = mount.mountpoint().join("a");
    let mut names: Vec<std::ffi::OsString> = fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let mut want: Vec<std::ffi::OsString> = fs::read_dir(source.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "f1.dat" && n != "b")
        .chain([file_name.clone().into(), dir_name.clone().into()])
        .collect();
    want.sort();
    assert_eq!(names, want);
    // Found by the long names, with the source's attributes and contents.
    let file = a.join(&file_name);
    let original = source.path().join("a/f1.dat");
    assert_eq!(fs::read(&file).unwrap(), fs::read(&original).unwrap());
    let inside = list(&a.join(&dir_name)).0;
    assert_eq!(inside, list(&source.path().join("a/b")).0);
    assert!(!inside.is_empty());
    drop(mount);

    // Names FUSE cannot carry are refused, naming the path.
    for bad in ["x".repeat(1025), "a/b".into(), String::new(), "..".into()] {
        let err = Mount::new(
            source.path(),
            mnt.path(),
            &Options::new().show_as("a/e", bad),
        )
        .err()
        .expect("refused");
        assert!(err.to_string().contains("a/e"), "{err}");
    }
}

/// Reads a directory through the mount with getdents64 into `buf_size`
/// bytes; returns (calls, records including `.` and `..`).
fn getdents_all(dir: &Path, buf_size: usize) -> (u64, u64) {
    let dir = fs::File::open(dir).unwrap();
    let mut buf = vec![0u8; buf_size];
    let (mut calls, mut records) = (0, 0);
    loop {
        let n = getdents64(dir.as_fd(), &mut buf).unwrap();
        calls += 1;
        if n == 0 {
            return (calls, records);
        }
        for entry in DirentIter::new(&buf[..n]) {
            entry.unwrap();
            records += 1;
        }
    }
}

#[test]
fn every_request_is_delayed_and_readdir_calls_are_counted() {
    require_fuse!();
    let (source, mnt) = dirs();
    let options = Options::new().delay(Duration::from_micros(50));
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();
    let big = mount.mountpoint().join("big");
    let expected_records = fs::read_dir(source.path().join("big")).unwrap().count() as u64 + 2;

    let mut calls_by_size = Vec::new();
    for buf_size in [4096, 65536] {
        let before = mount.stats();
        let (calls, records) = getdents_all(&big, buf_size);
        let delta = mount.stats().since(&before);
        assert_eq!(records, expected_records);
        // Each getdents64 on FUSE is one READDIR request, the final empty
        // one included, and every record it returned came from testfs.
        assert_eq!(delta.readdir, calls, "buffer {buf_size}");
        assert_eq!(delta.readdir_entries, records, "buffer {buf_size}");
        assert_eq!(delta.opendir, 1);
        calls_by_size.push(calls);
    }
    // A bigger caller buffer never needs more requests (fewer on kernels
    // that size FUSE READDIR by the caller's buffer).
    assert!(calls_by_size[1] <= calls_by_size[0], "{calls_by_size:?}");
    assert!(
        calls_by_size[0] > 2,
        "1500 entries cannot fit in one 4 KiB reply"
    );

    list(mount.mountpoint());
    let stats = mount.unmount().unwrap();
    assert!(stats.ops() > 1500, "{stats}");
    assert_eq!(stats.delayed, stats.ops(), "every request waited: {stats}");
}

#[test]
fn stats_file_shows_the_counters_and_is_not_listed() {
    require_fuse!();
    let (source, mnt) = dirs();
    let mount = Mount::new(source.path(), mnt.path(), &Options::new()).unwrap();
    fs::read_dir(mount.mountpoint().join("a"))
        .unwrap()
        .for_each(drop);

    let before = mount.stats();
    let text = fs::read_to_string(mount.mountpoint().join(STATS_FILE)).unwrap();
    let after = mount.stats();
    let shown: BTreeMap<&str, u64> = text
        .lines()
        .map(|line| {
            let (name, value) = line.split_once(' ').unwrap();
            (name, value.parse().unwrap())
        })
        .collect();
    // Requests on the stats file are not counted; resolving its path may
    // still cost a counted GETATTR of the root, and RELEASEDIR of the
    // listing above arrives asynchronously, so those two are left out.
    for (name, value) in [
        ("lookup", before.lookup),
        ("opendir", before.opendir),
        ("readdir", before.readdir),
        ("readdir_bytes", before.readdir_bytes),
        ("readdir_entries", before.readdir_entries),
        ("open", before.open),
        ("read", before.read),
    ] {
        assert_eq!(shown[name], value, "{name} in {text}");
    }
    assert_eq!(after.lookup, before.lookup);
    assert_eq!((after.open, after.read), (before.open, before.read));
    assert!(before.readdir >= 2, "{before}");

    let names: Vec<_> = fs::read_dir(mount.mountpoint())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(!names.iter().any(|n| n == STATS_FILE), "{names:?}");
}

#[test]
fn bad_arguments_are_errors_naming_the_path() {
    let (source, mnt) = dirs();
    let missing = source.path().join("no-such-dir");
    let err = Mount::new(&missing, mnt.path(), &Options::new())
        .err()
        .unwrap();
    assert!(err.to_string().contains("no-such-dir"), "{err}");

    let file = source.path().join("f0.dat");
    let err = Mount::new(&file, mnt.path(), &Options::new())
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a directory"), "{err}");

    let inside = source.path().join("empty");
    let err = Mount::new(source.path(), &inside, &Options::new())
        .err()
        .unwrap();
    assert!(err.to_string().contains("must not contain"), "{err}");

    let options = Options::new().fault("a/../..", Fault::Eio);
    let err = Mount::new(source.path(), mnt.path(), &options)
        .err()
        .unwrap();
    assert!(err.to_string().contains("a/../.."), "{err}");

    let options = Options::new().fault("/etc", Fault::Eio);
    let err = Mount::new(source.path(), mnt.path(), &options)
        .err()
        .unwrap();
    assert!(err.to_string().contains("not inside the source"), "{err}");

    let err = Mount::new(source.path(), mnt.path(), &Options::new().threads(0))
        .err()
        .unwrap();
    assert!(err.to_string().contains("threads"), "{err}");
}

#[test]
fn binary_rejects_bad_usage() {
    let bin = env!("CARGO_BIN_EXE_testfs");
    let cases: [&[&str]; 4] = [
        &[],
        &["only-one"],
        &["a", "b", "--delay-us", "soon"],
        &["a", "b", "--no-such-flag"],
    ];
    for args in cases {
        let out = Command::new(bin).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Usage"),
            "{args:?}"
        );
    }
    let out = Command::new(bin)
        .args(["/no/such/source", "/tmp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/source"));
}

#[test]
fn binary_serves_until_sigterm_and_prints_counters() {
    require_fuse!();
    let (source, mnt) = dirs();
    let child = Command::new(env!("CARGO_BIN_EXE_testfs"))
        .arg(source.path())
        .arg(mnt.path())
        .args(["--delay-us", "20", "--eio-readdir", "bad"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stats_file = mnt.path().join(STATS_FILE);
    let start = Instant::now();
    // Waiting for readiness, not timing anything: the mount appears when
    // the child has finished its handshake with the kernel.
    while !stats_file.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "testfs did not mount"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (seen, errors) = list(mnt.path());
    assert_eq!(errors.keys().collect::<Vec<_>>(), [Path::new("bad")]);
    assert!(seen.contains_key(Path::new("a/b/c/d")));

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("eio_injected 1\n"), "{stdout}");
    let readdir: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("readdir "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(readdir > 0);
    assert!(!stats_file.exists(), "unmounted at exit");
}

#[test]
fn an_endless_directory_lists_its_entries_again_and_again() {
    require_fuse!();
    let source = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    fs::create_dir(source.path().join("loop")).unwrap();
    for i in 0..5 {
        fs::write(source.path().join(format!("loop/f{i}")), b"x").unwrap();
    }
    let options = Options::new().fault("loop", Fault::EndlessReaddir);
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();
    let dir = fs::File::open(mount.mountpoint().join("loop")).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut names: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    for _ in 0..20 {
        let n = getdents64(dir.as_fd(), &mut buf).unwrap();
        assert!(n > 0, "a read came to the end");
        for entry in DirentIter::new(&buf[..n]) {
            *names
                .entry(entry.unwrap().name_bytes().to_vec())
                .or_default() += 1;
        }
    }
    // `.` and `..` once; each file many times, each listed name real.
    assert_eq!(names.len(), 7, "{names:?}");
    assert_eq!((names[&b"."[..]], names[&b".."[..]]), (1, 1));
    for i in 0..5 {
        let name = format!("f{i}");
        assert!(names[name.as_bytes()] >= 10, "{name}: {names:?}");
        assert!(mount.mountpoint().join("loop").join(&name).is_file());
    }
    // Other directories end as usual.
    assert_eq!(fs::read_dir(mount.mountpoint()).unwrap().count(), 1);
}

#[test]
fn a_directory_can_claim_its_parent_s_inode_number() {
    require_fuse!();
    let source = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    fs::create_dir_all(source.path().join("a/b/c")).unwrap();
    fs::write(source.path().join("a/b/file"), b"12345").unwrap();
    let options = Options::new().inode_of("a/b", "a");
    let mount = Mount::new(source.path(), mnt.path(), &options).unwrap();
    let (a, b) = (mount.mountpoint().join("a"), mount.mountpoint().join("a/b"));
    let ino = |p: &Path| fs::symlink_metadata(p).unwrap().ino();
    assert_eq!(ino(&b), ino(&a));
    assert_ne!(ino(&b.join("c")), ino(&a));
    // Still the directory b: its own entries, its own file.
    let mut names: Vec<_> = fs::read_dir(&b)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["c", "file"]);
    assert_eq!(fs::read(b.join("file")).unwrap(), b"12345");
}
