//! `statx` of 10 000 files in one directory: the plain system call in a loop
//! against `IORING_OP_STATX` with N requests in flight on one ring.
//!
//! io_uring always hands STATX to an io-wq worker thread, so on a warm cache
//! each request pays a thread hand-off that the direct call does not.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use io_uring_getdents::io_uring::{opcode, types, IoUring};
use std::ffi::CString;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use traverse_benches::{corpus_dir, populated_dir};

const FILES: usize = 10_000;
const MASK: u32 =
    libc::STATX_TYPE | libc::STATX_SIZE | libc::STATX_BLOCKS | libc::STATX_NLINK | libc::STATX_INO;

fn direct(dirfd: i32, names: &[CString]) -> u64 {
    let mut total = 0;
    let mut stx = MaybeUninit::<libc::statx>::uninit();
    for name in names {
        // SAFETY: `name` is a live C string, `stx` is writable memory of the
        // struct's size, `dirfd` is an open directory for the whole call.
        let ret = unsafe {
            libc::statx(
                dirfd,
                name.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
                MASK,
                stx.as_mut_ptr(),
            )
        };
        assert_eq!(
            ret,
            0,
            "statx {name:?}: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: statx succeeded and filled the struct.
        total += unsafe { stx.assume_init_ref() }.stx_ino;
    }
    total
}

/// Keeps `depth` STATX requests in flight until every name is done. Each
/// slot owns one statx buffer; a slot is reused only after its completion
/// has been reaped, so the kernel never writes into a buffer in use.
fn uring(
    ring: &mut IoUring,
    dirfd: i32,
    names: &[CString],
    depth: usize,
    bufs: &mut [libc::statx],
) -> u64 {
    let mut total = 0;
    let mut next = 0;
    let mut free: Vec<usize> = (0..depth).collect();
    let mut in_flight = 0;
    while next < names.len() || in_flight > 0 {
        while let (Some(slot), true) = (free.last().copied(), next < names.len()) {
            free.pop();
            let sqe = opcode::Statx::new(
                types::Fd(dirfd),
                names[next].as_ptr(),
                std::ptr::from_mut(&mut bufs[slot]).cast::<types::statx>(),
            )
            .flags(libc::AT_SYMLINK_NOFOLLOW)
            .mask(MASK)
            .build()
            .user_data(slot as u64);
            // SAFETY: the name and the slot's buffer stay alive and
            // untouched until this request's completion is reaped below;
            // the loop does not return before all requests complete.
            unsafe { ring.submission().push(&sqe).expect("ring sized to depth") };
            next += 1;
            in_flight += 1;
        }
        ring.submit_and_wait(1).expect("io_uring_enter");
        for cqe in ring.completion() {
            assert!(
                cqe.result() >= 0,
                "STATX failed: {}",
                std::io::Error::from_raw_os_error(-cqe.result())
            );
            let slot = cqe.user_data() as usize;
            total += bufs[slot].stx_ino;
            free.push(slot);
            in_flight -= 1;
        }
    }
    total
}

fn statx(c: &mut Criterion) {
    let dir =
        populated_dir(&corpus_dir().join("bench-statx-10k"), FILES).expect("fixture directory");
    let names: Vec<CString> = std::fs::read_dir(&dir)
        .expect("read fixture")
        .map(|e| CString::new(e.expect("entry").file_name().as_bytes()).expect("no NUL in names"))
        .collect();
    let file = std::fs::File::open(&dir).expect("open fixture");
    let dirfd = file.as_raw_fd();
    let expected = direct(dirfd, &names);

    let mut group = c.benchmark_group("statx_10k");
    group.throughput(Throughput::Elements(FILES as u64));
    group.bench_function("direct_syscall", |b| b.iter(|| direct(dirfd, &names)));
    for depth in [1usize, 32, 128, 512] {
        let mut ring = IoUring::new(depth.next_power_of_two() as u32).expect("io_uring_setup");
        // SAFETY: an all-zero statx is a valid value of this plain C struct.
        let mut bufs = vec![unsafe { std::mem::zeroed::<libc::statx>() }; depth];
        assert_eq!(
            uring(&mut ring, dirfd, &names, depth, &mut bufs),
            expected,
            "same inodes as statx(2)"
        );
        group.bench_with_input(
            BenchmarkId::new("io_uring_in_flight", depth),
            &depth,
            |b, &d| b.iter(|| uring(&mut ring, dirfd, &names, d, &mut bufs)),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(4));
    targets = statx
}
criterion_main!(benches);
