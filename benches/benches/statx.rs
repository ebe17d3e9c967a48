//! `statx` of 10 000 files in one directory: the plain system call in a loop
//! against `IORING_OP_STATX` with N requests in flight on one ring, alone
//! or in chains of hard-linked requests (as the `uring` engine sends them).
//!
//! io_uring always hands STATX to an io-wq worker thread, so on a warm cache
//! each request pays a thread hand-off that the direct call does not; a
//! chain is one hand-off, its requests run one after the other in the same
//! worker.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use io_uring_getdents::io_uring::{opcode, squeue, types, IoUring};
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

/// Keeps `depth` STATX requests in flight until every name is done, pushed
/// in chains of `chain` hard-linked requests (1: each alone). Each slot owns
/// one statx buffer; a slot is reused only after its completion has been
/// reaped, so the kernel never writes into a buffer in use.
fn uring(
    ring: &mut IoUring,
    dirfd: i32,
    names: &[CString],
    (depth, chain): (usize, usize),
    bufs: &mut [libc::statx],
) -> u64 {
    let mut total = 0;
    let mut next = 0;
    let mut free: Vec<usize> = (0..depth).collect();
    let mut in_flight = 0;
    while next < names.len() || in_flight > 0 {
        loop {
            let n = chain.min(names.len() - next);
            if n == 0 || free.len() < n {
                break;
            }
            for k in 0..n {
                let slot = free.pop().expect("counted above");
                let mut sqe = opcode::Statx::new(
                    types::Fd(dirfd),
                    names[next].as_ptr(),
                    std::ptr::from_mut(&mut bufs[slot]).cast::<types::statx>(),
                )
                .flags(libc::AT_SYMLINK_NOFOLLOW)
                .mask(MASK)
                .build()
                .user_data(slot as u64);
                if k + 1 < n {
                    sqe = sqe.flags(squeue::Flags::IO_HARDLINK);
                }
                // SAFETY: the name and the slot's buffer stay alive and
                // untouched until this request's completion is reaped
                // below; the loop does not return before all requests
                // complete.
                unsafe { ring.submission().push(&sqe).expect("ring sized to depth") };
                next += 1;
                in_flight += 1;
            }
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
    let shapes = [
        (1usize, 1usize),
        (32, 1),
        (128, 1),
        (512, 1),
        (128, 16),
        (512, 16),
    ];
    for (depth, chain) in shapes {
        let mut ring = IoUring::new(depth.next_power_of_two() as u32).expect("io_uring_setup");
        // SAFETY: an all-zero statx is a valid value of this plain C struct.
        let mut bufs = vec![unsafe { std::mem::zeroed::<libc::statx>() }; depth];
        assert_eq!(
            uring(&mut ring, dirfd, &names, (depth, chain), &mut bufs),
            expected,
            "same inodes as statx(2)"
        );
        let id = match chain {
            1 => BenchmarkId::new("io_uring_in_flight", depth),
            _ => BenchmarkId::new(format!("io_uring_chains_of_{chain}_in_flight"), depth),
        };
        group.bench_with_input(id, &(depth, chain), |b, &shape| {
            b.iter(|| uring(&mut ring, dirfd, &names, shape, &mut bufs))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(4));
    targets = statx
}
criterion_main!(benches);
