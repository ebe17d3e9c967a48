//! Entries with their metadata (`DirBuilder::entry_metadata`) compared
//! with std's lstat: read with the listing where the kernel has
//! readdirplus, a `statx` per entry elsewhere; entries removed while the
//! directory is read; the walk's totals with and without metadata.

mod common;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::{backends, builder, skip_unless_required};
use io_uring_getdents::dirent::FileType;
use tokio_uring_getdents::fs::{
    BackendChoice, DirEntry, Metadata, MIN_BUFFER_SIZE, STATX_BASIC_STATS,
};
use tokio_uring_getdents::walk::{WalkBuilder, WalkEntry};

/// Whether a `Dir` on `choice` should read its entries' metadata with
/// readdirplus. In the test VM (IO_URING_GETDENTS_REQUIRE=1) the kernel
/// must have it; elsewhere its absence is reported and the entries are
/// stat'ed one by one.
fn readdirplus_expected(choice: BackendChoice) -> bool {
    if choice != BackendChoice::Getdents {
        return false;
    }
    let plus = io_uring_getdents::detect::plus_cached();
    if plus.opcode().is_some() {
        return true;
    }
    skip_unless_required(
        plus,
        format_args!("readdirplus ({plus}); GETDENTS entries are stat'ed one by one"),
    );
    false
}

/// What both sides must agree on, with the field named for messages.
fn assert_same(ours: &Metadata, path: &Path) {
    let std = fs::symlink_metadata(path).unwrap();
    let what = path.display();
    assert_eq!(ours.ino(), std.ino(), "ino of {what}");
    assert_eq!(ours.mode(), std.mode(), "mode of {what}");
    assert_eq!(ours.nlink(), std.nlink(), "nlink of {what}");
    assert_eq!(ours.size(), std.size(), "size of {what}");
    assert_eq!(ours.blocks(), std.blocks(), "blocks of {what}");
    assert_eq!(ours.uid(), std.uid(), "uid of {what}");
    assert_eq!(ours.gid(), std.gid(), "gid of {what}");
    assert_eq!(ours.modified(), std.modified().ok(), "mtime of {what}");
}

/// Regular files (one empty), two hard links to one of them, a symbolic
/// link, a FIFO, a subdirectory, a name of 255 bytes, and enough files
/// that the smallest buffer takes many reads.
fn every_kind(root: &Path) -> Vec<(String, FileType)> {
    let long = "l".repeat(255);
    fs::write(root.join("file"), vec![7u8; 12_345]).unwrap();
    fs::hard_link(root.join("file"), root.join("hardlink")).unwrap();
    fs::hard_link(root.join("file"), root.join("hardlink2")).unwrap();
    fs::write(root.join("empty"), []).unwrap();
    std::os::unix::fs::symlink("file", root.join("symlink")).unwrap();
    let fifo = CString::new(root.join("fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: `fifo` is a NUL-terminated path that lives through the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o640) }, 0, "mkfifo");
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub").join("inside"), b"x").unwrap();
    fs::write(root.join(&long), b"long name").unwrap();
    let mut kinds = vec![
        ("file".to_string(), FileType::Regular),
        ("hardlink".to_string(), FileType::Regular),
        ("hardlink2".to_string(), FileType::Regular),
        ("empty".to_string(), FileType::Regular),
        ("symlink".to_string(), FileType::Symlink),
        ("fifo".to_string(), FileType::Fifo),
        ("sub".to_string(), FileType::Directory),
        (long, FileType::Regular),
    ];
    for i in 0..300 {
        let name = format!("many-{i:03}");
        fs::write(root.join(&name), vec![1u8; i * 37]).unwrap();
        kinds.push((name, FileType::Regular));
    }
    kinds
}

#[test]
fn every_entry_s_metadata_equals_lstat() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let kinds: BTreeMap<String, FileType> = every_kind(root).into_iter().collect();
    for choice in backends() {
        let plus = readdirplus_expected(choice);
        for buffer in [MIN_BUFFER_SIZE, 32 * 1024] {
            tokio_uring::start(async {
                let mut dir = builder(choice)
                    .buffer_size(buffer)
                    .entry_metadata(STATX_BASIC_STATS)
                    .open(root)
                    .await
                    .unwrap();
                assert_eq!(dir.readdirplus(), plus, "{choice:?}");
                let mut seen = BTreeMap::new();
                while let Some(entry) = dir.next().await {
                    let entry = entry.unwrap();
                    let name = entry.file_name().to_str().unwrap().to_string();
                    let path = root.join(&name);
                    let meta = entry.metadata().expect("asked for").unwrap();
                    assert_same(&meta, &path);
                    assert_eq!(meta.ino(), entry.ino(), "{name}");
                    assert_eq!(meta.file_type(), entry.file_type(), "{name}");
                    // Decoded again from the same batch: the same answer.
                    assert_eq!(entry.metadata().unwrap().unwrap(), meta);
                    seen.insert(name, meta.file_type());
                }
                assert_eq!(seen, kinds, "{choice:?}, buffer {buffer}");
                dir.close().await.unwrap();
            });
        }
    }
}

#[test]
fn metadata_is_none_when_not_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("file"), b"x").unwrap();
    for choice in backends() {
        tokio_uring::start(async {
            let mut dir = builder(choice).open(tmp.path()).await.unwrap();
            assert!(!dir.readdirplus());
            let entry: DirEntry = dir.next().await.unwrap().unwrap();
            assert!(entry.metadata().is_none());
        });
    }
}

#[test]
fn a_mask_with_the_reserved_bit_is_refused_on_every_backend() {
    for choice in backends() {
        tokio_uring::start(async {
            let err = builder(choice)
                .entry_metadata(STATX_BASIC_STATS | 0x8000_0000)
                .open(".")
                .await
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{choice:?}: {err}");
        });
    }
}

/// Entries removed after the first read: each later entry is either gone
/// from the listing, or carries NotFound (its name was read before the
/// removal, its lookup came after), or the metadata of the file as it
/// was (both before the removal). Never another file's, never another
/// error.
#[test]
fn entries_removed_between_reads_are_absent_or_not_found() {
    for choice in backends() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inodes = BTreeMap::new();
        for i in 0..2_000 {
            let path = tmp.path().join(format!("f-{i:04}"));
            fs::write(&path, []).unwrap();
            let ino = fs::symlink_metadata(&path).unwrap().ino();
            inodes.insert(path, ino);
        }
        let (before, after) = tokio_uring::start(async {
            let mut dir = builder(choice)
                .buffer_size(MIN_BUFFER_SIZE)
                .entry_metadata(STATX_BASIC_STATS)
                .open(tmp.path())
                .await
                .unwrap();
            let first = dir.next().await.unwrap().unwrap();
            for path in inodes.keys() {
                fs::remove_file(path).unwrap();
            }
            let mut later = Vec::new();
            while let Some(entry) = dir.next().await {
                later.push(entry.unwrap());
            }
            (first, later)
        });
        let mut not_found = 0;
        for entry in std::iter::once(&before).chain(&after) {
            let path = tmp.path().join(entry.file_name());
            let want = inodes[&path];
            assert_eq!(entry.ino(), want, "{}", path.display());
            match entry.metadata().expect("asked for") {
                Ok(meta) => assert_eq!(meta.ino(), want, "{}", path.display()),
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
                    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
                    not_found += 1;
                }
            }
        }
        eprintln!(
            "{choice:?}: {} of 2 000 entries listed after the removal, {not_found} of them \
             NotFound",
            after.len()
        );
    }
}

/// A tree of a few levels with files of many sizes, links, FIFOs and
/// empty directories.
fn tree(root: &Path) {
    for a in 0..4 {
        let dir_a = root.join(format!("a{a}"));
        fs::create_dir(&dir_a).unwrap();
        for b in 0..5 {
            let dir_b = dir_a.join(format!("b{b}"));
            fs::create_dir(&dir_b).unwrap();
            for f in 0..20 {
                fs::write(
                    dir_b.join(format!("f{f}")),
                    vec![0u8; a * 1000 + b * 100 + f],
                )
                .unwrap();
            }
            std::os::unix::fs::symlink("f0", dir_b.join("link")).unwrap();
            fs::hard_link(dir_b.join("f1"), dir_b.join("f1-again")).unwrap();
        }
        let fifo = CString::new(dir_a.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: `fifo` is a NUL-terminated path that lives through the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
        fs::create_dir(dir_a.join("empty")).unwrap();
    }
}

fn walk(root: &Path, choice: BackendChoice, mask: Option<u32>) -> Vec<WalkEntry> {
    tokio_uring::start(async {
        let mut builder = WalkBuilder::new(root).dir_builder(builder(choice));
        if let Some(mask) = mask {
            builder = builder.statx(mask);
        }
        let mut walk = builder.build();
        let mut out = Vec::new();
        while let Some(entry) = walk.next().await {
            out.push(entry.unwrap());
        }
        out
    })
}

/// Per type: entries, and with metadata, apparent and allocated bytes.
type Totals = BTreeMap<String, (u64, u64, u64)>;

fn totals(entries: &[WalkEntry]) -> Totals {
    let mut out = Totals::new();
    for entry in entries {
        let row = out.entry(format!("{:?}", entry.file_type())).or_default();
        row.0 += 1;
        if let Some(meta) = entry.metadata() {
            row.1 += meta.size();
            row.2 += meta.blocks();
        }
    }
    out
}

#[test]
fn walk_totals_with_metadata_equal_those_without_and_std_s() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    let mut want = Totals::new();
    let mut paths: Vec<PathBuf> = vec![tmp.path().to_path_buf()];
    while let Some(path) = paths.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let row = want
            .entry(format!("{:?}", FileType::from(meta.file_type())))
            .or_default();
        *row = (row.0 + 1, row.1 + meta.size(), row.2 + meta.blocks());
        if meta.is_dir() {
            paths.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    for choice in backends() {
        readdirplus_expected(choice);
        let plain = walk(tmp.path(), choice, None);
        let with = walk(tmp.path(), choice, Some(STATX_BASIC_STATS));
        let counts = |t: &Totals| t.iter().map(|(k, v)| (k.clone(), v.0)).collect::<Vec<_>>();
        assert_eq!(
            counts(&totals(&plain)),
            counts(&totals(&with)),
            "{choice:?}"
        );
        assert_eq!(totals(&with), want, "{choice:?}");
        for entry in &with {
            let meta = entry.metadata().expect("asked for");
            assert_same(meta, entry.path());
            assert_eq!(meta.ino(), entry.ino(), "{}", entry.path().display());
        }
    }
}
