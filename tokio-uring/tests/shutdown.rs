//! The runtime ending while operations are still in flight.
//!
//! tokio-uring 0.5's driver, when dropped, frees the stable data of
//! operations whose futures were already dropped *before* it waits for
//! their completions. Memory the kernel writes (a `statx` result, a
//! GETDENTS buffer) must survive that: a late write into freed heap memory
//! corrupts the allocator, and glibc aborts the process at a later
//! allocation ("unaligned tcache chunk detected"). These tests make the
//! kernel write late on purpose and then allocate: with the bug they crash.
//!
//! A statx on a testfs mount (FUSE, with a delay per request) is still
//! running in an io-wq worker when the runtime ends; the GETDENTS variant
//! (a read-ahead left in flight by a `Dir` dropped mid-listing) runs where
//! the kernel has the opcode. Tests that cannot mount FUSE print
//! "skipped: <why>".

mod common;

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{backends, builder, poll_once};
use tokio_uring_getdents::fs::{BackendChoice, Dir, MIN_BUFFER_SIZE};

/// Allocations of the sizes freed by the driver (a 256-byte statx, small
/// buffers): if the kernel wrote into any of them after they were freed,
/// glibc's consistency checks abort here.
fn churn_the_heap() {
    let mut kept = Vec::new();
    for round in 0..64 {
        for size in [256, 512, 600, 1024, 4096] {
            let block = vec![round as u8; size].into_boxed_slice();
            kept.push(black_box(block));
        }
    }
    drop(black_box(kept));
}

/// How long the slow mount takes to answer each request.
const DELAY: Duration = Duration::from_millis(200);

/// A testfs mount answering each request after [`DELAY`], of a source
/// directory holding the files `f0`..`f15`. Fields drop in order: the
/// mount goes before its directories.
struct SlowMount {
    mount: testfs::Mount,
    source: tempfile::TempDir,
    _mountpoint: tempfile::TempDir,
}

/// The slow mount, or `None` (with "skipped: <why>") where FUSE cannot
/// be mounted.
fn slow_mount() -> Option<SlowMount> {
    if let Some(why) = testfs::cannot_mount() {
        println!("skipped: {why}");
        return None;
    }
    let source = tempfile::tempdir().unwrap();
    let mountpoint = tempfile::tempdir().unwrap();
    for i in 0..16 {
        fs::write(source.path().join(format!("f{i}")), b"x").unwrap();
    }
    let options = testfs::Options::new().delay(DELAY);
    let mount = testfs::Mount::new(source.path(), mountpoint.path(), &options)
        .unwrap_or_else(|e| panic!("mount testfs: {e}"));
    Some(SlowMount {
        mount,
        source,
        _mountpoint: mountpoint,
    })
}

/// Opens the slow mount and submits a statx of each file, then drops the
/// futures: tokio-uring keeps each result buffer as the operation's stable
/// data, and the kernel writes it about [`DELAY`] later.
async fn leave_statx_in_flight(mountpoint: &Path) {
    let dir = Dir::builder()
        .backend(BackendChoice::Fallback)
        .open(mountpoint)
        .await
        .unwrap();
    for i in 0..16 {
        let mut stat = dir.statx(format!("f{i}").as_str(), libc::STATX_BASIC_STATS);
        assert!(poll_once(&mut stat).is_pending());
    }
    // Let the submissions reach the kernel.
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// Runs `round` (which says whether the runtime's end waited for the
/// statx calls, i.e. whether they were still in flight) until three rounds
/// had them in flight. A machine stalled for longer than [`DELAY`] (the
/// emulated test VM under load) lets them complete before the runtime
/// ends: such a round tests nothing and is run again, up to 12 in all.
fn rounds_with_statx_in_flight(mut round: impl FnMut() -> bool) {
    let mut in_flight = 0;
    for _ in 0..12 {
        in_flight += usize::from(round());
        if in_flight == 3 {
            return;
        }
    }
    panic!("the statx calls were in flight in {in_flight} of 12 rounds");
}

#[test]
fn statx_in_flight_when_the_runtime_ends() {
    let Some(slow) = slow_mount() else {
        return;
    };

    rounds_with_statx_in_flight(|| {
        let started = Instant::now();
        tokio_uring::start(async {
            leave_statx_in_flight(slow.mount.mountpoint()).await;
        });
        // The driver waited for the statx calls before returning.
        let waited = started.elapsed() >= DELAY;
        churn_the_heap();
        waited
    });
    slow.mount.unmount().unwrap();
}

/// Two runtimes on one thread: the first stays alive while the second ends
/// with statx calls in flight. The second runtime's memory must be kept
/// until its own driver has waited for them, whatever the first one does.
#[test]
fn statx_in_flight_when_a_second_runtime_on_the_thread_ends() {
    let Some(slow) = slow_mount() else {
        return;
    };

    let first = tokio_uring::Runtime::new(&tokio_uring::builder()).unwrap();
    // The first runtime submits too, so that it has this crate's state.
    first.block_on(async {
        let dir = Dir::open(slow.source.path()).await.unwrap();
        dir.metadata(libc::STATX_BASIC_STATS).await.unwrap();
    });
    rounds_with_statx_in_flight(|| {
        let second = tokio_uring::Runtime::new(&tokio_uring::builder()).unwrap();
        second.block_on(async {
            leave_statx_in_flight(slow.mount.mountpoint()).await;
        });
        let started = Instant::now();
        drop(second);
        let waited = started.elapsed() >= DELAY / 2;
        churn_the_heap();
        // The first runtime goes on working.
        first.block_on(async {
            let dir = Dir::open(slow.source.path()).await.unwrap();
            dir.statx("f0", libc::STATX_BASIC_STATS).await.unwrap();
        });
        churn_the_heap();
        waited
    });
    drop(first);
    slow.mount.unmount().unwrap();
}

/// This crate's first operation of the runtime runs inside a
/// `tokio::task::LocalSet` that the caller keeps after the runtime is
/// gone: the crate's per-runtime task lives in that set, so it outlives the
/// runtime, and must not be what says whether the runtime still runs.
#[test]
fn statx_in_flight_when_the_runtime_ends_while_a_local_set_lives_on() {
    let Some(slow) = slow_mount() else {
        return;
    };

    let mut kept = Vec::new();
    rounds_with_statx_in_flight(|| {
        let runtime = tokio_uring::Runtime::new(&tokio_uring::builder()).unwrap();
        let local = tokio::task::LocalSet::new();
        runtime.block_on(local.run_until(async {
            leave_statx_in_flight(slow.mount.mountpoint()).await;
        }));
        let started = Instant::now();
        drop(runtime);
        let waited = started.elapsed() >= DELAY / 2;
        churn_the_heap();
        kept.push(local);
        waited
    });
    drop(kept);
    slow.mount.unmount().unwrap();
}

#[test]
fn reads_in_flight_when_the_runtime_ends() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..2000 {
        fs::write(
            tmp.path()
                .join(format!("entry-{i:05}-{}", "x".repeat(i % 40))),
            b"",
        )
        .unwrap();
    }
    for choice in backends() {
        for round in 0..50 {
            tokio_uring::start(async {
                let mut dir = builder(choice)
                    .buffer_size(MIN_BUFFER_SIZE + 64 * round)
                    .open(tmp.path())
                    .await
                    .unwrap();
                // The first batch arrives; the read-ahead of the next one
                // is in flight when the Dir and then the runtime go away.
                assert!(dir.next().await.unwrap().is_ok());
                drop(dir);
            });
            churn_the_heap();
        }
    }
}
