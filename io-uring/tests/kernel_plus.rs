//! What the patched kernel's readdirplus (GETDENTS with
//! `IORING_GETDENTS_PLUS`) does, checked through this crate against
//! `getdents64(2)` and `statx(2)` on directories the tests make (under
//! `TMPDIR`, so kernel/test-vm runs them on tmpfs and on ext4).
//!
//! On a kernel without the mode, each test prints "skipped: ..." and
//! passes, unless `IO_URING_GETDENTS_REQUIRE=1` (set in the test VM), which
//! makes it fail.

mod common;

use std::ffi::CString;
use std::fs;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{
    assert_full_or_short, assert_same_listing, position, required, short_reads_allowed,
    submit_and_reap, Record, Tree,
};
use io_uring_getdents::cqe;
use io_uring_getdents::detect::{self, PlusSupport};
use io_uring_getdents::dirent::{FileType, MIN_RECORD_LEN as PLAIN_MIN_RECORD_LEN};
use io_uring_getdents::io_uring::{squeue, types, IoUring};
use io_uring_getdents::opcode::{GetDents, Target, GETDENTS_PLUS, GETDENTS_PLUS_DCACHE};
use io_uring_getdents::plus::{DirentPlusIter, MIN_RECORD_LEN, STATX_LEN, TAIL_LEN};
use io_uring_getdents::syscall::{seek_dir, statx};

/// The fields asked for: all the basic ones and the birth time.
const MASK: u32 = libc::STATX_BASIC_STATS | libc::STATX_BTIME;

/// The largest read whose records are all the user buffer's limit: the
/// kernel reads names into 8 KiB of its own first (its largest slab
/// allocation), which for larger buffers may end a read before the user
/// buffer is full.
const EXACT_FIT_MAX: usize = 8 * 1024;

/// The GETDENTS opcode to submit readdirplus with, or `None` (after
/// printing why) when the kernel lacks the mode and the test VM did not
/// require it.
fn plus_opcode() -> Option<u8> {
    match detect::plus_cached() {
        PlusSupport::Available { opcode, .. } => Some(*opcode),
        PlusSupport::Unavailable(why) if required() => {
            common::unavailable_but_required("readdirplus", why)
        }
        other => common::skipped(other),
    }
}

/// [`plus_opcode`] with a ring of four entries to submit it on.
fn plus_ring() -> Option<(u8, IoUring)> {
    plus_opcode().map(|opcode| (opcode, IoUring::new(4).unwrap()))
}

/// One readdirplus record.
#[derive(Clone, Debug)]
struct Plus {
    plain: Record,
    /// The statx, or the (positive) errno in its place.
    stat: Result<libc::statx, i32>,
}

impl Plus {
    fn name(&self) -> &[u8] {
        &self.plain.name
    }

    fn off(&self) -> u64 {
        self.plain.off
    }
}

fn parse_plus(buf: &[u8]) -> Vec<Plus> {
    DirentPlusIter::new(buf)
        .map(|entry| {
            let entry = entry.expect("the kernel wrote a malformed readdirplus record");
            Plus {
                plain: Record::of(&entry.dirent()),
                stat: entry
                    .stat()
                    .map_err(|e| e.raw_os_error().expect("an errno")),
            }
        })
        .collect()
}

fn plains(records: &[Plus]) -> Vec<Record> {
    records.iter().map(|r| r.plain.clone()).collect()
}

/// `statx(2)` of `name` in `dir` as readdirplus makes it.
fn statx_of(dir: &fs::File, name: &[u8]) -> Result<libc::statx, i32> {
    let name = CString::new(name).unwrap();
    statx(Some(dir.as_fd()), &name, libc::AT_NO_AUTOMOUNT, MASK)
        .map_err(|e| e.raw_os_error().expect("an errno"))
}

/// Asserts that `got` and `want` agree in every field that does not change
/// while nothing writes to the files (all but the access time).
fn assert_same_stable_fields(got: &libc::statx, want: &libc::statx, what: &str) {
    macro_rules! same {
        ($($field:ident).+) => {
            assert_eq!(
                got.$($field).+,
                want.$($field).+,
                "{what}: {}",
                stringify!($($field).+)
            )
        };
    }
    assert_eq!(
        got.stx_mask & MASK,
        want.stx_mask & MASK,
        "{what}: stx_mask"
    );
    same!(stx_ino);
    same!(stx_mode);
    same!(stx_nlink);
    same!(stx_uid);
    same!(stx_gid);
    same!(stx_size);
    same!(stx_blocks);
    same!(stx_blksize);
    same!(stx_attributes);
    same!(stx_attributes_mask);
    same!(stx_rdev_major);
    same!(stx_rdev_minor);
    same!(stx_dev_major);
    same!(stx_dev_minor);
    same!(stx_mtime.tv_sec);
    same!(stx_mtime.tv_nsec);
    same!(stx_ctime.tv_sec);
    same!(stx_ctime.tv_nsec);
    if want.stx_mask & libc::STATX_BTIME != 0 {
        same!(stx_btime.tv_sec);
        same!(stx_btime.tv_nsec);
    }
}

/// Asserts that `record` carries what `statx(2)` gives for its name in
/// `dir` (`.` included), or `EOPNOTSUPP` for `..`, and that its `d_type`
/// agrees with the mode.
fn assert_carries_statx_of_its_name(dir: &fs::File, record: &Plus) {
    let what = String::from_utf8_lossy(record.name()).into_owned();
    if record.name() == b".." {
        assert_eq!(record.stat.err(), Some(libc::EOPNOTSUPP), "..");
        return;
    }
    let got = record
        .stat
        .unwrap_or_else(|errno| panic!("{what}: errno {errno} instead of a statx"));
    let want = statx_of(dir, record.name()).expect("statx(2) of a listed name");
    assert_same_stable_fields(&got, &want, &what);
    let d_type = FileType::from_d_type(record.plain.d_type);
    if d_type != FileType::Unknown {
        assert_eq!(FileType::from_mode(got.stx_mode.into()), d_type, "{what}");
    }
}

/// A directory with regular files of several sizes (names of 1 to 255
/// bytes, so records of every length), a file with three names, a
/// symbolic link, a FIFO and a subdirectory with a directory in it.
fn make_tree(parent: &Path, files: usize) -> PathBuf {
    let dir = common::tree_of_files(parent, files, 4, |i| vec![b'x'; i * 300]);
    fs::write(dir.join("a"), b"three names").unwrap();
    fs::hard_link(dir.join("a"), dir.join("a-second")).unwrap();
    fs::hard_link(dir.join("a"), dir.join("a-third")).unwrap();
    fs::write(dir.join("L".repeat(255)), b"the longest name").unwrap();
    std::os::unix::fs::symlink("sub", dir.join("link")).unwrap();
    fs::create_dir_all(dir.join("sub/inner")).unwrap();
    common::mkfifo(&dir.join("fifo"));
    dir
}

/// Submits one readdirplus GETDENTS and waits for its result and flags.
fn plus_once(
    ring: &mut IoUring,
    opcode: u8,
    fd: Target,
    buf: &mut [u8],
    offset: u64,
    mask: u32,
) -> (i32, u32) {
    let sqe = GetDents::new(fd, buf.as_mut_ptr(), buf.len() as u32)
        .offset(offset)
        .opcode(opcode)
        .plus(mask)
        .build()
        .user_data(17);
    submit_and_reap(ring, sqe)
}

/// [`plus_once`] with lookups from the dcache only, for all of [`MASK`].
fn plus_dcache_once(
    ring: &mut IoUring,
    opcode: u8,
    fd: Target,
    buf: &mut [u8],
    offset: u64,
) -> (i32, u32) {
    let sqe = GetDents::new(fd, buf.as_mut_ptr(), buf.len() as u32)
        .offset(offset)
        .opcode(opcode)
        .plus_dcache(MASK)
        .build()
        .user_data(18);
    submit_and_reap(ring, sqe)
}

/// The plain records a readdirplus read from `offset` into `len` bytes must
/// return: those after the entry whose d_off is `offset`, as many as fit
/// with their tails.
fn expected_from(all: &[Record], offset: u64, len: usize) -> &[Record] {
    common::expected_from(all, offset, len, TAIL_LEN)
}

/// Lists `dir` with readdirplus reads of `len` bytes made by `read(offset,
/// buf)` (which returns the completion's result and flags), each from the
/// last record's d_off, until one returns 0. Asserts along the way that
/// each read holds the records getdents64 lists after those already read
/// (exactly those that fit, up to [`EXACT_FIT_MAX`], or on ext4 and XFS
/// the first of them where an inline attempt stopped short), that the
/// file's position is left after the last one, and that
/// `IORING_CQE_F_DIR_EOF` is set on the last read with records and on the
/// read of 0 bytes, and on no other.
fn list_chained(
    dir: &fs::File,
    all: &[Record],
    len: usize,
    mut read: impl FnMut(u64, &mut [u8]) -> (i32, u32),
) -> Vec<Plus> {
    let short_allowed = short_reads_allowed(dir);
    let mut buf = vec![0u8; len];
    let (mut got, mut offset, mut short) = (Vec::<Plus>::new(), 0, 0);
    loop {
        let (res, flags) = read(offset, &mut buf);
        assert!(
            res >= 0,
            "readdirplus from {offset} into {len} bytes: {res}"
        );
        if res == 0 {
            assert!(cqe::dir_eof(flags), "a read of 0 bytes without the flag");
            break;
        }
        let records = parse_plus(&buf[..res as usize]);
        assert!(!records.is_empty());
        let expected = common::expected_after(all, got.len(), len, TAIL_LEN);
        let what = format!("buffer of {len} bytes");
        if len <= EXACT_FIT_MAX || short_allowed {
            short += usize::from(assert_full_or_short(
                &plains(&records),
                expected,
                short_allowed,
                &what,
            ));
        } else {
            assert!(
                records.len() <= expected.len(),
                "more than fits in {len} bytes"
            );
            assert_eq!(plains(&records), expected[..records.len()], "{what}");
        }
        got.extend(records);
        assert_eq!(
            cqe::dir_eof(flags),
            got.len() == all.len(),
            "the flag on a read ending at record {} of {} (buffer {len})",
            got.len(),
            all.len()
        );
        offset = got.last().unwrap().off();
        assert_eq!(position(dir), offset);
        assert!(
            got.len() <= all.len(),
            "more records than the directory has"
        );
    }
    assert_same_listing(
        &plains(&got),
        all,
        short > 0,
        &format!("buffer of {len} bytes"),
    );
    got
}

/// [`list_chained`] with reads of `target` (the open `dir`) through
/// `ring`, each from the offset `list_chained` asks for, or from the file
/// position (offset -1) where `at_position`; asserts that every record
/// carries the statx of its name.
fn list_with_statx(
    ring: &mut IoUring,
    opcode: u8,
    target: Target,
    at_position: bool,
    dir: &fs::File,
    all: &[Record],
    len: usize,
) -> Vec<Plus> {
    let got = list_chained(dir, all, len, |offset, buf| {
        let offset = if at_position { u64::MAX } else { offset };
        plus_once(ring, opcode, target, buf, offset, MASK)
    });
    for record in &got {
        assert_carries_statx_of_its_name(dir, record);
    }
    got
}

#[test]
fn every_record_carries_the_statx_of_its_name() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 120);
    let fd = Target::Fd(dir.as_raw_fd());
    let largest = all.iter().map(Record::reclen).max().unwrap() + TAIL_LEN;
    assert_eq!(largest, 280 + TAIL_LEN, "the 255-byte name's record");

    for len in [largest, 1000, 4096, 65536] {
        let got = list_with_statx(&mut ring, opcode, fd, false, dir, all, len);
        // "." is the directory, and the three names one file.
        let by_name = |name: &[u8]| got.iter().find(|r| r.name() == name).unwrap();
        let own = statx(Some(dir.as_fd()), c"", libc::AT_EMPTY_PATH, MASK).unwrap();
        assert_eq!(by_name(b".").stat.unwrap().stx_ino, own.stx_ino);
        let a = by_name(b"a").stat.unwrap();
        assert_eq!(a.stx_nlink, 3);
        for other in [&b"a-second"[..], b"a-third"] {
            assert_eq!(by_name(other).stat.unwrap().stx_ino, a.stx_ino);
        }
        let link = by_name(b"link").stat.unwrap();
        assert_eq!(u32::from(link.stx_mode) & libc::S_IFMT, libc::S_IFLNK);
        assert_eq!(link.stx_size, 3, "the link itself, not \"sub\"");
    }

    // A read from each d_off, in an order that never matches where the
    // last read left the file, returns what follows that entry.
    let mut buf = vec![0u8; 2000];
    for record in all.iter().rev().step_by(3) {
        let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, record.off, MASK);
        assert!(res >= 0, "readdirplus from {}: {res}", record.off);
        let records = parse_plus(&buf[..res as usize]);
        assert_full_or_short(
            &plains(&records),
            expected_from(all, record.off, buf.len()),
            short_reads_allowed(dir),
            &format!("from {}", record.off),
        );
    }
}

/// The bytes of a `struct statx` that are no field (`include/uapi/linux/
/// stat.h`): `__spare0`, each timestamp's `__reserved`, `__spare1` and
/// `__spare3`.
const STATX_RESERVED: [std::ops::Range<usize>; 7] = [
    0x1e..0x20,
    0x4c..0x50,
    0x5c..0x60,
    0x6c..0x70,
    0x7c..0x80,
    0xb4..0xb8,
    0xb8..0x100,
];

/// The kernel writes each record's `statx` a field at a time, not as a
/// struct cleared first: every reserved byte must still come out zero, as
/// `statx(2)` leaves it, whatever the buffer held before.
#[test]
fn the_reserved_bytes_of_every_statx_are_zero_over_a_dirty_buffer() {
    use std::mem::offset_of;
    // The offsets above, checked against the fields around them.
    assert_eq!(offset_of!(libc::statx, stx_mode), 0x1c);
    assert_eq!(offset_of!(libc::statx, stx_ino), 0x20);
    assert_eq!(offset_of!(libc::statx, stx_atime), 0x40);
    assert_eq!(offset_of!(libc::statx, stx_mtime), 0x70);
    assert_eq!(offset_of!(libc::statx, stx_rdev_major), 0x80);
    assert_eq!(offset_of!(libc::statx, stx_dev_minor), 0x8c);
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 40);
    let fd = Target::Fd(dir.as_raw_fd());
    let mut buf = vec![0u8; 4096];
    let (mut offset, mut seen) = (0, 0);
    loop {
        buf.fill(0xa5);
        let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, offset, MASK);
        assert!(res >= 0, "readdirplus from {offset}: {res}");
        if res == 0 {
            break;
        }
        let read = &buf[..res as usize];
        let mut records = DirentPlusIter::new(read);
        while let Some(record) = records.next() {
            let record = record.expect("a well-formed record");
            offset = record.offset();
            seen += 1;
            let end = records.position();
            let stx = &read[end - STATX_LEN..end];
            for range in STATX_RESERVED {
                assert!(
                    stx[range.clone()].iter().all(|&b| b == 0),
                    "{:?}: bytes {range:x?} of its statx: {:x?}",
                    record.name(),
                    &stx[range.clone()]
                );
            }
        }
    }
    assert_eq!(seen, all.len(), "every entry read");
}

#[test]
fn reads_at_minus_one_list_the_directory_in_order() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 60);
    let fd = Target::Fd(dir.as_raw_fd());
    seek_dir(dir.as_fd(), 0).unwrap();
    // Each read ignores the offset list_chained passes and goes on from the
    // file's position, which list_chained checks is the last d_off.
    list_with_statx(&mut ring, opcode, fd, true, dir, all, 1500);
}

#[test]
fn a_registered_file_reads_like_a_plain_fd() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let Tree { dir, all, .. } = &Tree::new(make_tree, 20);
    ring.submitter()
        .register_files(&[dir.as_raw_fd()])
        .expect("IORING_REGISTER_FILES");
    let fixed = Target::from(types::Fixed(0));
    list_with_statx(&mut ring, opcode, fixed, false, dir, all, 4096);
}

#[test]
fn a_buffer_smaller_than_one_record_is_einval() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = fs::File::open(tmp.path()).unwrap();
    let fd = Target::Fd(dir.as_raw_fd());
    let mut buf = vec![0u8; MIN_RECORD_LEN];
    // Room for a plain record of "." (24 bytes) is not room for its tail.
    for len in [
        0,
        1,
        PLAIN_MIN_RECORD_LEN,
        MIN_RECORD_LEN - 8,
        MIN_RECORD_LEN - 1,
    ] {
        let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf[..len], 0, MASK);
        assert_eq!(res, -libc::EINVAL, "a buffer of {len} bytes");
    }
    // The smallest records are "."'s and ".."'s, and the first one the
    // directory lists (".." first in ext4's hash order) fits exactly.
    let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, 0, MASK);
    assert_eq!(res, MIN_RECORD_LEN as i32);
    let records = parse_plus(&buf);
    assert_eq!(records.len(), 1);
    assert!(records[0].name() == b"." || records[0].name() == b"..");
    assert_carries_statx_of_its_name(&dir, &records[0]);
}

#[test]
fn a_reserved_mask_bit_or_an_unknown_flag_is_einval() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = fs::File::open(tmp.path()).unwrap();
    let fd = Target::Fd(dir.as_raw_fd());
    let mut buf = vec![0u8; 4096];
    // STATX__RESERVED, bit 31, as statx(2) refuses it.
    let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, 0, 1 << 31);
    assert_eq!(res, -libc::EINVAL, "STATX__RESERVED");
    // Every other mask is taken, as statx(2) takes it.
    let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, 0, 0);
    assert!(res > 0, "mask 0: {res}");
    // rw_flags (bytes 28-31): a flag beside IORING_GETDENTS_PLUS and
    // IORING_GETDENTS_PLUS_DCACHE, kept free for later ones, and the
    // latter without the former.
    let flags = [
        ("rw_flags bit 2", GETDENTS_PLUS | 1 << 2),
        ("IORING_GETDENTS_PLUS_DCACHE alone", GETDENTS_PLUS_DCACHE),
    ];
    for (what, flags) in flags {
        let valid = GetDents::new(fd, buf.as_mut_ptr(), 4096)
            .opcode(opcode)
            .plus(MASK)
            .build()
            .user_data(4);
        // SAFETY: `squeue::Entry` is a `#[repr(C)]` wrapper of the 64-byte
        // io_uring_sqe made of integers only, so it converts to bytes and
        // back with every bit pattern valid.
        let mut bytes = unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(valid) };
        bytes[28..32].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: as above.
        let sqe = unsafe { std::mem::transmute::<[u8; 64], squeue::Entry>(bytes) };
        assert_eq!(submit_and_reap(&mut ring, sqe).0, -libc::EINVAL, "{what}");
    }
    // The kernel wrote through `buf` only while it was alive.
    drop(buf);
}

/// Runs `f` with a ring of its own on a thread whose credentials cannot
/// search a directory of mode 0o600 owned by the caller: as root, a thread
/// that has switched to `nobody` (65534) alone, which drops its
/// capabilities, so the rest of the test process keeps its own; otherwise
/// the caller's. The ring is set up before the switch (a
/// `kernel.io_uring_disabled` of 1 would refuse `nobody` one); its
/// requests run as the thread that submits them.
fn without_search_permission<T: Send>(f: impl FnOnce(&mut IoUring) -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut ring = IoUring::new(4).unwrap();
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    // The raw system calls change this thread's credentials
                    // only; glibc's setresuid() would change every thread's.
                    // SAFETY: no memory is passed; the thread ends with `f`.
                    let gid = unsafe { libc::syscall(libc::SYS_setresgid, 65534, 65534, 65534) };
                    assert_eq!(gid, 0, "setresgid: {}", std::io::Error::last_os_error());
                    // SAFETY: as above.
                    let uid = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
                    assert_eq!(uid, 0, "setresuid: {}", std::io::Error::last_os_error());
                }
                f(&mut ring)
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[test]
fn without_search_permission_every_record_carries_eacces() {
    let Some(opcode) = plus_opcode() else {
        return;
    };
    // Opened while readable, then made unsearchable: the names can still
    // be read through the descriptor, but no name can be looked up.
    let Tree { path, dir, all, .. } = &Tree::new(make_tree, 10);
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    let got = without_search_permission(|ring| {
        if statx_of(dir, b"a").err() != Some(libc::EACCES) {
            return None;
        }
        let fd = Target::Fd(dir.as_raw_fd());
        Some(list_chained(dir, all, 2000, |offset, buf| {
            plus_once(ring, opcode, fd, buf, offset, MASK)
        }))
    });
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    let Some(got) = got else {
        // Only if even `nobody` may search it (an unusual security module
        // or filesystem): nothing to compare with.
        println!(
            "skipped: statx(2) of a name in a directory of mode 0o600 does not fail with EACCES"
        );
        return;
    };
    // "." and ".." too: the kernel checks search permission once per read,
    // before any lookup.
    for record in &got {
        assert_eq!(
            record.stat.err(),
            Some(libc::EACCES),
            "{}",
            String::from_utf8_lossy(record.name())
        );
    }
}

#[test]
fn an_entry_removed_between_reads_has_no_record_or_enoent() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let Tree { path, dir, all, .. } = &Tree::new(make_tree, 40);
    let fd = Target::Fd(dir.as_raw_fd());

    // A first read of a few records, then every other name not yet listed
    // (but no directory) is removed, and the listing goes on from d_off.
    let mut buf = vec![0u8; 1200];
    let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, 0, MASK);
    assert!(res > 0, "first read: {res}");
    let mut got = parse_plus(&buf[..res as usize]);
    let before_removals = got.len();
    let removed: Vec<Vec<u8>> = all[got.len()..]
        .iter()
        .filter(|r| r.d_type != libc::DT_DIR)
        .step_by(2)
        .map(|r| r.name.clone())
        .collect();
    assert!(removed.len() >= 10);
    for name in &removed {
        fs::remove_file(path.join(std::ffi::OsStr::from_bytes(name))).unwrap();
    }
    loop {
        let offset = got.last().unwrap().off();
        let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, offset, MASK);
        assert!(res >= 0, "readdirplus from {offset}: {res}");
        if res == 0 {
            break;
        }
        got.extend(parse_plus(&buf[..res as usize]));
        assert!(
            got.len() <= all.len(),
            "more records than the directory had"
        );
    }

    // What is listed is the directory as it was, in order, less some of the
    // removed names; those still listed carry ENOENT. (Not with the same
    // d_off everywhere: where d_off is the next name's hash, as on ext4, the
    // record before a removed name says where the next one left is.)
    let mut rest = all.iter();
    let same = |r: &Record, p: &Record| (r.ino, r.d_type, &r.name) == (p.ino, p.d_type, &p.name);
    for (i, record) in got.iter().enumerate() {
        assert!(
            rest.any(|r| same(r, &record.plain)),
            "{:?} out of order or unknown",
            String::from_utf8_lossy(record.name())
        );
        if removed.iter().any(|name| name == record.name()) {
            assert_eq!(record.stat.err(), Some(libc::ENOENT), "a removed name");
        } else if record.name() != b"." && i >= before_removals {
            // Read after the removals, so statx(2) now must agree. (A record
            // of the first read holds what was true then: "a" listed there
            // and "a-second" removed after give nlink 3 then, 2 or 1 now, as
            // ext4's hash order may have it; the directory itself changed.)
            assert_carries_statx_of_its_name(dir, record);
        }
    }
    let listed = |name: &Vec<u8>| got.iter().any(|r| r.name() == &name[..]);
    let kept: Vec<_> = all
        .iter()
        .map(|r| &r.name)
        .filter(|n| !removed.contains(n))
        .collect();
    assert!(
        kept.into_iter().all(listed),
        "a name that was not removed is missing"
    );
}

/// Where the tests that drop the dentry cache, need a directory's dentries
/// in it or mount (which sends every lookup from the dcache running at
/// that moment to EAGAIN) take turns ([`dcache_turn`]): a path every suite
/// of the test VM sees (each filesystem's runs at the same time as the others),
/// which `getdents-test.c` locks too.
const DCACHE_LOCK: &str = "/tmp/getdents-dcache.lock";

/// An exclusive `flock` on [`DCACHE_LOCK`], held until the file is
/// dropped.
fn dcache_turn() -> fs::File {
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(DCACHE_LOCK)
        .unwrap();
    // SAFETY: flock on a descriptor `lock` keeps open; no memory is passed.
    let res = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(
        res,
        0,
        "flock {DCACHE_LOCK}: {}",
        std::io::Error::last_os_error()
    );
    lock
}

/// Lookups from the dcache only (`IORING_GETDENTS_PLUS_DCACHE`): with the
/// directory's dentries in memory every record carries what a full lookup
/// gives; once they are dropped (`drop_caches`, which tmpfs survives) a
/// name carries `EAGAIN` or, if still cached, its statx; a full lookup
/// brings them back, and the next read from the dcache answers them all
/// again. The listing itself (names, `d_off`, the end flag) is always
/// getdents64's.
#[test]
fn dcache_lookups_answer_from_memory_or_with_eagain() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let plus = detect::plus_cached();
    if !plus.dcache() {
        if required() {
            common::unavailable_but_required("readdirplus from the dcache only", plus);
        }
        common::skipped(plus);
        return;
    }
    // Only in the test VM (below) is anything dropped, and only there do
    // other suites run beside this one.
    let _turn = required().then(dcache_turn);
    let Tree { dir, all, .. } = &Tree::new(make_tree, 120);
    let fd = Target::Fd(dir.as_raw_fd());
    let len = 8192;
    let list = |ring: &mut IoUring, dcache: bool| {
        list_chained(dir, all, len, |offset, buf| match dcache {
            true => plus_dcache_once(ring, opcode, fd, buf, offset),
            false => plus_once(ring, opcode, fd, buf, offset, MASK),
        })
    };
    // Each record: EAGAIN where `eagain_allowed`, else statx(2)'s answer.
    let check = |got: &[Plus], eagain_allowed: bool| {
        let mut not_looked_up = 0;
        for record in got {
            match record.stat {
                Err(libc::EAGAIN) if eagain_allowed && !matches!(record.name(), b"." | b"..") => {
                    not_looked_up += 1;
                }
                _ => assert_carries_statx_of_its_name(dir, record),
            }
        }
        not_looked_up
    };

    // A lookup from the dcache is an RCU walk, which any mount or unmount
    // on the machine while it runs turns into EAGAIN (the walk cannot
    // wait to retry): other suites mount beside this one, so a cached name
    // must answer within a few reads, not in every one.
    let answers_all = |ring: &mut IoUring, when: &str| {
        let mut missing = 0;
        for _ in 0..DCACHE_READS {
            missing = check(&list(ring, true), true);
            if missing == 0 {
                return;
            }
        }
        panic!("{when}: {missing} cached names carry EAGAIN in each of {DCACHE_READS} reads");
    };

    for record in all {
        let _ = statx_of(dir, &record.name);
    }
    answers_all(&mut ring, "warm");

    // Drops every unused dentry and inode of the machine: only in the
    // test VM, which is where this kernel runs.
    if !required() {
        return;
    }
    fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
    let not_looked_up = check(&list(&mut ring, true), true);
    if short_reads_allowed(dir) {
        assert!(
            not_looked_up > 0,
            "ext4 and XFS drop the dentries of {} names",
            all.len()
        );
    }
    println!("{not_looked_up} of {} names not in the dcache", all.len());
    check(&list(&mut ring, false), false);
    answers_all(&mut ring, "after full lookups");
}

/// How many reads from the dcache a cached name gets to answer in (see
/// [`dcache_lookups_answer_from_memory_or_with_eagain`]).
const DCACHE_READS: usize = 5;

/// Unmounts `path` when dropped, so that a failing test leaves no mount.
struct Mounted<'a>(&'a Path);

impl Drop for Mounted<'_> {
    fn drop(&mut self) {
        let path = CString::new(self.0.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that lives across the call.
        unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
    }
}

/// A name with a filesystem mounted on it: readdirplus gives what
/// `statx(2)` of the name gives, the mounted root (the lookup is a path
/// walk, which follows the mount), with lookups that wait and from the
/// dcache only (the walk finds the mount under RCU). The lookups take no
/// reference on the mount that outlives them: after 200 reads it unmounts
/// at once (not `EBUSY`).
#[test]
fn a_name_with_a_mount_on_it_carries_the_mounted_root_and_leaves_it_free() {
    let Some((opcode, mut ring)) = plus_ring() else {
        return;
    };
    let _turn = required().then(dcache_turn);
    let tmp = tempfile::tempdir().unwrap();
    let point = tmp.path().join("m");
    fs::create_dir(&point).unwrap();
    fs::write(tmp.path().join("f"), b"beside the mount").unwrap();
    let target = CString::new(point.as_os_str().as_bytes()).unwrap();
    // SAFETY: NUL-terminated strings that live across the call, no data.
    let res = unsafe {
        libc::mount(
            c"none".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if res != 0 {
        let why = std::io::Error::last_os_error();
        assert!(!required(), "mount tmpfs on {}: {why}", point.display());
        println!("skipped: mount tmpfs: {why}");
        return;
    }
    let mounted = Mounted(&point);
    fs::create_dir(point.join("inside")).unwrap();
    let root = statx(None, &target, 0, MASK).unwrap();
    let dir = fs::File::open(tmp.path()).unwrap();
    let fd = Target::Fd(dir.as_raw_fd());
    let mut buf = vec![0u8; 4096];

    for _ in 0..200 {
        let (res, _) = plus_once(&mut ring, opcode, fd, &mut buf, 0, MASK);
        assert!(res > 0, "readdirplus: {res}");
        let records = parse_plus(&buf[..res as usize]);
        let m = records.iter().find(|r| r.name() == b"m").expect("m listed");
        let got = m.stat.unwrap_or_else(|errno| panic!("m: errno {errno}"));
        assert_eq!(
            (
                got.stx_ino,
                got.stx_dev_major,
                got.stx_dev_minor,
                got.stx_nlink
            ),
            (root.stx_ino, root.stx_dev_major, root.stx_dev_minor, 3),
            "the mounted root, not the directory under it"
        );
        for record in &records {
            assert_carries_statx_of_its_name(&dir, record);
        }
    }
    if detect::plus_cached().dcache() {
        // EAGAIN while another suite mounts or unmounts (see DCACHE_READS).
        let from_dcache = |ring: &mut IoUring, buf: &mut [u8]| {
            let (res, _) = plus_dcache_once(ring, opcode, fd, buf, 0);
            assert!(res > 0, "readdirplus from the dcache: {res}");
            let records = parse_plus(&buf[..res as usize]);
            let m = records.iter().find(|r| r.name() == b"m").expect("m listed");
            m.stat
        };
        let mut got = from_dcache(&mut ring, &mut buf);
        for _ in 1..DCACHE_READS {
            if !matches!(got, Err(libc::EAGAIN)) {
                break;
            }
            got = from_dcache(&mut ring, &mut buf);
        }
        let got = got.unwrap_or_else(|errno| panic!("m from the dcache: errno {errno}"));
        assert_eq!(
            (got.stx_ino, got.stx_dev_major, got.stx_dev_minor),
            (root.stx_ino, root.stx_dev_major, root.stx_dev_minor),
            "from the dcache too, the mounted root"
        );
    }

    std::mem::forget(mounted);
    // SAFETY: a NUL-terminated path that lives across the call.
    let res = unsafe { libc::umount2(target.as_ptr(), 0) };
    assert_eq!(
        res,
        0,
        "umount {} after the reads: {}",
        point.display(),
        std::io::Error::last_os_error()
    );
}
