//! Metadata through io_uring STATX compared with std's lstat.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::{backends, builder, child_arg, run_child};
use futures_util::StreamExt;
use io_uring_getdents::syscall;
use tokio_uring_getdents::fs::{
    statx, Dir, FileId, FileType, Metadata, STATX_BASIC_STATS, STATX_MANY_CHUNK, STATX_MNT_ID,
    STATX_SIZE,
};

fn assert_same(ours: &Metadata, path: &Path) {
    let std = fs::symlink_metadata(path).unwrap();
    let what = path.display();
    assert_eq!(ours.size(), std.size(), "size of {what}");
    assert_eq!(ours.blocks(), std.blocks(), "blocks of {what}");
    assert_eq!(ours.ino(), std.ino(), "ino of {what}");
    assert_eq!(ours.dev(), std.dev(), "dev of {what}");
    assert_eq!(ours.nlink(), std.nlink(), "nlink of {what}");
    assert_eq!(ours.mode(), std.mode(), "mode of {what}");
    assert_eq!(ours.uid(), std.uid(), "uid of {what}");
    assert_eq!(ours.gid(), std.gid(), "gid of {what}");
    assert_eq!(ours.modified(), std.modified().ok(), "mtime of {what}");
    assert_eq!(ours.accessed(), std.accessed().ok(), "atime of {what}");
    assert!(ours.changed().is_some(), "ctime of {what}");
    assert_eq!(ours.is_file(), std.is_file(), "is_file of {what}");
    assert_eq!(ours.is_dir(), std.is_dir(), "is_dir of {what}");
    assert_eq!(ours.is_symlink(), std.is_symlink(), "is_symlink of {what}");
    assert_eq!(ours.len(), std.len(), "len of {what}");
    assert_eq!(
        ours.permissions(),
        std.permissions(),
        "permissions of {what}"
    );
    assert_eq!(
        ours.file_id(),
        FileId {
            dev: std.dev(),
            ino: std.ino()
        },
        "file id of {what}"
    );
}

#[test]
fn statx_matches_lstat_for_each_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::write(root.join("file"), vec![7u8; 12_345]).unwrap();
    fs::hard_link(root.join("file"), root.join("hardlink")).unwrap();
    fs::create_dir(root.join("sub")).unwrap();
    std::os::unix::fs::symlink("file", root.join("symlink")).unwrap();
    std::os::unix::fs::symlink("missing", root.join("dangling")).unwrap();
    let expected = [
        ("file", FileType::Regular),
        ("hardlink", FileType::Regular),
        ("sub", FileType::Directory),
        ("symlink", FileType::Symlink),
        ("dangling", FileType::Symlink),
    ];
    for choice in backends() {
        tokio_uring::start(async {
            let mut dir = builder(choice).open(root).await.unwrap();
            let mut seen = 0;
            while let Some(entry) = dir.next().await {
                let entry = entry.unwrap();
                let path = root.join(entry.file_name());
                // Several in flight while the directory is read: the
                // futures do not borrow it.
                let by_entry = dir.statx(&entry, libc::STATX_BASIC_STATS);
                let by_name = dir.statx(entry.file_name(), libc::STATX_BASIC_STATS);
                let by_path = statx(&path, libc::STATX_BASIC_STATS);
                let (a, b, c) = (
                    by_entry.await.unwrap(),
                    by_name.await.unwrap(),
                    by_path.await.unwrap(),
                );
                assert_same(&a, &path);
                assert_eq!(a, b);
                assert_eq!(a, c);
                assert_eq!(a.ino(), entry.ino());
                let want = expected
                    .iter()
                    .find(|(n, _)| entry.file_name() == *n)
                    .unwrap()
                    .1;
                assert_eq!(a.file_type(), want, "{}", path.display());
                assert_eq!(entry.file_type(), want);
                seen += 1;
            }
            assert_eq!(seen, expected.len());
            let own = dir.metadata(libc::STATX_BASIC_STATS).await.unwrap();
            assert!(own.is_dir());
            assert_same(&own, root);
            let file = dir.statx("file", libc::STATX_BASIC_STATS).await.unwrap();
            assert_eq!(file.nlink(), 2);
            assert_eq!(file.size(), 12_345);
            let gone = dir
                .statx("gone", libc::STATX_BASIC_STATS)
                .await
                .unwrap_err();
            assert_eq!(gone.kind(), std::io::ErrorKind::NotFound);
            assert!(
                gone.to_string()
                    .contains(&root.join("gone").display().to_string()),
                "{gone}"
            );
            dir.close().await.unwrap();
        });
    }
}

/// A `DirHandle` stats and opens children while the stream that owns the
/// `Dir` is being consumed by a combinator (where `dir.statx` cannot be
/// borrowed); sizes against lstat, the mount id against a direct statx.
#[test]
fn handle_works_while_a_combinator_owns_the_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for i in 0..40 {
        fs::write(root.join(format!("f{i}")), vec![1u8; i * 100]).unwrap();
    }
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub/inner"), b"x").unwrap();
    for choice in backends() {
        tokio_uring::start(async {
            let dir = builder(choice).open(root).await.unwrap();
            let at = dir.handle();
            let sizes: Vec<(Vec<u8>, u64)> = dir
                .then(|entry| {
                    let at = at.clone();
                    async move {
                        let entry = entry.unwrap();
                        let meta = at.statx(&entry, STATX_SIZE).await.unwrap();
                        (entry.file_name().as_bytes().to_vec(), meta.len())
                    }
                })
                .collect()
                .await;
            assert_eq!(sizes.len(), 41);
            for (name, len) in &sizes {
                let std = fs::symlink_metadata(root.join(OsStr::from_bytes(name))).unwrap();
                assert_eq!(*len, std.len(), "{name:?}");
            }
            // The Dir is gone; the handle still names and holds the directory.
            let mut sub: Dir = at.open_at("sub").await.unwrap();
            assert_eq!(sub.path(), root.join("sub"));
            assert_eq!(sub.backend(), at.backend());
            let inner = sub.next().await.unwrap().unwrap();
            assert_eq!(inner.file_name(), "inner");
            let own = at.metadata(STATX_BASIC_STATS | STATX_MNT_ID).await.unwrap();
            assert_same(&own, root);
            assert_eq!(at.file_id().unwrap(), own.file_id());
            // The handle's descriptor serves direct calls too.
            let sub_fd = syscall::open_dir_at(Some(at.as_fd()), c"sub").unwrap();
            let sub_stx = syscall::statx(
                Some(sub_fd.as_fd()),
                c"",
                libc::AT_EMPTY_PATH,
                libc::STATX_INO,
            )
            .unwrap();
            assert_eq!(
                sub_stx.stx_ino,
                fs::metadata(root.join("sub")).unwrap().ino()
            );
            let direct = syscall::statx(None, &path_cstr(root), 0, libc::STATX_MNT_ID).unwrap();
            if direct.stx_mask & libc::STATX_MNT_ID != 0 {
                assert_eq!(own.mount_id(), Some(direct.stx_mnt_id));
            }
            let no_mount = at.metadata(STATX_SIZE).await.unwrap();
            if no_mount.mask() & STATX_MNT_ID == 0 {
                assert_eq!(no_mount.mount_id(), None);
            }

            // A live handle keeps the descriptor open past `close`.
            let dir = builder(choice).open(root).await.unwrap();
            let handle = dir.handle();
            let link = format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd());
            dir.close().await.unwrap();
            assert_eq!(fs::read_link(&link).unwrap(), root);
            drop(handle);
            assert_ne!(fs::read_link(&link).ok().as_deref(), Some(root));
        });
    }
}

fn path_cstr(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap()
}

#[test]
fn statx_many_read_link_read_links_and_parent_match_std() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    fs::create_dir(&dir).unwrap();
    // More than one chunk, files of different sizes, links and a subdirectory.
    for i in 0..2_500 {
        fs::write(dir.join(format!("f{i}")), vec![b'x'; i % 97]).unwrap();
    }
    for i in 0..20 {
        std::os::unix::fs::symlink(
            format!("target-{i}-{}", "y".repeat(i * 20)),
            dir.join(format!("l{i}")),
        )
        .unwrap();
    }
    fs::create_dir(dir.join("sub")).unwrap();
    for choice in backends() {
        tokio_uring::start(async {
            let mut d = builder(choice).open(&dir).await.unwrap();
            let mut entries = Vec::new();
            while let Some(entry) = d.next().await {
                entries.push(entry.unwrap());
            }
            let names: Vec<_> = entries.iter().map(|e| e.file_name().to_owned()).collect();
            let stats = d.statx_many(entries, STATX_BASIC_STATS).await.unwrap();
            assert_eq!(stats.len(), names.len());
            for ((entry, meta), name) in stats.iter().zip(&names) {
                assert_eq!(entry.file_name(), name, "order kept");
                let path = dir.join(name);
                assert_same(meta.as_ref().unwrap(), &path);
                if entry.file_type() == FileType::Symlink {
                    let ours = d.read_link(entry).await.unwrap();
                    assert_eq!(ours, fs::read_link(&path).unwrap());
                }
            }
            let err = d.read_link("f1").await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains("f1"), "{err}");

            // Every name at once, links or not, in one blocking call: each
            // result is std's for the same path, in the order asked.
            let all: Vec<&std::ffi::OsStr> = names.iter().map(|n| n.as_os_str()).collect();
            let targets = d.read_links(all.iter().copied()).await.unwrap();
            assert_eq!(targets.len(), names.len());
            let mut links = 0;
            for (name, ours) in names.iter().zip(&targets) {
                let path = dir.join(name);
                match (ours, fs::read_link(&path)) {
                    (Ok(ours), Ok(std)) => {
                        assert_eq!(*ours, std, "{}", path.display());
                        links += 1;
                    }
                    (Err(ours), Err(std)) => {
                        assert_eq!(ours.kind(), std.kind(), "{}", path.display());
                        assert!(
                            ours.to_string().contains(&*name.to_string_lossy()),
                            "{ours}"
                        );
                    }
                    (ours, std) => panic!("{}: {ours:?} against std's {std:?}", path.display()),
                }
            }
            assert_eq!(links, 20);
            let missing = d.read_links(["no-such-link"]).await.unwrap();
            assert_eq!(
                missing[0].as_ref().unwrap_err().kind(),
                std::io::ErrorKind::NotFound
            );
            assert!(d.read_links(Vec::<&str>::new()).await.unwrap().is_empty());
            let parent = d.parent_metadata(STATX_BASIC_STATS).await.unwrap();
            assert_same(&parent, tmp.path());
        });
    }
}

/// Chunks after the first stat through a descriptor of their own, `.`
/// opened relative to the directory's; where that open is refused (the
/// directory lost its read permission after the `Dir` was opened), the
/// `Dir`'s own descriptor serves and every entry still gets std's
/// metadata. Run as nobody, for whom the permission counts.
#[test]
fn statx_many_answers_where_the_directory_cannot_be_opened_again() {
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.path().join("d");
    fs::create_dir(&dir).unwrap();
    // Three chunks.
    for i in 0..2 * STATX_MANY_CHUNK + 7 {
        fs::write(dir.join(format!("f{i}")), vec![b'x'; i % 13]).unwrap();
    }
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    run_child("child_statx_many_search_only", &dir, true);
}

#[test]
#[ignore = "run by statx_many_answers_where_the_directory_cannot_be_opened_again as nobody"]
fn child_statx_many_search_only() {
    let Some(dir) = child_arg() else { return };
    for choice in backends() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        tokio_uring::start(async {
            let mut d = builder(choice).open(&dir).await.unwrap();
            let mut entries = Vec::new();
            while let Some(entry) = d.next().await {
                entries.push(entry.unwrap());
            }
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o100)).unwrap();
            let again = syscall::open_dir_at(Some(d.as_fd()), c".");
            assert_eq!(
                again.unwrap_err().kind(),
                std::io::ErrorKind::PermissionDenied,
                "the test needs the open to be refused"
            );
            let n = entries.len();
            let stats = d.statx_many(entries, STATX_BASIC_STATS).await.unwrap();
            assert_eq!(stats.len(), n);
            for (entry, meta) in &stats {
                let meta = meta.as_ref().unwrap_or_else(|e| panic!("{choice:?}: {e}"));
                assert_same(meta, &dir.join(entry.file_name()));
            }
        });
    }
}
