//! GETDENTS' self-test (step 4 of detection): a directory made for the
//! test, listed with `getdents64(2)` and with GETDENTS reads chained by
//! `d_off`, and the two listings compared. The readdirplus self-test
//! ([`plus`](super::plus)) reuses the directory, the chained reads and the
//! comparison.

use std::fs;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use io_uring::{types, IoUring};

use super::Unavailable;
use crate::cqe::dir_eof;
use crate::dirent::DirentIter;
use crate::opcode::GetDents;
use crate::syscall::getdents64;

/// One record as both readers report it.
pub(super) type Record = (u64, u64, u8, Vec<u8>);

/// Bytes per read of the plain self-test: a few records.
const TEST_READ_LEN: usize = 160;

/// GETDENTS' self-test, step 4 of detection.
pub(super) fn self_test(opcode: u8) -> Result<(), Unavailable> {
    let fail = |error: io::Error| Unavailable::SelfTest { opcode, error };
    let dir = TestDir::create(TEST_FILES).map_err(fail)?;
    let file = fs::File::open(&dir.0).map_err(fail)?;
    let expected = listing(&file).map_err(fail)?;
    // The descriptor's position is at the end now (after the listing), so
    // the first read also proves that the kernel seeks to `off`.
    let got = read_chained(
        &file,
        opcode,
        None,
        TEST_READ_LEN,
        expected.len(),
        |buf, out| collect(buf, out).map_err(ChainError::Io),
    )
    .map_err(|e| match e {
        ChainError::Errno { errno, .. } => fail(io::Error::from_raw_os_error(errno)),
        ChainError::Io(error) => fail(error),
        ChainError::Mismatch(detail) => Unavailable::Mismatch { opcode, detail },
    })?;
    match first_difference(&expected, &got) {
        Some(detail) => Err(Unavailable::Mismatch { opcode, detail }),
        None => Ok(()),
    }
}

/// The records of `file` as `getdents64` lists them, from where its
/// position is (the start, for a directory just opened).
pub(super) fn listing(file: &fs::File) -> io::Result<Vec<Record>> {
    let mut records = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = getdents64(file.as_fd(), &mut buf)?;
        if n == 0 {
            return Ok(records);
        }
        collect(&buf[..n], &mut records)?;
    }
}

/// Why a chain of test reads failed.
pub(super) enum ChainError {
    /// A read's result was `-errno`; `first` if it was the first read.
    Errno { errno: i32, first: bool },
    /// The test could not run: a ring, a submission, a corrupt record.
    Io(io::Error),
    /// The reads did not list the directory as they should.
    Mismatch(String),
}

/// The readdirplus mode of [`read_chained`]'s reads, with its mask.
#[derive(Clone, Copy)]
pub(super) enum Plus {
    /// [`GetDents::plus`]: every name looked up.
    Lookups(u32),
    /// [`GetDents::plus_dcache`]: from the dcache only.
    Dcache(u32),
}

/// Lists `file` with GETDENTS reads of `len` bytes (readdirplus as `plus`
/// asks), each from the last record's `d_off`, until a read
/// returns 0; `collect` appends each read's records. A read flagged as the
/// end of the directory must be followed by nothing (users stop there; the
/// read of 0 bytes after it still comes, to check that), and a directory of
/// `entries` records must end within `entries + 2` reads.
pub(super) fn read_chained(
    file: &fs::File,
    opcode: u8,
    plus: Option<Plus>,
    len: usize,
    entries: usize,
    mut collect: impl FnMut(&[u8], &mut Vec<Record>) -> Result<(), ChainError>,
) -> Result<Vec<Record>, ChainError> {
    // A small buffer forces many submissions, each resumed from the last
    // d_off, which is the part of the semantics a user relies on.
    let mut ring = IoUring::new(4).map_err(ChainError::Io)?;
    let mut buf = vec![0u8; len];
    let mut got: Vec<Record> = Vec::new();
    let mut offset = 0u64;
    let mut ended = false;
    for read in 0..=entries + 1 {
        let mut entry = GetDents::new(types::Fd(file.as_raw_fd()), buf.as_mut_ptr(), len as u32)
            .offset(offset)
            .opcode(opcode);
        match plus {
            Some(Plus::Lookups(mask)) => entry = entry.plus(mask),
            Some(Plus::Dcache(mask)) => entry = entry.plus_dcache(mask),
            None => {}
        }
        let sqe = entry.build().user_data(1);
        // SAFETY: `buf` and `file` stay alive and untouched until the
        // completion is reaped below (we wait for exactly this one entry on
        // a private ring).
        unsafe { ring.submission().push(&sqe) }
            .map_err(|_| ChainError::Io(io::Error::other("submission queue full")))?;
        let (res, flags) = loop {
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ChainError::Io(e)),
            }
            if let Some(cqe) = ring.completion().next() {
                break (cqe.result(), cqe.flags());
            }
        };
        if res < 0 {
            return Err(ChainError::Errno {
                errno: -res,
                first: read == 0,
            });
        }
        let n = res as usize;
        if n > len {
            return Err(ChainError::Mismatch(format!(
                "result {n} exceeds the buffer of {len}"
            )));
        }
        if n == 0 {
            return Ok(got);
        }
        if ended {
            return Err(ChainError::Mismatch(format!(
                "records after a read flagged as the end of the directory, at record {}",
                got.len()
            )));
        }
        ended = dir_eof(flags);
        let before = got.len();
        collect(&buf[..n], &mut got)?;
        offset = match got.get(before..) {
            Some([.., last]) => last.1,
            _ => {
                return Err(ChainError::Mismatch(format!(
                    "a read of {n} bytes without a record"
                )))
            }
        };
    }
    Err(ChainError::Mismatch(format!(
        "no end of directory after {} reads of {entries} entries",
        entries + 2
    )))
}

pub(super) fn collect(buf: &[u8], out: &mut Vec<Record>) -> io::Result<()> {
    for entry in DirentIter::new(buf) {
        let entry = entry?;
        out.push((
            entry.ino(),
            entry.offset(),
            entry.d_type(),
            entry.name_bytes().to_vec(),
        ));
    }
    Ok(())
}

/// The first record in which two listings differ, described.
pub(super) fn first_difference(expected: &[Record], got: &[Record]) -> Option<String> {
    let i = (0..expected.len().max(got.len())).find(|&i| expected.get(i) != got.get(i))?;
    Some(format!(
        "record {i}: getdents64 gave {:?}, GETDENTS gave {:?}",
        expected.get(i),
        got.get(i)
    ))
}

/// Files in the GETDENTS self-test's directory: names of 9 to 49 bytes,
/// read in small chunks.
const TEST_FILES: usize = 48;

/// A directory of known entries, removed on drop.
pub(super) struct TestDir(pub(super) PathBuf);

impl TestDir {
    /// `files` empty files (`entry-NN-` and NN % 41 `x`s), a directory
    /// and a symbolic link to it.
    pub(super) fn create(files: usize) -> io::Result<TestDir> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "io-uring-getdents-detect-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&path)?;
        let dir = TestDir(path);
        for i in 0..files {
            let name = format!("entry-{i:02}-{}", "x".repeat(i % 41));
            fs::write(dir.0.join(name), [])?;
        }
        fs::create_dir(dir.0.join("subdir"))?;
        std::os::unix::fs::symlink("subdir", dir.0.join("link"))?;
        Ok(dir)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
