//! The library API: every engine sees the same paths and totals, through
//! per-worker visitors; an interrupt flag set before the walk gives a
//! partial summary.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use traverse::{Engine, Error, Visitor, VisitorBuilder, WalkBuilder};

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
    fn visit(&mut self, path: &Path) {
        self.paths.push(path.to_owned());
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

#[test]
fn every_engine_gives_the_same_totals() {
    let dir = tree();
    let first = WalkBuilder::new()
        .engine(Engine::Threads)
        .jobs(1)
        .build()
        .totals(dir.path());
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
    fn visit(&mut self, path: &Path) {
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

/// A panic in a worker of the threads engine (here the visitor's) ends
/// the walk with one error that carries the panic's message, whatever the
/// number of workers: the others are not left waiting for it.
#[test]
fn a_panic_in_a_worker_ends_the_walk_with_an_error() {
    let dir = tree();
    for jobs in [1, 2, 4] {
        let root = dir.path().to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let visitors = PanicAt {
                at: root.join("a/b"),
                errors: Mutex::new(Vec::new()),
            };
            let walk = WalkBuilder::new()
                .engine(Engine::Threads)
                .jobs(jobs)
                .list(true)
                .build();
            let summary = walk.run(&root, &visitors);
            let _ = tx.send((summary, visitors.errors.into_inner().unwrap()));
        });
        let (summary, errors) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("-j {jobs}: the walk did not end"));
        assert_eq!(summary.totals.errors, 1, "-j {jobs}: {errors:?}");
        assert_eq!(errors.len(), 1, "-j {jobs}: {errors:?}");
        assert!(
            errors[0].contains("panicked") && errors[0].contains("visitor refuses"),
            "-j {jobs}: {errors:?}"
        );
    }
}
