//! What the patched kernel does with `IORING_OP_GETDENTS`, checked through
//! this crate against the plain `getdents64(2)` on directories the tests
//! make (under `TMPDIR`, so kernel/test-vm runs them on tmpfs and on ext4).
//!
//! On a kernel without the operation, the tests that need it print
//! "skipped: ..." and pass, unless `IO_URING_GETDENTS_REQUIRE=1` (set in the
//! test VM), which makes them fail. The detection test runs everywhere.

mod common;

use std::collections::HashMap;
use std::fs;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use common::{
    assert_full_or_short, assert_same_listing, parse, position, reference, required,
    short_reads_allowed, submit_and_reap, Record, Tree,
};
use io_uring_getdents::cqe;
use io_uring_getdents::detect::{self, Choice, Support, Unavailable};
use io_uring_getdents::dirent::MIN_RECORD_LEN;
use io_uring_getdents::io_uring::{squeue, types, IoUring, Probe};
use io_uring_getdents::opcode::{GetDents, Target};
use io_uring_getdents::syscall::{getdents64, seek_dir};

/// The opcode to submit, or `None` (after printing why) when the kernel has
/// no GETDENTS and the test VM did not require it.
fn getdents_opcode() -> Option<u8> {
    match detect::cached() {
        Support::Available { opcode } => Some(*opcode),
        Support::Unavailable(why) if required() => {
            common::unavailable_but_required("GETDENTS", why)
        }
        other => common::skipped(other),
    }
}

/// A directory with `files` regular files whose names run from 1 to 255
/// bytes (so records of every size), a subdirectory, a symlink and a FIFO.
fn make_tree(parent: &Path, files: usize) -> PathBuf {
    let dir = common::tree_of_files(parent, files, 5, |i| vec![i as u8]);
    fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink("sub", dir.join("link")).unwrap();
    common::mkfifo(&dir.join("fifo"));
    dir
}

/// The records a read from `offset` must return into a buffer of `len`
/// bytes: those after the entry whose d_off is `offset`, as many as fit.
fn expected_from(all: &[Record], offset: u64, len: usize) -> &[Record] {
    common::expected_from(all, offset, len, 0)
}

/// Submits one GETDENTS into `buf` from `offset` and waits for its result.
fn getdents_once(ring: &mut IoUring, opcode: u8, fd: Target, buf: &mut [u8], offset: u64) -> i32 {
    let sqe = GetDents::new(fd, buf.as_mut_ptr(), buf.len() as u32)
        .offset(offset)
        .opcode(opcode)
        .build()
        .user_data(7);
    submit_and_reap(ring, sqe).0
}

#[test]
fn detection_agrees_with_the_probe() {
    let ring = IoUring::new(4).expect("io_uring_setup");
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .expect("IORING_REGISTER_PROBE");
    let last = (0..=u8::MAX).rev().find(|&n| probe.is_supported(n));
    let support = detect::detect_with(&ring, Choice::Auto);
    println!("probe: last opcode {last:?}; detection: {support}");

    // No number is assumed: the candidate is the probe's last operation.
    let last = last.expect("the probe lists no operation");
    if required() {
        assert!(
            matches!(support, Support::Available { opcode } if opcode == last),
            "the test VM's kernel must have GETDENTS as its last opcode ({last}): {support}"
        );
        return;
    }
    match support {
        Support::Available { opcode } => assert_eq!(opcode, last),
        Support::Unavailable(Unavailable::KnownOpcode { opcode, .. }) => {
            // A mainline kernel: its last operation is a known one.
            assert_eq!(opcode, last);
        }
        Support::Unavailable(other) => {
            // The last operation is not a release's last: the self-test
            // must then have been the judge.
            assert!(
                matches!(
                    other,
                    Unavailable::SelfTest { .. } | Unavailable::Mismatch { .. }
                ),
                "unexpected reason: {other}"
            );
        }
        other => panic!("an answer this test does not know: {other}"),
    }
}

#[test]
fn chunked_reads_from_every_d_off_match_getdents64() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let Tree { path, dir, all, .. } = &Tree::new(make_tree, 300);

    // The reference itself is checked against std's listing.
    let mut names: Vec<Vec<u8>> = all.iter().map(|r| r.name.clone()).collect();
    names.sort();
    let mut std_names: Vec<Vec<u8>> = fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_encoded_bytes())
        .chain([b".".to_vec(), b"..".to_vec()])
        .collect();
    std_names.sort();
    assert_eq!(names, std_names);

    let mut ring = IoUring::new(8).unwrap();
    let fd = Target::Fd(dir.as_raw_fd());
    let largest = all.iter().map(Record::reclen).max().unwrap();

    // A whole listing chained by d_off, with buffers from one (largest)
    // record up: the concatenation is exactly the getdents64 listing.
    let short_allowed = short_reads_allowed(dir);
    for len in [largest, 300, 1000, 4096, 65536] {
        let mut buf = vec![0u8; len];
        let mut got = Vec::new();
        let (mut offset, mut short) = (0, 0);
        loop {
            let res = getdents_once(&mut ring, opcode, fd, &mut buf, offset);
            assert!(res >= 0, "GETDENTS from {offset} into {len} bytes: {res}");
            if res == 0 {
                break;
            }
            let records = parse(&buf[..res as usize]);
            let want = common::expected_after(all, got.len(), len, 0);
            let what = format!("buffer of {len} bytes from {offset}");
            short += usize::from(assert_full_or_short(&records, want, short_allowed, &what));
            offset = records.last().unwrap().off;
            got.extend(records);
            assert!(
                got.len() <= all.len(),
                "more records than the directory has"
            );
        }
        assert_same_listing(&got, all, short > 0, &format!("buffer of {len} bytes"));
    }

    // A read starting at each d_off, in an order that never matches where
    // the previous read left the file, returns what follows that entry.
    let mut buf = vec![0u8; 512];
    for record in all.iter().rev().chain(all.iter().step_by(7)) {
        let res = getdents_once(&mut ring, opcode, fd, &mut buf, record.off);
        assert!(res >= 0, "GETDENTS from {}: {res}", record.off);
        let records = parse(&buf[..res as usize]);
        let what = format!("from {}", record.off);
        let want = expected_from(all, record.off, buf.len());
        assert_full_or_short(&records, want, short_allowed, &what);
    }

    // getdents64 moved the position to the end; offset 0 still starts over.
    reference(dir);
    let res = getdents_once(&mut ring, opcode, fd, &mut buf, 0);
    assert_full_or_short(
        &parse(&buf[..res as usize]),
        expected_from(all, 0, buf.len()),
        short_allowed,
        "from 0 after getdents64",
    );
}

/// Lists `dir` with GETDENTS reads of `len` bytes chained by d_off, until
/// a read returns 0; asserts that the records are the getdents64 listing
/// `all` and that `IORING_CQE_F_DIR_EOF` is set exactly on the last read
/// with records (the one whose records end where the listing ends) and on
/// the read of 0 bytes after it. Returns how many reads carried records, and how many came back short.
fn assert_eof_on_last_read(
    ring: &mut IoUring,
    opcode: u8,
    dir: &fs::File,
    all: &[Record],
    len: usize,
) -> Reads {
    let fd = Target::Fd(dir.as_raw_fd());
    assert_eof_on_last_read_by(dir, all, len, |offset, buf| {
        let sqe = GetDents::new(fd, buf.as_mut_ptr(), buf.len() as u32)
            .offset(offset)
            .opcode(opcode)
            .build()
            .user_data(9);
        submit_and_reap(ring, sqe)
    })
}

/// What [`assert_eof_on_last_read_by`] saw: the reads that carried
/// records, and how many of them a non-blocking attempt cut short.
struct Reads {
    with_records: usize,
    short: usize,
}

/// [`assert_eof_on_last_read`] with the reads made by `read(offset, buf)`,
/// which returns the completion's result and flags. On ext4 and XFS a read
/// may stop early when the inline attempt cannot go on without blocking
/// (a lock held elsewhere, a block not cached): its records are then the
/// first of the full read's, the last one's `d_off` is where it stopped,
/// and the next read from there goes on with the next record.
fn assert_eof_on_last_read_by(
    dir: &fs::File,
    all: &[Record],
    len: usize,
    mut read: impl FnMut(u64, &mut [u8]) -> (i32, u32),
) -> Reads {
    let short_allowed = short_reads_allowed(dir);
    let mut buf = vec![0u8; len];
    let (mut got, mut offset) = (Vec::<Record>::new(), 0);
    let mut reads = Reads {
        with_records: 0,
        short: 0,
    };
    loop {
        let (res, flags) = read(offset, &mut buf);
        assert!(res >= 0, "GETDENTS from {offset} into {len} bytes: {res}");
        // The flag has a bit of its own: no other bit (bit 2 is
        // IORING_CQE_F_SOCK_NONEMPTY) is set on a GETDENTS completion.
        assert_eq!(
            flags & !cqe::DIR_EOF,
            0,
            "GETDENTS completion flags {flags:#x}: a bit other than DIR_EOF"
        );
        if res == 0 {
            assert!(
                cqe::dir_eof(flags),
                "a read of 0 bytes without the flag (buffer {len})"
            );
            break;
        }
        reads.with_records += 1;
        let records = parse(&buf[..res as usize]);
        // The full read from here: the records after those already got.
        let want = common::expected_after(all, got.len(), len, 0);
        if assert_full_or_short(
            &records,
            want,
            short_allowed,
            &format!("buffer of {len} bytes"),
        ) {
            reads.short += 1;
        }
        got.extend(records);
        let last = got.len() == all.len();
        assert_eq!(
            cqe::dir_eof(flags),
            last,
            "read {} of a {}-record listing into {len} bytes ended at record {}: the flag must be set on the last read only",
            reads.with_records,
            all.len(),
            got.len()
        );
        // The kernel's further iteration leaves the position where
        // getdents64 would: after the last record returned.
        offset = got.last().unwrap().off;
        assert_eq!(position(dir), offset);
        assert!(
            got.len() <= all.len(),
            "more records than the directory has"
        );
    }
    assert_same_listing(
        &got,
        all,
        reads.short > 0,
        &format!("buffer of {len} bytes"),
    );
    reads
}

#[test]
fn dir_eof_is_set_exactly_on_the_last_read() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut ring = IoUring::new(4).unwrap();

    // Empty (only "." and ".."), small, and large directories.
    let (empty, large) = (tmp.path().join("empty"), tmp.path().join("large"));
    fs::create_dir(&empty).unwrap();
    fs::create_dir(&large).unwrap();
    for path in [empty, make_tree(tmp.path(), 10), make_tree(&large, 600)] {
        let dir = fs::File::open(&path).unwrap();
        let all = reference(&dir);
        let total: usize = all.iter().map(Record::reclen).sum();
        let largest = all.iter().map(Record::reclen).max().unwrap();
        // One read for the whole directory, a buffer it fills exactly (the
        // filesystem stops for the end, not for want of room), one a
        // record too small for it, and buffers a few records long.
        // (The counts of reads hold when no read came back short.)
        let reads = |ring: &mut IoUring, len| {
            let r = assert_eof_on_last_read(ring, opcode, &dir, &all, len);
            (r.short == 0).then_some(r.with_records)
        };
        assert!(matches!(reads(&mut ring, total + 4096), Some(1) | None));
        assert!(matches!(reads(&mut ring, total), Some(1) | None));
        let last = all.last().unwrap().reclen();
        if total - last >= largest {
            assert!(matches!(reads(&mut ring, total - last), Some(2) | None));
        }
        for len in [largest, 1000, 4096] {
            assert_eof_on_last_read(&mut ring, opcode, &dir, &all, len);
        }
        // A buffer that ends exactly after some record in the middle: that
        // read is full, and not the last.
        let half: usize = all[..all.len() / 2].iter().map(Record::reclen).sum();
        if half >= largest {
            assert!(reads(&mut ring, half).is_none_or(|n| n >= 2));
        }
    }
}

#[test]
fn buffer_smaller_than_one_record_is_einval() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = fs::File::open(tmp.path()).unwrap();
    let mut ring = IoUring::new(4).unwrap();
    for len in [0, 1, MIN_RECORD_LEN - 1] {
        let mut buf = vec![0u8; len.max(1)];
        let res = getdents_once(
            &mut ring,
            opcode,
            Target::Fd(dir.as_raw_fd()),
            &mut buf[..len],
            0,
        );
        assert_eq!(res, -libc::EINVAL, "buffer of {len} bytes");
        // The system call agrees.
        seek_dir(dir.as_fd(), 0).unwrap();
        let err = getdents64(dir.as_fd(), &mut buf[..len]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
    }
}

#[test]
fn non_directories_are_enotdir() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let file_path = tmp.path().join("file");
    fs::write(&file_path, b"not a directory").unwrap();
    let file = fs::File::open(&file_path).unwrap();
    let mut ring = IoUring::new(4).unwrap();
    let mut buf = vec![0u8; 4096];
    let res = getdents_once(&mut ring, opcode, Target::Fd(file.as_raw_fd()), &mut buf, 0);
    assert_eq!(res, -libc::ENOTDIR, "regular file");

    // A pipe has no f_pos_lock (its space holds pipe state): it must be
    // refused before the kernel locks anything.
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe() writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let res = getdents_once(&mut ring, opcode, Target::Fd(fds[0]), &mut buf, 0);
    for fd in fds {
        // SAFETY: both descriptors were opened above and are closed once.
        unsafe { libc::close(fd) };
    }
    assert_eq!(res, -libc::ENOTDIR, "pipe");
}

#[test]
fn unwritable_buffers_are_efault() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = fs::File::open(tmp.path()).unwrap();
    let mut ring = IoUring::new(4).unwrap();

    // SAFETY: a fresh anonymous read-only mapping; nothing aliases it and it
    // is unmapped below after the last use.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    let cases: [(&str, *mut u8); 3] = [
        ("read-only page", page.cast()),
        ("unmapped low address", 16 as *mut u8),
        ("kernel address", 0xffff_8000_0000_0000_u64 as *mut u8),
    ];
    for (what, addr) in cases {
        // The kernel only writes through `addr`, and every case is memory
        // it cannot write, so nothing of ours is touched.
        let sqe = GetDents::new(Target::Fd(dir.as_raw_fd()), addr, 4096)
            .opcode(opcode)
            .build()
            .user_data(1);
        let res = submit_and_reap(&mut ring, sqe).0;
        assert_eq!(res, -libc::EFAULT, "{what}");
    }
    // SAFETY: `page` is the mapping made above, no longer used.
    assert_eq!(unsafe { libc::munmap(page, 4096) }, 0);
}

#[test]
fn reserved_sqe_fields_must_be_zero() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = fs::File::open(tmp.path()).unwrap();
    let mut ring = IoUring::new(4).unwrap();
    let mut buf = vec![0u8; 4096];
    let ptr = buf.as_mut_ptr();
    let valid = || {
        GetDents::new(Target::Fd(dir.as_raw_fd()), ptr, 4096)
            .opcode(opcode)
            .build()
            .user_data(3)
    };
    // The same request with every reserved byte zero succeeds.
    assert!(submit_and_reap(&mut ring, valid()).0 > 0);
    // Byte ranges of io_uring_sqe: ioprio, op flags, buf_index,
    // file_index/splice_fd_in, addr3, __pad2[0]. Every byte on its own.
    let mut checked = 0;
    for (field, range) in [
        ("ioprio", 2..4),
        ("rw_flags", 28..32),
        ("buf_index", 40..42),
        ("splice_fd_in", 44..48),
        ("addr3", 48..56),
        ("__pad2", 56..64),
    ] {
        for byte in range {
            // SAFETY: `squeue::Entry` is a `#[repr(C)]` wrapper of the
            // 64-byte io_uring_sqe made of integers only, so it converts to
            // bytes and back with every bit pattern valid.
            let mut bytes = unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(valid()) };
            bytes[byte] = 0x80;
            // SAFETY: as above.
            let sqe = unsafe { std::mem::transmute::<[u8; 64], squeue::Entry>(bytes) };
            assert_eq!(
                submit_and_reap(&mut ring, sqe).0,
                -libc::EINVAL,
                "{field}: byte {byte} of the SQE set"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 28);
    // The kernel wrote through `ptr` only while `buf` was alive.
    drop(buf);
}

#[test]
fn offset_minus_one_reads_at_the_file_position() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 200);
    let mut ring = IoUring::new(8).unwrap();
    let fd = Target::Fd(dir.as_raw_fd());

    // From position 0, each read at -1 goes on where the last one stopped
    // and leaves the position at its last record's d_off (on ext4 and XFS,
    // where an inline attempt stopped, when it stopped short).
    let short_allowed = short_reads_allowed(dir);
    seek_dir(dir.as_fd(), 0).unwrap();
    let mut buf = vec![0u8; 700];
    let (mut got, mut short) = (Vec::new(), 0);
    loop {
        let res = getdents_once(&mut ring, opcode, fd, &mut buf, u64::MAX);
        assert!(res >= 0, "GETDENTS at -1: {res}");
        if res == 0 {
            break;
        }
        let records = parse(&buf[..res as usize]);
        let want = common::expected_after(all, got.len(), buf.len(), 0);
        let what = format!("read {} at -1", got.len());
        short += usize::from(assert_full_or_short(&records, want, short_allowed, &what));
        assert_eq!(position(dir), records.last().unwrap().off);
        got.extend(records);
        assert!(
            got.len() <= all.len(),
            "more records than the directory has"
        );
    }
    assert_same_listing(&got, all, short > 0, "reads at -1");

    // -1 continues from where lseek(2) put the file, not from 0.
    let middle = &all[all.len() / 2];
    seek_dir(dir.as_fd(), middle.off).unwrap();
    let res = getdents_once(&mut ring, opcode, fd, &mut buf, u64::MAX);
    assert!(res > 0, "GETDENTS at -1 after lseek: {res}");
    assert_full_or_short(
        &parse(&buf[..res as usize]),
        expected_from(all, middle.off, buf.len()),
        short_allowed,
        "at -1 after lseek",
    );

    // Any other negative position is for the filesystem to refuse, and
    // it does, as lseek(2) does.
    let res = getdents_once(&mut ring, opcode, fd, &mut buf, -2i64 as u64);
    assert_eq!(res, -libc::EINVAL, "GETDENTS at -2");
}

#[test]
fn linked_reads_at_minus_one_list_the_directory_in_order() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 100);
    seek_dir(dir.as_fd(), 0).unwrap();

    // Enough reads of LEN bytes to pass the end: the last ones return 0.
    const LEN: usize = 640;
    let total: usize = all.iter().map(Record::reclen).sum();
    let links = total / (LEN / 2) + 3;
    let mut ring = IoUring::new(links.next_power_of_two() as u32).unwrap();
    let mut buffers = vec![vec![0u8; LEN]; links];
    for (i, buf) in buffers.iter_mut().enumerate() {
        let mut sqe = GetDents::new(Target::Fd(dir.as_raw_fd()), buf.as_mut_ptr(), LEN as u32)
            .offset(u64::MAX)
            .opcode(opcode)
            .build()
            .user_data(i as u64);
        if i + 1 < links {
            sqe = sqe.flags(squeue::Flags::IO_LINK);
        }
        // SAFETY: `buffers` and `dir` outlive the requests: every
        // completion is reaped below before either is touched or dropped.
        unsafe { ring.submission().push(&sqe) }.expect("submission queue full");
    }
    let mut results = vec![None; links];
    let mut reaped = 0;
    while reaped < links {
        ring.submit_and_wait(1).expect("io_uring_enter");
        for cqe in ring.completion() {
            let slot = &mut results[cqe.user_data() as usize];
            assert!(slot.is_none(), "two completions for one request");
            *slot = Some(cqe.result());
            reaped += 1;
        }
    }
    let short_allowed = short_reads_allowed(dir);
    let (mut got, mut short) = (Vec::new(), 0);
    let mut ended = false;
    for (i, res) in results.into_iter().enumerate() {
        let res = res.unwrap();
        assert!(res >= 0, "linked read {i}: {res}");
        assert!(
            !(ended && res > 0),
            "linked read {i} returned data after an end"
        );
        ended |= res == 0;
        if res > 0 {
            let records = parse(&buffers[i][..res as usize]);
            let want = common::expected_after(all, got.len(), LEN, 0);
            let what = format!("linked read {i}");
            short += usize::from(assert_full_or_short(&records, want, short_allowed, &what));
            got.extend(records);
        }
    }
    assert!(ended, "{links} linked reads did not reach the end");
    assert_same_listing(&got, all, short > 0, "linked reads");
}

#[test]
fn registered_file_reads_like_a_plain_fd() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 40);
    let mut ring = IoUring::new(4).unwrap();
    ring.submitter()
        .register_files(&[dir.as_raw_fd()])
        .expect("IORING_REGISTER_FILES");
    let mut buf = vec![0u8; 1 << 16];
    let res = getdents_once(
        &mut ring,
        opcode,
        Target::from(types::Fixed(0)),
        &mut buf,
        0,
    );
    assert!(res > 0, "GETDENTS on a registered file: {res}");
    assert_full_or_short(
        &parse(&buf[..res as usize]),
        all,
        short_reads_allowed(dir),
        "a registered file",
    );
}

#[test]
fn many_reads_in_flight_on_one_file_each_get_their_own_offset() {
    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 400);
    // One open file, so one f_pos shared by every request: without the
    // kernel's f_pos_lock, a seek by one request lands between another's
    // seek and read.
    let offsets: Vec<u64> = [0].into_iter().chain(all.iter().map(|r| r.off)).collect();

    // Meanwhile another thread moves the same file's position with
    // lseek(2), which takes f_pos_lock too. The requests run in io-wq
    // workers, in parallel, and the window between a request's seek and
    // its read is short: this thread keeps it busy so a missing lock shows.
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                seek_dir(dir.as_fd(), offsets[i % offsets.len()]).expect("lseek");
                i += 7;
            }
        });
        let result = std::panic::catch_unwind(|| in_flight_rounds(opcode, dir, all, &offsets));
        stop.store(true, Ordering::Relaxed);
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    });
}

/// Rounds of many GETDENTS submitted together on `dir`, each from its own
/// offset; every completion must hold exactly the records after it (or,
/// on ext4 and XFS, the first of them: see [`assert_full_or_short`]).
fn in_flight_rounds(opcode: u8, dir: &fs::File, all: &[Record], offsets: &[u64]) {
    const IN_FLIGHT: usize = 128;
    const LEN: usize = 640;
    let short_allowed = short_reads_allowed(dir);
    let mut ring = IoUring::new(256).unwrap();
    let fd = Target::Fd(dir.as_raw_fd());
    let mut buffers = vec![vec![0u8; LEN]; IN_FLIGHT];
    for round in 0..8 {
        let mut pending = HashMap::new();
        for (i, buf) in buffers.iter_mut().enumerate() {
            // Spread the requests over the directory, differently per round.
            let offset = offsets[(i * 37 + round * 11) % offsets.len()];
            let sqe = GetDents::new(fd, buf.as_mut_ptr(), LEN as u32)
                .offset(offset)
                .opcode(opcode)
                .build()
                .user_data(i as u64);
            // SAFETY: `buffers` and `dir` outlive the requests: every
            // completion is reaped below before they are touched again.
            unsafe { ring.submission().push(&sqe) }.expect("submission queue full");
            pending.insert(i, offset);
        }
        let mut done = 0;
        while done < IN_FLIGHT {
            ring.submit_and_wait(1).expect("io_uring_enter");
            let results: Vec<(usize, i32)> = ring
                .completion()
                .map(|cqe| (cqe.user_data() as usize, cqe.result()))
                .collect();
            for (i, res) in results {
                let offset = pending.remove(&i).expect("one completion per request");
                assert!(res >= 0, "request {i} from {offset}: {res}");
                assert_full_or_short(
                    &parse(&buffers[i][..res as usize]),
                    expected_from(all, offset, LEN),
                    short_allowed,
                    &format!("round {round}, request {i} from offset {offset}"),
                );
                done += 1;
            }
        }
    }
}

/// The same listing through a ring of io-uring 0.7 (`GetDents::build_0_7`):
/// chained by d_off, it is the getdents64 listing, with the end of the
/// directory flagged on the last read as on a 0.6 ring.
#[cfg(feature = "io-uring-0-7")]
#[test]
fn a_ring_of_io_uring_0_7_lists_like_getdents64() {
    use io_uring_getdents::io_uring_0_7 as uring07;

    let Some(opcode) = getdents_opcode() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 300);
    let mut ring = uring07::IoUring::new(8).unwrap();
    let fd = Target::from(uring07::types::Fd(dir.as_raw_fd()));
    let reads = assert_eof_on_last_read_by(dir, all, 4096, |offset, buf| {
        let sqe = GetDents::new(fd, buf.as_mut_ptr(), buf.len() as u32)
            .offset(offset)
            .opcode(opcode)
            .build_0_7()
            .user_data(11);
        // SAFETY: `buf` and `dir` outlive the request: we wait for its
        // completion before touching either again.
        unsafe { ring.submission().push(&sqe) }.expect("submission queue full");
        ring.submit_and_wait(1).expect("io_uring_enter");
        let cqe = ring.completion().next().expect("a completion");
        assert_eq!(cqe.user_data(), 11);
        (cqe.result(), cqe.flags())
    });
    assert!(reads.with_records >= 2, "300 files fit one 4 KiB read");
}
