//! Parsing cost of `linux_dirent64` records: `DirentIter` over a buffer
//! filled by a real `getdents64` call on a 100 000-entry directory.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;
use std::hint::black_box;
use std::os::fd::AsFd;
use traverse_benches::{corpus_dir, populated_dir};

fn parse(c: &mut Criterion) {
    let dir = populated_dir(&corpus_dir().join("bench-100k"), 100_000).expect("fixture directory");
    let file = std::fs::File::open(&dir).expect("open fixture directory");
    let mut buf = vec![0u8; 1 << 20];
    let n = getdents64(file.as_fd(), &mut buf).expect("getdents64 on the fixture");
    let filled = &buf[..n];
    let records = DirentIter::new(filled).count() as u64;
    assert!(
        records > 1000,
        "1 MiB should hold thousands of records, got {records}"
    );

    let mut group = c.benchmark_group("dirent_parse_1MiB");
    group.throughput(Throughput::Elements(records));
    group.bench_function("DirentIter", |b| {
        b.iter(|| {
            let mut names = 0usize;
            for entry in DirentIter::new(black_box(filled)) {
                let entry = entry.expect("kernel-written records parse");
                names += entry.name_bytes().len() + usize::from(entry.d_type());
            }
            names
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = parse
}
criterion_main!(benches);
