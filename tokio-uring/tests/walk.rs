//! The recursive walk against a std::fs recursion on generated trees:
//! complete results under small descriptor limits, pruning, errors as
//! items naming the path, and the thread bridge under a tokio runtime.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::{backends, child_arg, open_fds, run_child, Rng};
use io_uring_getdents::dirent::FileType;
use tokio_uring_getdents::walk::{Visit, WalkBuilder, WalkEntry};
use tokio_uring_getdents::PathError;

/// path -> (type, depth) for the tree below `root`, by std::fs, never
/// following symbolic links; `prune` names directories not walked into.
fn reference(root: &Path, prune: &dyn Fn(&Path) -> bool) -> BTreeMap<PathBuf, (FileType, usize)> {
    fn go(
        dir: &Path,
        depth: usize,
        prune: &dyn Fn(&Path) -> bool,
        out: &mut BTreeMap<PathBuf, (FileType, usize)>,
    ) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let ft = FileType::from(e.file_type().unwrap());
            out.insert(e.path(), (ft, depth));
            if ft == FileType::Directory && !prune(&e.path()) {
                go(&e.path(), depth + 1, prune, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    out.insert(root.to_path_buf(), (FileType::Directory, 0));
    go(root, 1, prune, &mut out);
    out
}

fn as_map(entries: &[WalkEntry]) -> BTreeMap<PathBuf, (FileType, usize)> {
    let map: BTreeMap<_, _> = entries
        .iter()
        .map(|e| (e.path().to_path_buf(), (e.file_type(), e.depth())))
        .collect();
    assert_eq!(map.len(), entries.len(), "an entry came twice");
    map
}

/// A random tree: `dirs` directories spread over up to `depth` levels,
/// files, empty directories and symbolic links (one to a directory, one
/// dangling).
fn random_tree(root: &Path, seed: u64, dirs: usize, depth: usize) {
    let mut rng = Rng::new(seed);
    let mut all = vec![(root.to_path_buf(), 0)];
    for i in 0..dirs {
        let (parent, d) = loop {
            let pick = all[rng.below(all.len() as u64) as usize].clone();
            if pick.1 < depth {
                break pick;
            }
        };
        let dir = parent.join(format!("d{i}"));
        fs::create_dir(&dir).unwrap();
        for f in 0..rng.below(5) {
            fs::write(dir.join(format!("f{f}")), vec![b'x'; f as usize * 100]).unwrap();
        }
        all.push((dir, d + 1));
    }
    std::os::unix::fs::symlink(root, root.join("d0/up")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("dangling")).unwrap();
}

async fn collect(builder: WalkBuilder) -> (Vec<WalkEntry>, Vec<std::io::Error>) {
    let mut walk = builder.build();
    let (mut ok, mut err) = (Vec::new(), Vec::new());
    while let Some(item) = walk.next().await {
        match item {
            Ok(e) => ok.push(e),
            Err(e) => err.push(e),
        }
    }
    (ok, err)
}

fn path_error(err: &std::io::Error) -> &PathError {
    err.get_ref()
        .and_then(|e| e.downcast_ref::<PathError>())
        .unwrap_or_else(|| panic!("no PathError inside {err:?}"))
}

#[test]
fn matches_std_recursion_with_any_limits() {
    let tmp = tempfile::tempdir().unwrap();
    random_tree(tmp.path(), 7, 300, 12);
    let want = reference(tmp.path(), &|_| false);
    for choice in backends() {
        for (max_open, concurrency) in [(3, 1), (5, 8), (12, 2), (128, 8), (1000, 64)] {
            let builder = WalkBuilder::new(tmp.path())
                .dir_builder(common::builder(choice).buffer_size(2048))
                .max_open(max_open)
                .concurrency(concurrency);
            let (got, errors) = tokio_uring::start(collect(builder));
            assert!(errors.is_empty(), "{choice:?} {max_open}: {errors:?}");
            assert_eq!(as_map(&got), want, "{choice:?} max_open {max_open}");
            assert_eq!(got[0].path(), tmp.path(), "the root comes first");
            let position: BTreeMap<_, _> =
                got.iter().enumerate().map(|(i, e)| (e.path(), i)).collect();
            for (i, e) in got.iter().enumerate().skip(1) {
                assert!(
                    position[e.path().parent().unwrap()] < i,
                    "{} before its directory",
                    e.path().display()
                );
            }
        }
    }
}

#[test]
fn statx_and_inode_agree_with_std() {
    let tmp = tempfile::tempdir().unwrap();
    random_tree(tmp.path(), 11, 40, 4);
    let builder = WalkBuilder::new(tmp.path()).statx(tokio_uring_getdents::fs::STATX_SIZE);
    let (got, errors) = tokio_uring::start(collect(builder));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(got.len(), reference(tmp.path(), &|_| false).len());
    for e in &got {
        let std = fs::symlink_metadata(e.path()).unwrap();
        let meta = e.metadata().expect("statx asked for");
        assert_eq!(meta.size(), std.len(), "{}", e.path().display());
        assert_eq!(e.ino(), std.ino(), "{}", e.path().display());
        assert_eq!(meta.file_type(), e.file_type(), "{}", e.path().display());
    }
    // Without the mask, no metadata.
    let (got, _) = tokio_uring::start(collect(WalkBuilder::new(tmp.path())));
    assert!(got.iter().all(|e| e.metadata().is_none()));
}

/// Counts this process's descriptors before each item: the walk never holds
/// more than `max_open`, however deep or wide the tree.
/// In a child process, so that no other test opens descriptors meanwhile.
#[test]
fn holds_at_most_max_open_descriptors() {
    let tmp = tempfile::tempdir().unwrap();
    // A chain 60 deep with a few siblings at each level, and a wide level.
    let mut dir = tmp.path().to_path_buf();
    for i in 0..60 {
        for s in 0..3 {
            fs::create_dir(dir.join(format!("s{s}"))).unwrap();
        }
        dir = dir.join(format!("c{i}"));
        fs::create_dir(&dir).unwrap();
    }
    for w in 0..200 {
        fs::create_dir(tmp.path().join(format!("w{w}"))).unwrap();
    }
    run_child("child_max_open", tmp.path(), false);
}

#[test]
#[ignore = "run by holds_at_most_max_open_descriptors in its own process"]
fn child_max_open() {
    let Some(root) = child_arg() else { return };
    let want = reference(&root, &|_| false);
    for choice in backends() {
        for max_open in [3, 6, 16] {
            tokio_uring::start(async {
                let before = open_fds();
                let mut walk = WalkBuilder::new(&root)
                    .dir_builder(common::builder(choice))
                    .max_open(max_open)
                    .concurrency(4)
                    .build();
                let mut got = Vec::new();
                let mut most = 0;
                while let Some(item) = walk.next().await {
                    most = most.max(open_fds().saturating_sub(before));
                    got.push(item.unwrap());
                }
                assert_eq!(as_map(&got), want, "{choice:?} {max_open}");
                assert!(
                    most <= max_open,
                    "{choice:?}: {most} open with max_open {max_open}"
                );
                drop(walk);
                assert_eq!(open_fds(), before, "{choice:?}: descriptors left open");
            });
        }
    }
}

#[test]
fn no_emfile_under_a_low_ulimit() {
    let tmp = tempfile::tempdir().unwrap();
    random_tree(tmp.path(), 3, 2000, 40);
    run_child("child_low_ulimit", tmp.path(), false);
}

#[test]
#[ignore = "run by no_emfile_under_a_low_ulimit in its own process"]
fn child_low_ulimit() {
    let Some(root) = child_arg() else { return };
    let want = reference(&root, &|_| false);
    for choice in backends() {
        tokio_uring::start(async {
            // Room for 16 more descriptors than are open now, as a shell
            // with `ulimit -n 64` leaves a program a few dozen.
            let limit = libc::rlimit {
                rlim_cur: open_fds() as u64 + 16,
                rlim_max: 20_000,
            };
            // SAFETY: setrlimit reads the struct we pass; it lowers only
            // this child process's soft limit.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
            let builder = WalkBuilder::new(&root)
                .dir_builder(common::builder(choice))
                .max_open(16)
                .concurrency(64);
            let (got, errors) = collect(builder).await;
            assert!(errors.is_empty(), "{choice:?}: {errors:?}");
            assert_eq!(as_map(&got), want, "{choice:?}");
            // The default `max_open` fits under a low limit too: half of
            // it, where 512 would run out of descriptors.
            let limit = libc::rlimit {
                rlim_cur: open_fds() as u64 + 64,
                rlim_max: 20_000,
            };
            // SAFETY: as above.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
            let builder = WalkBuilder::new(&root).dir_builder(common::builder(choice));
            let (got, errors) = collect(builder).await;
            assert!(
                errors.is_empty(),
                "{choice:?}, default max_open: {errors:?}"
            );
            assert_eq!(as_map(&got), want, "{choice:?}, default max_open");
            let limit = libc::rlimit {
                rlim_cur: 20_000,
                rlim_max: 20_000,
            };
            // SAFETY: as above, restoring the limit.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
        });
    }
}

#[test]
fn filter_skip_current_dir_and_max_depth_prune() {
    let tmp = tempfile::tempdir().unwrap();
    random_tree(tmp.path(), 5, 200, 8);
    let pruned = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            // Generated directories only: the tempdir's own name is random.
            .is_some_and(|n| n.starts_with('d') && n.ends_with('3'))
    };
    let want = reference(tmp.path(), &pruned);
    assert!(want.len() < reference(tmp.path(), &|_| false).len());

    let builder = WalkBuilder::new(tmp.path()).filter(move |e| {
        if pruned(e.path()) {
            Visit::Prune
        } else {
            Visit::Continue
        }
    });
    let (got, errors) = tokio_uring::start(collect(builder));
    assert!(errors.is_empty());
    assert_eq!(as_map(&got), want, "filter");

    // Skip leaves out the pruned directories themselves too.
    let builder = WalkBuilder::new(tmp.path()).filter(move |e| {
        if pruned(e.path()) {
            Visit::Skip
        } else {
            Visit::Continue
        }
    });
    let (got, errors) = tokio_uring::start(collect(builder));
    assert!(errors.is_empty());
    let without: BTreeMap<_, _> = want
        .iter()
        .filter(|(p, _)| !pruned(p))
        .map(|(p, v)| (p.clone(), *v))
        .collect();
    assert!(without.len() < want.len());
    assert_eq!(as_map(&got), without, "filter skipping");

    let got = tokio_uring::start(async {
        let mut walk = WalkBuilder::new(tmp.path()).concurrency(3).build();
        let mut got = Vec::new();
        while let Some(item) = walk.next().await {
            let e = item.unwrap();
            if e.file_type() == FileType::Directory && pruned(e.path()) {
                walk.skip_current_dir();
            }
            got.push(e);
        }
        got
    });
    assert_eq!(as_map(&got), want, "skip_current_dir");

    let full = reference(tmp.path(), &|_| false);
    for depth in [0, 1, 3] {
        let (got, _) = tokio_uring::start(collect(WalkBuilder::new(tmp.path()).max_depth(depth)));
        let want: BTreeMap<_, _> = full
            .iter()
            .filter(|(_, (_, d))| *d <= depth)
            .map(|(p, v)| (p.clone(), *v))
            .collect();
        assert_eq!(as_map(&got), want, "max_depth {depth}");
    }
}

#[test]
fn symbolic_links_are_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("real/inner")).unwrap();
    std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
    let (got, _) = tokio_uring::start(collect(WalkBuilder::new(tmp.path())));
    let map = as_map(&got);
    assert_eq!(map[&tmp.path().join("link")], (FileType::Symlink, 1));
    assert!(!map.contains_key(&tmp.path().join("link/inner")));

    // A root that is a link: followed by default, refused with nofollow.
    let root = tmp.path().join("link");
    let (got, errors) = tokio_uring::start(collect(WalkBuilder::new(&root)));
    assert!(errors.is_empty());
    assert_eq!(got.len(), 2);
    let builder = WalkBuilder::new(&root)
        .dir_builder(tokio_uring_getdents::fs::Dir::builder().nofollow(true));
    let (got, errors) = tokio_uring::start(collect(builder));
    assert!(got.is_empty());
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind(), ErrorKind::NotADirectory);
    assert_eq!(path_error(&errors[0]).path(), root);
}

#[test]
fn missing_root_and_removed_subdirectory_are_items() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let (got, errors) = tokio_uring::start(collect(WalkBuilder::new(&missing)));
    assert!(got.is_empty());
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind(), ErrorKind::NotFound);
    assert_eq!(path_error(&errors[0]).path(), missing);

    // A directory removed after its parent was listed, before it is
    // opened: the filter sees each entry before its directory is opened
    // (without GETDENTS the walk reads ahead of the stream, so removing it
    // when it is yielded could come too late).
    fs::create_dir_all(tmp.path().join("a/gone")).unwrap();
    fs::create_dir_all(tmp.path().join("a/kept/x")).unwrap();
    let builder = WalkBuilder::new(tmp.path()).filter(|e| {
        if e.file_name() == "gone" {
            fs::remove_dir(e.path()).unwrap();
        }
        Visit::Continue
    });
    let (got, errors) = tokio_uring::start(collect(builder));
    let got: Vec<PathBuf> = got.iter().map(|e| e.path().to_path_buf()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].kind(), ErrorKind::NotFound);
    assert_eq!(path_error(&errors[0]).path(), tmp.path().join("a/gone"));
    assert!(
        got.contains(&tmp.path().join("a/kept/x")),
        "the walk went on"
    );
}

#[test]
fn unreadable_directories_are_items() {
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir_all(tmp.path().join("open/locked/inside")).unwrap();
    fs::create_dir_all(tmp.path().join("open/fine/x")).unwrap();
    fs::set_permissions(
        tmp.path().join("open/locked"),
        fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    run_child("child_unreadable", tmp.path(), true);
}

#[test]
#[ignore = "run by unreadable_directories_are_items as another user"]
fn child_unreadable() {
    let Some(root) = child_arg() else { return };
    let locked = root.join("open/locked");
    for choice in backends() {
        // As the root: one error, naming it.
        let builder = WalkBuilder::new(&locked).dir_builder(common::builder(choice));
        let (got, errors) = tokio_uring::start(collect(builder));
        assert!(got.is_empty());
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].kind(), ErrorKind::PermissionDenied);
        assert_eq!(path_error(&errors[0]).path(), locked);
        // Inside the tree: the directory is an entry, opening it an error,
        // and the rest of the tree is walked.
        let builder = WalkBuilder::new(&root).dir_builder(common::builder(choice));
        let (got, errors) = tokio_uring::start(collect(builder));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].kind(), ErrorKind::PermissionDenied);
        assert_eq!(path_error(&errors[0]).path(), locked);
        let paths: Vec<_> = got.iter().map(|e| e.path().to_path_buf()).collect();
        assert!(paths.contains(&locked));
        assert!(paths.contains(&root.join("open/fine/x")));
        assert!(!paths.contains(&locked.join("inside")));
    }
}

#[test]
fn bridge_streams_to_a_multi_thread_tokio_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    random_tree(tmp.path(), 9, 500, 10);
    let want = reference(tmp.path(), &|_| false);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let root = tmp.path().to_path_buf();
    let got = rt.block_on(async move {
        // The receiver is Send: it can move into a spawned task.
        tokio::spawn(async move {
            let mut walk = WalkBuilder::new(&root).max_open(8).spawn().unwrap();
            let mut got = Vec::new();
            while let Some(item) = walk.next().await {
                got.push(item.unwrap());
            }
            got
        })
        .await
        .unwrap()
    });
    assert_eq!(as_map(&got), want);

    // Errors cross the channel with their kind and path.
    let missing = tmp.path().join("missing");
    let items = rt.block_on(async {
        let mut walk = WalkBuilder::new(&missing).spawn().unwrap();
        let mut items = Vec::new();
        while let Some(item) = walk.next().await {
            items.push(item);
        }
        items
    });
    assert_eq!(items.len(), 1);
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(path_error(err).path(), missing);

    run_child("child_bridge_drop", tmp.path(), false);
}

/// Dropping the receiver early stops the walk, and its thread closes
/// every descriptor (the walk's and its ring's).
#[test]
#[ignore = "run by bridge_streams_to_a_multi_thread_tokio_runtime in its own process"]
fn child_bridge_drop() {
    let Some(root) = child_arg() else { return };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let before = open_fds();
    rt.block_on(async {
        let mut walk = WalkBuilder::new(&root).spawn().unwrap();
        walk.next().await.unwrap().unwrap();
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while open_fds() > before {
        assert!(
            std::time::Instant::now() < deadline,
            "the walk thread kept {} descriptors: {:?}",
            open_fds() - before,
            fs::read_dir("/proc/self/fd")
                .unwrap()
                .map(|e| fs::read_link(e.unwrap().path()))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Without GETDENTS the walk reads ahead on blocking threads: dropping it
/// part-way stops them, and they close every descriptor they held.
#[test]
fn dropping_a_walk_part_way_closes_every_descriptor() {
    let tmp = tempfile::tempdir().unwrap();
    random_tree(tmp.path(), 11, 400, 6);
    run_child("child_walk_drop", tmp.path(), false);
}

#[test]
#[ignore = "run by dropping_a_walk_part_way_closes_every_descriptor in its own process"]
fn child_walk_drop() {
    let Some(root) = child_arg() else { return };
    for choice in backends() {
        tokio_uring::start(async {
            let before = open_fds();
            let mut walk = WalkBuilder::new(&root)
                .dir_builder(common::builder(choice))
                .build();
            for _ in 0..20 {
                walk.next().await.unwrap().unwrap();
            }
            drop(walk);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while open_fds() > before {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{choice:?}: {} descriptors left open",
                    open_fds() - before
                );
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        });
    }
}

/// The filter runs on the walk's blocking threads without GETDENTS; its
/// panic comes out of the stream, as it does where it runs on the
/// stream's own thread.
#[test]
fn a_panic_in_the_filter_comes_out_of_the_stream() {
    let tmp = tempfile::tempdir().unwrap();
    random_tree(tmp.path(), 12, 50, 3);
    for choice in backends() {
        let walked = std::panic::catch_unwind(|| {
            tokio_uring::start(async {
                let mut walk = WalkBuilder::new(tmp.path())
                    .dir_builder(common::builder(choice))
                    .filter(|e| {
                        assert!(e.depth() < 2, "filter gave up");
                        Visit::Continue
                    })
                    .build();
                while walk.next().await.is_some() {}
            })
        });
        let panic = walked.expect_err("the filter's panic");
        let why = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
        assert_eq!(why, Some("filter gave up"), "{choice:?}");
    }
}
