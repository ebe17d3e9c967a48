//! Errors name the path, keep their kind, come once, and never panic.

mod common;

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::{backends, builder, child_arg, create_files, run_child};
use tokio_uring_getdents::fs::Dir;
use tokio_uring_getdents::PathError;

fn path_error(err: &std::io::Error) -> &PathError {
    err.get_ref()
        .and_then(|e| e.downcast_ref::<PathError>())
        .unwrap_or_else(|| panic!("no PathError inside {err:?}"))
}

fn assert_names(err: &std::io::Error, path: &Path, errno: i32) {
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "message {err} does not name {}",
        path.display()
    );
    assert_eq!(path_error(err).path(), path);
    assert_eq!(path_error(err).raw_os_error(), Some(errno), "{err}");
}

#[test]
fn missing_directory_and_file_instead_of_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("file"), b"x").unwrap();
    fs::create_dir(tmp.path().join("real")).unwrap();
    std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
    for choice in backends() {
        tokio_uring::start(async {
            let missing = tmp.path().join("missing");
            let err = builder(choice).open(&missing).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotFound);
            assert_names(&err, &missing, libc::ENOENT);

            let file = tmp.path().join("file");
            let err = builder(choice).open(&file).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotADirectory);
            assert_names(&err, &file, libc::ENOTDIR);

            let parent = builder(choice).open(tmp.path()).await.unwrap();
            let err = Dir::open_at(&parent, "missing").await.unwrap_err();
            assert_names(&err, &missing, libc::ENOENT);
            let err = Dir::open_at(&parent, "file").await.unwrap_err();
            assert_names(&err, &file, libc::ENOTDIR);
            // open_at never follows a symbolic link; open does.
            let err = Dir::open_at(&parent, "link").await.unwrap_err();
            assert_names(&err, &tmp.path().join("link"), libc::ENOTDIR);
            builder(choice).open(tmp.path().join("link")).await.unwrap();
            Dir::open_at(&parent, "real").await.unwrap();

            for bad in ["", ".", "..", "a/b", "../real"] {
                let err = Dir::open_at(&parent, bad).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
                assert!(err.to_string().contains(&tmp.path().display().to_string()));
                let err = parent
                    .statx(bad, libc::STATX_BASIC_STATS)
                    .await
                    .unwrap_err();
                assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
            }
            let err = builder(choice).open("nul\0byte").await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput);
            assert!(err.to_string().contains("nul"), "{err}");
        });
    }
}

/// `nofollow` refuses a root that is a symbolic link (a path swapped for a
/// link to another tree), and `file_id` tells a directory swapped in under
/// the same path apart from the one opened first.
#[test]
fn nofollow_refuses_a_linked_root_and_file_id_sees_a_swap() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("real")).unwrap();
    fs::create_dir(tmp.path().join("other")).unwrap();
    std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
    let link = tmp.path().join("link");
    let real = tmp.path().join("real");
    for choice in backends() {
        tokio_uring::start(async {
            let err = builder(choice)
                .nofollow(true)
                .open(&link)
                .await
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotADirectory);
            assert_names(&err, &link, libc::ENOTDIR);
            // The default follows it, as std::fs::read_dir does.
            let followed = builder(choice).open(&link).await.unwrap();

            let first = builder(choice).nofollow(true).open(&real).await.unwrap();
            let id = first.file_id().unwrap();
            let std = fs::metadata(&real).unwrap();
            assert_eq!((id.dev, id.ino), (std.dev(), std.ino()));
            assert_eq!(followed.file_id().unwrap(), id);
            let meta = first.metadata(libc::STATX_BASIC_STATS).await.unwrap();
            assert_eq!(meta.file_id(), id);

            fs::rename(&real, tmp.path().join("moved")).unwrap();
            fs::rename(tmp.path().join("other"), &real).unwrap();
            let again = builder(choice).nofollow(true).open(&real).await.unwrap();
            assert_ne!(again.file_id().unwrap(), id, "a swapped directory");
            // Put things back for the next backend.
            fs::rename(&real, tmp.path().join("other")).unwrap();
            fs::rename(tmp.path().join("moved"), &real).unwrap();
        });
    }
}

#[test]
fn read_error_comes_once_then_none() {
    for choice in backends() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::create_dir(&victim).unwrap();
        create_files(&victim, "entry-", 200);
        tokio_uring::start(async {
            let mut dir = builder(choice)
                .buffer_size(512)
                .open(&victim)
                .await
                .unwrap();
            // The first batch (and the read-ahead) may come before removal.
            let first = dir.next().await.unwrap().unwrap();
            assert!(first.file_name().to_string_lossy().starts_with("entry-"));
            // Lets the read-ahead finish first: one running while the
            // entries are unlinked finds none left past its offset and
            // reports the end of the directory, before the rmdir that
            // makes reads fail (a race of the test, not of the stream).
            std::thread::sleep(std::time::Duration::from_millis(200));
            fs::remove_dir_all(&victim).unwrap();
            // Reading a removed directory fails with ENOENT. Entries
            // buffered or read ahead before the removal may come first.
            let mut errors = 0;
            let mut entries = 1;
            while let Some(item) = dir.next().await {
                match item {
                    Ok(_) => entries += 1,
                    Err(err) => {
                        errors += 1;
                        assert_eq!(err.kind(), ErrorKind::NotFound, "{choice:?}");
                        assert_names(&err, &victim, libc::ENOENT);
                    }
                }
                assert!(entries <= 200 && errors <= 1);
            }
            assert_eq!(errors, 1, "{choice:?}: {entries} entries and no error");
            for _ in 0..5 {
                assert!(
                    dir.next().await.is_none(),
                    "{choice:?}: None after the error"
                );
            }
        });
    }
}

#[test]
fn permission_denied_names_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let locked = tmp.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::create_dir(locked.join("inside")).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    run_child("child_permission_denied", &locked, true);
}

#[test]
#[ignore = "run by permission_denied_names_the_path as another user"]
fn child_permission_denied() {
    let Some(locked) = child_arg() else { return };
    for choice in backends() {
        tokio_uring::start(async {
            let err = builder(choice).open(&locked).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::PermissionDenied);
            assert_names(&err, &locked, libc::EACCES);
            let parent = builder(choice)
                .open(locked.parent().unwrap())
                .await
                .unwrap();
            let err = parent.statx("locked", libc::STATX_BASIC_STATS).await;
            assert!(
                err.is_ok(),
                "stat needs no permission on the directory itself"
            );
            let err =
                tokio_uring_getdents::fs::statx(locked.join("inside"), libc::STATX_BASIC_STATS)
                    .await
                    .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::PermissionDenied);
            assert_names(&err, &locked.join("inside"), libc::EACCES);
        });
    }
}

#[test]
fn too_many_open_files_names_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    run_child("child_too_many_open_files", tmp.path(), false);
}

#[test]
#[ignore = "run by too_many_open_files_names_the_path in its own process"]
fn child_too_many_open_files() {
    let Some(dir) = child_arg() else { return };
    for choice in backends() {
        tokio_uring::start(async {
            let open_now = common::open_fds() as u64;
            let limit = libc::rlimit {
                rlim_cur: open_now + 8,
                rlim_max: 20_000,
            };
            // SAFETY: setrlimit reads the struct we pass; it lowers only
            // this child process's soft limit.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
            let mut held = Vec::new();
            let err = loop {
                match builder(choice).open(&dir).await {
                    Ok(d) => held.push(d),
                    Err(e) => break e,
                }
                assert!(held.len() < 100, "the limit did not apply");
            };
            assert_names(&err, &dir, libc::EMFILE);
            drop(held);
            let limit = libc::rlimit {
                rlim_cur: 20_000,
                rlim_max: 20_000,
            };
            // SAFETY: as above, restoring the limit.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
        });
    }
}
