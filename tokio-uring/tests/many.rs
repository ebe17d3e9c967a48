//! 10 000 directories open and read at once in one runtime, bounded by a
//! limit the caller sets (here a semaphore).

mod common;

use std::cell::Cell;
use std::fs;
use std::rc::Rc;
use std::sync::Arc;

use common::{backends, builder, create_files};
use tokio::sync::Semaphore;

const DIRS: usize = 10_000;
const LIMIT: usize = 256;

#[test]
fn ten_thousand_directories_concurrently() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..DIRS {
        let dir = tmp.path().join(format!("d{i}"));
        fs::create_dir(&dir).unwrap();
        // A different number of entries per directory, so that a mix-up
        // between chains shows.
        create_files(&dir, &format!("d{i}-"), i % 5);
    }
    for choice in backends() {
        let started = std::time::Instant::now();
        let (max_open, total) = tokio_uring::start(async {
            let permits = Arc::new(Semaphore::new(LIMIT));
            let open_now = Rc::new(Cell::new(0usize));
            let max_open = Rc::new(Cell::new(0usize));
            let mut tasks = Vec::with_capacity(DIRS);
            for i in 0..DIRS {
                let permits = Arc::clone(&permits);
                let (open_now, max_open) = (Rc::clone(&open_now), Rc::clone(&max_open));
                let path = tmp.path().join(format!("d{i}"));
                tasks.push(tokio_uring::spawn(async move {
                    let _permit = permits.acquire().await.unwrap();
                    let mut dir = builder(choice).open(&path).await.unwrap();
                    open_now.set(open_now.get() + 1);
                    max_open.set(max_open.get().max(open_now.get()));
                    let mut names = Vec::new();
                    while let Some(entry) = dir.next().await {
                        names.push(entry.unwrap().file_name().to_string_lossy().into_owned());
                        // Let the other directories' reads interleave.
                        tokio::task::yield_now().await;
                    }
                    open_now.set(open_now.get() - 1);
                    dir.close().await.unwrap();
                    names.sort();
                    let mut want: Vec<String> = (0..i % 5).map(|k| format!("d{i}-{k}")).collect();
                    want.sort();
                    assert_eq!(names, want, "{}", path.display());
                    names.len()
                }));
            }
            let mut total = 0;
            for task in tasks {
                total += task.await.unwrap();
            }
            (max_open.get(), total)
        });
        eprintln!(
            "{choice:?}: {total} entries, at most {max_open} directories open at once, {:?}",
            started.elapsed()
        );
        assert_eq!(total, (0..DIRS).map(|i| i % 5).sum::<usize>());
        assert!(max_open <= LIMIT, "{choice:?}: the limit was exceeded");
        assert!(max_open > LIMIT / 2, "{choice:?}: only {max_open} at once");
    }
}
