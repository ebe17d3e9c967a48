//! The parser against real `getdents64` output of the running kernel, with
//! `std::fs::read_dir` as the independent reference.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirEntryExt;
use std::path::Path;

use io_uring_getdents::dirent::{DirentIter, FileType};
use io_uring_getdents::syscall::{getdents64, seek_dir};

#[derive(Debug, PartialEq, Eq, Clone)]
struct Record {
    ino: u64,
    off: u64,
    file_type: FileType,
    name: OsString,
}

/// Reads a directory with getdents64 into buffers of `buf_len` bytes,
/// seeking to the last `d_off` before every read (as the GETDENTS chain does).
fn read_with(path: &Path, buf_len: usize) -> Vec<Record> {
    let dir = fs::File::open(path).unwrap();
    let mut buf = vec![0u8; buf_len];
    let mut out: Vec<Record> = Vec::new();
    loop {
        if let Some(last) = out.last() {
            seek_dir(dir.as_fd(), last.off).unwrap();
        }
        let n = getdents64(dir.as_fd(), &mut buf).unwrap();
        if n == 0 {
            return out;
        }
        for entry in DirentIter::new(&buf[..n]) {
            let entry = entry.expect("kernel output parses");
            out.push(Record {
                ino: entry.ino(),
                off: entry.offset(),
                file_type: entry.file_type(),
                name: entry.name_os().to_owned(),
            });
        }
    }
}

/// Checks both buffer sizes against read_dir: same names, inodes and types.
fn check_against_std(path: &Path) -> usize {
    let reference: BTreeMap<OsString, (u64, FileType)> = fs::read_dir(path)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name(),
                (e.ino(), FileType::from(e.file_type().unwrap())),
            )
        })
        .collect();
    let big = read_with(path, 1 << 20);
    let small = read_with(path, 280);
    assert_eq!(big, small, "chained small reads differ from one large read");
    let ours: BTreeMap<OsString, (u64, FileType)> = big
        .iter()
        .filter(|r| r.name != "." && r.name != "..")
        .map(|r| (r.name.clone(), (r.ino, r.file_type)))
        .collect();
    assert_eq!(ours.len(), big.len() - 2, "a name was repeated");
    assert_eq!(ours, reference);
    assert!(big.iter().any(|r| r.name == "."));
    assert!(big.iter().any(|r| r.name == ".."));
    reference.len()
}

fn touch(dir: &Path, name: &[u8]) {
    fs::write(dir.join(OsStr::from_bytes(name)), b"").unwrap();
}

#[test]
fn empty_directory() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(check_against_std(tmp.path()), 0);
}

#[test]
fn one_entry() {
    let tmp = tempfile::tempdir().unwrap();
    touch(tmp.path(), b"x");
    assert_eq!(check_against_std(tmp.path()), 1);
}

#[test]
fn thousand_entries_of_mixed_types() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..1000 {
        let name = format!("e{i}");
        match i % 4 {
            0 => fs::create_dir(tmp.path().join(name)).unwrap(),
            1 => std::os::unix::fs::symlink("nowhere", tmp.path().join(name)).unwrap(),
            _ => touch(tmp.path(), name.as_bytes()),
        }
    }
    assert_eq!(check_against_std(tmp.path()), 1000);
}

/// 100 000, or `TEST_WIDE_DIR_ENTRIES` (the test VM sets it lower: under
/// emulation creating the files dominates its run).
fn wide_entries() -> usize {
    match std::env::var("TEST_WIDE_DIR_ENTRIES") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("TEST_WIDE_DIR_ENTRIES={v:?}: {e}")),
        Err(_) => 100_000,
    }
}

#[test]
fn hundred_thousand_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let entries = wide_entries();
    for i in 0..entries {
        touch(tmp.path(), format!("{i:x}").as_bytes());
    }
    assert_eq!(check_against_std(tmp.path()), entries);
}

#[test]
fn short_long_and_hostile_names() {
    let tmp = tempfile::tempdir().unwrap();
    let mut names: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        vec![b'L'; 255],
        vec![0xff, 0xfe, b'z'],
        b"line\nbreak".to_vec(),
        b"\n".to_vec(),
        b" ".to_vec(),
        b"...".to_vec(),
    ];
    names.extend(
        (1u8..=255)
            .filter(|&b| b != b'/' && b != b'.')
            .map(|b| vec![b, b]),
    );
    for name in &names {
        touch(tmp.path(), name);
    }
    assert_eq!(check_against_std(tmp.path()), names.len());
    let listed = read_with(tmp.path(), 4096);
    assert!(listed.iter().any(|r| r.name.as_bytes() == [b'L'; 255]));
}

#[test]
fn buffer_too_small_for_one_record_is_einval() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fs::File::open(tmp.path()).unwrap();
    let mut buf = [0u8; 8];
    let err = getdents64(dir.as_fd(), &mut buf).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
}

#[test]
fn regular_file_is_enotdir() {
    let tmp = tempfile::tempdir().unwrap();
    touch(tmp.path(), b"f");
    let file = fs::File::open(tmp.path().join("f")).unwrap();
    let err = getdents64(file.as_fd(), &mut [0u8; 1024]).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR));
}
