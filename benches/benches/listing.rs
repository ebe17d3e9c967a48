//! One listing of a 100 000-entry directory per backend: raw `getdents64`
//! and tokio-uring-getdents' `Dir` (its getdents64 fallback backend, and
//! IORING_OP_GETDENTS when the kernel has it) with buffers of 4 KiB to
//! 1 MiB, `std::fs::read_dir`, `tokio::fs::read_dir`. Every backend must find
//! the same number of names before it is timed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;
use std::os::fd::AsFd;
use std::path::Path;
use tokio_uring_getdents::fs::{BackendChoice, DirBuilder};
use traverse_benches::{corpus_dir, populated_dir};

const ENTRIES: usize = 100_000;
const BUFFERS: [usize; 4] = [4 << 10, 32 << 10, 256 << 10, 1 << 20];

/// Opens, reads to the end and closes, as a walker does per directory.
fn raw(path: &Path, buf: &mut [u8]) -> usize {
    let dir = std::fs::File::open(path).expect("open directory");
    let mut names = 0;
    loop {
        let n = getdents64(dir.as_fd(), buf).expect("getdents64");
        if n == 0 {
            return names;
        }
        names += DirentIter::new(&buf[..n])
            .map(|e| e.expect("kernel-written records parse"))
            .filter(|e| !e.is_dot_or_dotdot())
            .count();
    }
}

fn std_read_dir(path: &Path) -> usize {
    std::fs::read_dir(path)
        .expect("read_dir")
        .filter(|e| {
            e.as_ref()
                .expect("entry")
                .file_type()
                .expect("d_type")
                .is_file()
        })
        .count()
}

fn tokio_read_dir(rt: &tokio::runtime::Runtime, path: &Path) -> usize {
    rt.block_on(async {
        let mut rd = tokio::fs::read_dir(path).await.expect("read_dir");
        let mut names = 0;
        while let Some(e) = rd.next_entry().await.expect("entry") {
            e.file_type().await.expect("d_type");
            names += 1;
        }
        names
    })
}

fn uring_dir(rt: &tokio_uring::Runtime, path: &Path, size: usize, backend: BackendChoice) -> usize {
    rt.block_on(async {
        let builder = DirBuilder::new().buffer_size(size).backend(backend);
        let mut dir = builder.open(path).await.expect("Dir::open");
        let mut names = 0;
        while let Some(entry) = dir.next().await {
            entry.expect("Dir entry");
            names += 1;
        }
        names
    })
}

fn listing(c: &mut Criterion) {
    let dir = populated_dir(&corpus_dir().join("bench-100k"), ENTRIES).expect("fixture directory");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let urt = tokio_uring::Runtime::new(&tokio_uring::builder()).expect("tokio-uring runtime");
    let getdents = io_uring_getdents::detect::cached().opcode().is_some();
    if !getdents {
        eprintln!("skipped: Dir with IORING_OP_GETDENTS (this kernel lacks the opcode)");
    }

    let mut group = c.benchmark_group("list_100k");
    group.throughput(Throughput::Elements(ENTRIES as u64));
    for size in BUFFERS {
        let mut buf = vec![0u8; size];
        assert_eq!(raw(&dir, &mut buf), ENTRIES);
        group.bench_with_input(BenchmarkId::new("getdents64", size), &size, |b, _| {
            b.iter(|| raw(&dir, &mut buf))
        });
        let fallback = BackendChoice::Fallback;
        assert_eq!(uring_dir(&urt, &dir, size, fallback), ENTRIES);
        group.bench_with_input(BenchmarkId::new("Dir_fallback", size), &size, |b, &s| {
            b.iter(|| uring_dir(&urt, &dir, s, fallback))
        });
        if getdents {
            let uring = BackendChoice::Getdents;
            assert_eq!(uring_dir(&urt, &dir, size, uring), ENTRIES);
            group.bench_with_input(BenchmarkId::new("Dir_getdents", size), &size, |b, &s| {
                b.iter(|| uring_dir(&urt, &dir, s, uring))
            });
        }
    }
    assert_eq!(std_read_dir(&dir), ENTRIES);
    group.bench_function("std_fs_read_dir", |b| b.iter(|| std_read_dir(&dir)));
    assert_eq!(tokio_read_dir(&rt, &dir), ENTRIES);
    group.bench_function("tokio_fs_read_dir", |b| {
        b.iter(|| tokio_read_dir(&rt, &dir))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(3));
    targets = listing
}
criterion_main!(benches);
