//! The library API: every engine sees the same paths and totals, through
//! per-worker visitors; an interrupt flag set before the walk gives a
//! partial summary.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use traverse::{Engine, Entry, Error, Visitor, VisitorBuilder, WalkBuilder};

/// Collects what every worker visits into one set.
#[derive(Default)]
struct Collect {
    paths: Mutex<Vec<PathBuf>>,
    errors: Mutex<Vec<String>>,
}

struct CollectWorker<'a> {
    into: &'a Collect,
    paths: Vec<PathBuf>,
}

impl Visitor for CollectWorker<'_> {
    fn visit_entry(&mut self, entry: &Entry<'_>) {
        self.paths.push(entry.path().to_owned());
    }

    fn error(&mut self, err: Error) {
        self.into.errors.lock().unwrap().push(err.to_string());
    }
}

impl Drop for CollectWorker<'_> {
    fn drop(&mut self) {
        self.into.paths.lock().unwrap().append(&mut self.paths);
    }
}

impl VisitorBuilder for Collect {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(CollectWorker {
            into: self,
            paths: Vec::new(),
        })
    }
}

#[cfg(feature = "reference-engines")]
const ENGINES: &[Engine] = &[
    Engine::Auto,
    Engine::Threads,
    Engine::Uring,
    Engine::Tokio,
    Engine::Std,
];
#[cfg(not(feature = "reference-engines"))]
const ENGINES: &[Engine] = &[Engine::Auto, Engine::Threads, Engine::Uring];

/// A tree with a large directory (chunked stats) holding subdirectories.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    fs::create_dir(&big).unwrap();
    for i in 0..5000 {
        if i % 100 == 0 {
            fs::create_dir(big.join(format!("sub{i}"))).unwrap();
            fs::write(big.join(format!("sub{i}/inner")), b"abc").unwrap();
        } else {
            fs::write(big.join(format!("f{i}")), b"x").unwrap();
        }
    }
    fs::create_dir_all(dir.path().join("a/b/c")).unwrap();
    dir
}

/// Every path below `root`, by `std::fs::read_dir`.
fn reference(root: &Path) -> BTreeSet<PathBuf> {
    let mut all = BTreeSet::from([root.to_owned()]);
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
            all.insert(entry.path());
        }
    }
    all
}

#[test]
fn every_engine_lists_the_same_paths_as_read_dir() {
    let dir = tree();
    let want = reference(dir.path());
    for &engine in ENGINES {
        for jobs in [1, 3] {
            let collect = Collect::default();
            let walk = WalkBuilder::new()
                .engine(engine)
                .jobs(jobs)
                .list(true)
                .build();
            let summary = walk.run(dir.path(), &collect);
            let paths = collect.paths.into_inner().unwrap();
            let got: BTreeSet<PathBuf> = paths.iter().cloned().collect();
            assert_eq!(
                got.len(),
                paths.len(),
                "{engine} -j {jobs}: a path listed twice"
            );
            assert_eq!(got, want, "{engine} -j {jobs}");
            assert_eq!(
                summary.totals.files + summary.totals.dirs,
                want.len() as u64
            );
            assert!(collect.errors.into_inner().unwrap().is_empty());
        }
    }
}

/// The totals of the threads engine with one worker, the reference the
/// other engines and settings must give too (the simplest engine, `std`,
/// is not in every build).
fn reference_totals(root: &Path) -> traverse::Summary {
    WalkBuilder::new()
        .engine(Engine::Threads)
        .jobs(1)
        .build()
        .totals(root)
}

#[test]
fn every_engine_gives_the_same_totals() {
    let dir = tree();
    let first = reference_totals(dir.path());
    assert_eq!(first.totals.files, 4950 + 50);
    for &engine in ENGINES {
        for jobs in [1, 2, 7] {
            let walk = WalkBuilder::new().engine(engine).jobs(jobs).build();
            assert_eq!(walk.totals(dir.path()), first, "{engine} -j {jobs}");
        }
    }
}

#[test]
fn a_set_interrupt_flag_gives_a_partial_summary() {
    let dir = tree();
    for &engine in ENGINES {
        let walk = WalkBuilder::new()
            .engine(engine)
            .interrupt(Arc::new(AtomicBool::new(true)))
            .build();
        let summary = walk.totals(dir.path());
        assert!(summary.partial, "{engine}");
        assert_eq!(
            summary.totals.dirs, 1,
            "{engine}: only the root was counted"
        );
    }
}

#[test]
fn errors_carry_the_path_and_the_cause() {
    let collect = Collect::default();
    let walk = WalkBuilder::new().build();
    let summary = walk.run(Path::new("/nonexistent/traverse-test"), &collect);
    assert_eq!(summary.totals.errors, 1);
    let errors = collect.errors.into_inner().unwrap();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("/nonexistent/traverse-test: cannot stat: "),
        "{errors:?}"
    );
}

/// Visitors that panic when they are handed `at`, and record the errors
/// they get.
struct PanicAt {
    at: PathBuf,
    errors: Mutex<Vec<String>>,
}

struct PanicAtWorker<'a>(&'a PanicAt);

impl Visitor for PanicAtWorker<'_> {
    fn visit_entry(&mut self, entry: &Entry<'_>) {
        let path = entry.path();
        assert!(path != self.0.at, "visitor refuses {}", path.display());
    }

    fn error(&mut self, err: Error) {
        self.0.errors.lock().unwrap().push(err.to_string());
    }
}

impl VisitorBuilder for PanicAt {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(PanicAtWorker(self))
    }
}

/// A panic in a worker of the parallel engines (here the visitor's) ends
/// the walk with one error that carries the panic's message, whatever the
/// number of workers: the others are not left waiting for it, and the
/// panic does not reach the caller (it did with `uring`).
#[test]
fn a_panic_in_a_worker_ends_the_walk_with_an_error() {
    let dir = tree();
    for (engine, jobs) in [1, 2, 4]
        .into_iter()
        .flat_map(|jobs| [(Engine::Threads, jobs), (Engine::Uring, jobs)])
    {
        let root = dir.path().to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let visitors = PanicAt {
                at: root.join("a/b"),
                errors: Mutex::new(Vec::new()),
            };
            let walk = WalkBuilder::new()
                .engine(engine)
                .jobs(jobs)
                .list(true)
                .build();
            let summary = walk.run(&root, &visitors);
            let _ = tx.send((summary, visitors.errors.into_inner().unwrap()));
        });
        let (summary, errors) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{engine:?} -j {jobs}: the walk did not end"));
        assert_eq!(summary.totals.errors, 1, "{engine:?} -j {jobs}: {errors:?}");
        assert_eq!(errors.len(), 1, "{engine:?} -j {jobs}: {errors:?}");
        assert!(
            errors[0].contains("panicked") && errors[0].contains("visitor refuses"),
            "{engine:?} -j {jobs}: {errors:?}"
        );
    }
}

/// The bytes of the 20 files `linked_tree` links twice.
const LINKED_BYTES: u64 = 20 * 100 + 190;

/// A small tree whose files are hard-linked across directories, so that a
/// run that kept the previous run's inodes would count fewer bytes. Small:
/// the tests that walk it walk it dozens of times, under valgrind in CI too.
fn linked_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["a", "b", "c/d"] {
        fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    for i in 0..20 {
        let file = dir.path().join(format!("a/f{i}"));
        fs::write(&file, vec![b'x'; 100 + i]).unwrap();
        fs::hard_link(&file, dir.path().join(format!("c/d/l{i}"))).unwrap();
    }
    fs::write(dir.path().join("b/plain"), b"abc").unwrap();
    dir
}

#[test]
fn two_runs_of_one_walk_give_the_same_totals_and_progress() {
    let dir = linked_tree();
    let reference = reference_totals(dir.path());
    // Every name, as find counts them; the bytes of each linked inode
    // once, as du -sb counts them.
    assert_eq!(reference.totals.files, 41);
    let dir_bytes: u64 = ["", "a", "b", "c", "c/d"]
        .iter()
        .map(|d| fs::symlink_metadata(dir.path().join(d)).unwrap().len())
        .sum();
    assert_eq!(
        reference.totals.bytes,
        u128::from(dir_bytes + LINKED_BYTES + 3)
    );
    for &engine in ENGINES {
        let walk = WalkBuilder::new().engine(engine).jobs(2).build();
        let first = walk.totals(dir.path());
        let progress = (walk.progress().entries(), walk.progress().bytes());
        let second = walk.totals(dir.path());
        assert_eq!(first, reference, "{engine}: first run");
        assert_eq!(second, reference, "{engine}: second run");
        assert_eq!(
            (walk.progress().entries(), walk.progress().bytes()),
            progress,
            "{engine}: progress of the second run alone"
        );
        // Entries seen: the root, 4 directories, 41 names.
        assert_eq!(progress.0, 46, "{engine}");
    }
}

#[test]
fn run_next_counts_an_inode_linked_under_two_roots_once() {
    let dir = linked_tree();
    for &engine in ENGINES {
        let walk = WalkBuilder::new().engine(engine).build();
        let a = walk.run(&dir.path().join("a"), &traverse::Ignore);
        let c = walk.run_next(&dir.path().join("c"), &traverse::Ignore);
        let alone = walk.run(&dir.path().join("c"), &traverse::Ignore);
        assert_eq!(a.totals.files, 20, "{engine}");
        assert_eq!((c.totals.files, alone.totals.files), (20, 20), "{engine}");
        // The files' bytes were counted under a already.
        assert_eq!(
            alone.totals.bytes - c.totals.bytes,
            u128::from(LINKED_BYTES),
            "{engine}"
        );
    }
}

#[test]
fn a_closure_visitor_sees_every_path_and_error() {
    let dir = linked_tree();
    let want = reference(dir.path());
    for &engine in ENGINES {
        let mut got = std::collections::BTreeMap::new();
        let mut errors = Vec::new();
        let summary = WalkBuilder::new()
            .engine(engine)
            .jobs(3)
            .list(true)
            .build()
            .run_with(dir.path(), |event| match event {
                traverse::Event::Entry(entry) => {
                    let value = (entry.file_type(), entry.depth());
                    assert!(got.insert(entry.path().to_owned(), value).is_none());
                }
                traverse::Event::Error(err) => errors.push(err.to_string()),
            });
        assert!(got.keys().eq(want.iter()), "{engine}");
        for (path, &(file_type, depth)) in &got {
            let std_type = fs::symlink_metadata(path).unwrap().file_type();
            let expected = if std_type.is_dir() {
                traverse::FileType::Directory
            } else {
                traverse::FileType::Regular
            };
            assert_eq!(file_type, expected, "{engine}: {}", path.display());
            let below = path.strip_prefix(dir.path()).unwrap().components().count();
            assert_eq!(depth, below, "{engine}: {}", path.display());
        }
        assert!(errors.is_empty(), "{engine}: {errors:?}");
        assert_eq!(summary.totals.errors, 0);
    }
    let mut errors = Vec::new();
    let summary =
        WalkBuilder::new()
            .build()
            .run_with(Path::new("/nonexistent/traverse-test"), |event| {
                if let traverse::Event::Error(err) = event {
                    errors.push(err.to_string());
                }
            });
    assert_eq!(summary.totals.errors, 1);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("/nonexistent/traverse-test: "));
}

/// Called from async code, as under `#[tokio::main]` (a multi-thread
/// runtime) or `#[tokio::main(flavor = "current_thread")]`: every engine
/// walks, with the same totals as outside a runtime, and no panic.
#[cfg(feature = "reference-engines")]
#[test]
fn every_engine_walks_inside_a_tokio_runtime() {
    let dir = linked_tree();
    let want = reference_totals(dir.path());
    let runtimes = [
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap(),
    ];
    for (flavor, runtime) in ["multi_thread", "current_thread"].iter().zip(runtimes) {
        for &engine in ENGINES {
            let walk = WalkBuilder::new().engine(engine).jobs(2).build();
            let got = runtime.block_on(async { walk.totals(dir.path()) });
            assert_eq!(got, want, "{engine} in a {flavor} runtime");
            let listed = runtime.block_on(async {
                let mut paths = 0u64;
                WalkBuilder::new()
                    .engine(engine)
                    .list(true)
                    .build()
                    .run_with(dir.path(), |event| {
                        paths += u64::from(matches!(event, traverse::Event::Entry(_)));
                    });
                paths
            });
            assert_eq!(listed, want.totals.files + want.totals.dirs, "{engine}");
            // From `spawn_blocking`, as the README advises async code to
            // call it: that thread is inside the runtime's context too.
            let walk = WalkBuilder::new().engine(engine).build();
            let root = dir.path().to_owned();
            let blocking = runtime.block_on(async {
                tokio::task::spawn_blocking(move || walk.totals(&root))
                    .await
                    .unwrap()
            });
            assert_eq!(blocking, want, "{engine} in spawn_blocking ({flavor})");
        }
    }
}

/// With `list_metadata`, every listed entry carries what `lstat` says of
/// its path, and the totals hold the sizes a walk without listing counts.
#[test]
fn listed_entries_carry_their_metadata() {
    use std::os::unix::fs::MetadataExt;
    use traverse::Event;

    let dir = linked_tree();
    std::os::unix::fs::symlink("a/f0", dir.path().join("b/link")).unwrap();
    let want = reference_totals(dir.path());
    for &engine in ENGINES {
        for jobs in [1, 3] {
            let walk = WalkBuilder::new()
                .engine(engine)
                .jobs(jobs)
                .list(true)
                .list_metadata(true)
                .build();
            let mut seen = Vec::new();
            let summary = walk.run_with(dir.path(), |event| match event {
                Event::Entry(e) => {
                    let meta = e.metadata().copied();
                    seen.push((e.path().to_owned(), meta));
                }
                Event::Error(err) => panic!("{engine}: {err}"),
            });
            assert_eq!(summary.totals, want.totals, "{engine} -j {jobs}");
            assert_eq!(seen.len(), reference(dir.path()).len(), "{engine}");
            for (path, meta) in seen {
                let meta = meta.unwrap_or_else(|| panic!("{engine}: {path:?} without metadata"));
                let std = fs::symlink_metadata(&path).unwrap();
                let got = (meta.len(), meta.disk_bytes(), meta.ino(), meta.dev());
                let expected = (std.size(), std.blocks() * 512, std.ino(), std.dev());
                assert_eq!(got, expected, "{engine}: {path:?}");
                assert_eq!((meta.nlink(), meta.mode()), (std.nlink(), std.mode()));
                let kinds = (meta.is_file(), meta.is_dir(), meta.is_symlink());
                let ft = std.file_type();
                assert_eq!(kinds, (ft.is_file(), ft.is_dir(), ft.is_symlink()));
            }
        }
    }
    // Without it, a listing carries none and counts no sizes.
    let walk = WalkBuilder::new().list(true).build();
    let mut metas = 0;
    let summary = walk.run_with(dir.path(), |event| {
        if let Event::Entry(e) = event {
            metas += usize::from(e.metadata().is_some());
        }
    });
    assert_eq!((metas, summary.totals.bytes), (0, 0));
}

/// A time as `lstat` gives it: seconds since the epoch (negative before
/// it) and the nanoseconds added to them, worked out from the
/// `SystemTime` alone.
fn sec_nsec(time: std::time::SystemTime) -> (i64, i64) {
    let (after, since) = match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (true, d),
        Err(e) => (false, e.duration()),
    };
    let (sec, nsec) = (since.as_secs() as i64, i64::from(since.subsec_nanos()));
    match (after, nsec) {
        (true, _) => (sec, nsec),
        (false, 0) => (-sec, 0),
        (false, _) => (-sec - 1, 1_000_000_000 - nsec),
    }
}

/// With `list_metadata`, every engine hands out for every listed entry
/// (the root, directories, a symlink, files with times set after and
/// before the epoch) what `ls -l` shows: owner, group, mode, times to the
/// nanosecond, size, links and inode, as `lstat` gives them, with `-x` too
/// (where the `std` and `tokio` engines stat directories with `statx`).
#[test]
fn listed_metadata_holds_what_ls_l_shows() {
    use std::collections::BTreeMap;
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, UNIX_EPOCH};
    use traverse::Event;

    let dir = linked_tree();
    let root = dir.path();
    std::os::unix::fs::symlink("a/f0", root.join("b/link")).unwrap();
    let set = UNIX_EPOCH + Duration::new(1_234_567_890, 123_456_789);
    let file = fs::File::options().write(true).open(root.join("b/plain"));
    file.unwrap().set_modified(set).unwrap();
    fs::File::open(root.join("c"))
        .unwrap()
        .set_modified(set)
        .unwrap();
    // 1.25 s before the epoch: -2 s and 750 000 000 ns.
    let before = UNIX_EPOCH - Duration::new(1, 250_000_000);
    let times = fs::FileTimes::new()
        .set_modified(before)
        .set_accessed(before);
    fs::File::create(root.join("a/old"))
        .unwrap()
        .set_times(times)
        .unwrap();
    assert_eq!(sec_nsec(before), (-2, 750_000_000));
    // Owners other than the test's own, where it may give them (as root),
    // so that a uid or gid read from the wrong field shows.
    let owners = ["b/plain", "b/link", "c"].map(|name| {
        match std::os::unix::fs::lchown(root.join(name), Some(4242), Some(4343)) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => false,
            Err(e) => panic!("lchown {name}: {e}"),
        }
    });
    // Reads every directory once, so that with `relatime` no walk moves
    // their access times any more.
    let paths = reference(root);
    for &engine in ENGINES {
        for (jobs, one_file_system) in [(1, false), (3, false), (2, true)] {
            let case = format!("{engine} -j {jobs} -x {one_file_system}");
            // Before the walk: it stats each directory before reading it,
            // which may move its access time (`strictatime`).
            let want: BTreeMap<PathBuf, fs::Metadata> = paths
                .iter()
                .map(|p| (p.clone(), fs::symlink_metadata(p).unwrap()))
                .collect();
            let mut got = BTreeMap::new();
            let walk = WalkBuilder::new()
                .engine(engine)
                .jobs(jobs)
                .one_file_system(one_file_system)
                .list(true)
                .list_metadata(true)
                .build();
            walk.run_with(root, |event| match event {
                Event::Entry(e) => {
                    let meta = e.metadata().copied();
                    assert!(got.insert(e.path().to_owned(), meta).is_none());
                }
                Event::Error(err) => panic!("{case}: {err}"),
            });
            assert!(got.keys().eq(want.keys()), "{case}: {got:?}");
            for (path, meta) in &got {
                let at = format!("{case}: {}", path.display());
                let meta = meta.unwrap_or_else(|| panic!("{at}: no metadata"));
                let std = &want[path];
                let owner = (meta.uid(), meta.gid(), meta.mode());
                assert_eq!(owner, (std.uid(), std.gid(), std.mode()), "{at}");
                let inode = (meta.len(), meta.nlink(), meta.ino(), meta.dev());
                let std_inode = (std.size(), std.nlink(), std.ino(), std.dev());
                assert_eq!(inode, std_inode, "{at}");
                let got_times = [meta.modified(), meta.accessed(), meta.changed()].map(sec_nsec);
                let std_times = [
                    (std.mtime(), std.mtime_nsec()),
                    (std.atime(), std.atime_nsec()),
                    (std.ctime(), std.ctime_nsec()),
                ];
                assert_eq!(got_times, std_times, "{at}");
                let std_system = (std.modified().unwrap(), std.accessed().unwrap());
                assert_eq!((meta.modified(), meta.accessed()), std_system, "{at}");
            }
            let meta = |name: &str| got[&root.join(name)].unwrap();
            assert!(got[root].unwrap().is_dir(), "{case}");
            assert!(meta("b/link").is_symlink(), "{case}");
            assert_eq!(
                (meta("b/plain").modified(), meta("c").modified()),
                (set, set),
                "{case}"
            );
            let old = meta("a/old");
            assert_eq!((old.modified(), old.accessed()), (before, before), "{case}");
            for (name, chowned) in ["b/plain", "b/link", "c"].into_iter().zip(owners) {
                if chowned {
                    assert_eq!((meta(name).uid(), meta(name).gid()), (4242, 4343), "{case}");
                }
            }
        }
    }
}

/// `auto` runs `uring` exactly where the kernel's GETDENTS has readdirplus
/// (the test VM's patched kernel: `IO_URING_GETDENTS_REQUIRE=1` there),
/// `threads` elsewhere, without a fallback message, and counts as the
/// reference does.
#[test]
fn auto_runs_uring_exactly_where_readdirplus_is() {
    let plus = io_uring_getdents::detect::plus_cached().opcode().is_some();
    if std::env::var("IO_URING_GETDENTS_REQUIRE").as_deref() == Ok("1") {
        assert!(plus, "{}", io_uring_getdents::detect::plus_cached());
    }
    let walk = WalkBuilder::new().build();
    let want = if plus { Engine::Uring } else { Engine::Threads };
    assert_eq!(walk.engine(), want);
    assert!(walk.fallback().is_none());
    let dir = tree();
    assert_eq!(
        walk.totals(dir.path()).totals,
        reference_totals(dir.path()).totals
    );
}

/// Every engine gives each listed entry its place in its directory's
/// listing: sorted by it, a directory's entries come in the order
/// `std::fs::read_dir` (`getdents64`) gives, numbered from 0 with no gap,
/// each with its `d_ino`; also in the large directory read in chunks.
#[test]
fn listing_places_follow_getdents64_in_every_engine() {
    use std::collections::BTreeMap;
    use std::os::unix::fs::DirEntryExt;
    use traverse::Event;

    let dir = tree();
    for &engine in ENGINES {
        let mut by_dir: BTreeMap<PathBuf, Vec<(u32, u64, PathBuf)>> = BTreeMap::new();
        let walk = WalkBuilder::new()
            .engine(engine)
            .list(true)
            .min_depth(1)
            .build();
        walk.run_with(dir.path(), |event| {
            if let Event::Entry(e) = event {
                let Some(place) = e.listing_place() else {
                    panic!("{engine:?}: no place for {}", e.path().display());
                };
                let parent = e.path().parent().unwrap().to_owned();
                by_dir.entry(parent).or_default().push((
                    place.seq(),
                    place.ino(),
                    e.path().to_owned(),
                ));
            }
        });
        assert!(
            by_dir.len() > 50,
            "{engine:?}: {} directories",
            by_dir.len()
        );
        for (parent, mut got) in by_dir {
            got.sort();
            let want: Vec<(u32, u64, PathBuf)> = fs::read_dir(&parent)
                .unwrap()
                .enumerate()
                .map(|(i, e)| {
                    let e = e.unwrap();
                    (i as u32, e.ino(), e.path())
                })
                .collect();
            assert_eq!(got, want, "{engine:?} in {}", parent.display());
        }
    }
}
