//! A whole directory in one call: the loop every user of the opcode
//! writes, with GETDENTS where the kernel has it and `getdents64(2)`
//! elsewhere.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use io_uring::{types, IoUring};

use crate::cqe::dir_eof;
use crate::detect;
use crate::dirent::DirentIter;
use crate::opcode::GetDents;
use crate::syscall::{getdents64, seek_dir};

/// Bytes asked for per read.
const CHUNK: usize = 64 * 1024;

/// Every `linux_dirent64` record of the directory `fd`, from its start,
/// concatenated (`.` and `..` included; parse them with
/// [`DirentIter`]).
///
/// With a `ring` and a kernel that has GETDENTS ([`detect::cached`]), each
/// read is a GETDENTS submission on that ring, chained by the last
/// record's `d_off`, until a completion says end of directory or a read
/// returns 0. Otherwise, or without a ring, it reads with
/// [`getdents64`] after moving the position to 0. The ring must have
/// nothing else in flight: this waits for its own completions and takes
/// whatever completes.
///
/// # Errors
///
/// The errno of the read (`ENOTDIR`, `ENOENT` for a removed directory),
/// `EIO` when the ring gives no completion, `InvalidData` for a corrupt
/// record.
///
/// # Example
///
/// ```
/// use std::os::fd::AsFd;
/// use io_uring_getdents::dirent::DirentIter;
/// use io_uring_getdents::read_all::read_dir_all;
///
/// let dir = io_uring_getdents::syscall::open_dir_at(None, "/usr")?;
/// let mut ring = io_uring::IoUring::new(4)?;
/// let records = read_dir_all(dir.as_fd(), Some(&mut ring))?;
/// let names: Vec<_> = DirentIter::new(&records)
///     .map(|r| r.map(|r| r.name_os().to_owned()))
///     .collect::<Result<_, _>>()?;
/// assert!(names.iter().any(|n| n == "bin"));
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn read_dir_all(fd: BorrowedFd<'_>, ring: Option<&mut IoUring>) -> io::Result<Vec<u8>> {
    match (ring, detect::cached().opcode()) {
        (Some(ring), Some(opcode)) => read_with_ring(fd, ring, opcode),
        _ => read_with_syscall(fd),
    }
}

fn read_with_syscall(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    seek_dir(fd, 0)?;
    let mut records = Vec::new();
    loop {
        let start = records.len();
        records.resize(start + CHUNK, 0);
        let n = getdents64(fd, &mut records[start..])?;
        records.truncate(start + n);
        if n == 0 {
            return Ok(records);
        }
    }
}

fn read_with_ring(fd: BorrowedFd<'_>, ring: &mut IoUring, opcode: u8) -> io::Result<Vec<u8>> {
    let mut records = Vec::new();
    let mut offset = 0;
    loop {
        let start = records.len();
        records.resize(start + CHUNK, 0);
        let buf = records[start..].as_mut_ptr();
        let sqe = GetDents::new(types::Fd(fd.as_raw_fd()), buf, CHUNK as u32)
            .offset(offset)
            .opcode(opcode)
            .build();
        // SAFETY: the buffer (CHUNK bytes from `buf`) and the descriptor
        // stay valid until the completion, which is waited for below
        // before `records` is touched again or `fd`'s borrow ends.
        unsafe { ring.submission().push(&sqe) }
            .map_err(|_| io::Error::other("the ring's submission queue is full"))?;
        ring.submit_and_wait(1)?;
        let cqe = ring
            .completion()
            .next()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EIO))?;
        if cqe.result() < 0 {
            return Err(io::Error::from_raw_os_error(-cqe.result()));
        }
        let n = cqe.result() as usize;
        records.truncate(start + n.min(CHUNK));
        if n == 0 {
            return Ok(records);
        }
        for record in DirentIter::new(&records[start..]) {
            offset = record?.offset();
        }
        if dir_eof(cqe.flags()) {
            return Ok(records);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::os::fd::AsFd;

    use super::*;

    #[test]
    fn the_whole_directory_as_std_lists_it() {
        let tmp = tempfile::tempdir().unwrap();
        // Several reads' worth of names.
        for i in 0..5_000 {
            std::fs::write(
                tmp.path().join(format!("file-with-a-longish-name-{i}")),
                b"",
            )
            .unwrap();
        }
        let want: BTreeSet<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let dir = crate::syscall::open_dir_at(None, tmp.path()).unwrap();
        let mut ring = IoUring::new(4).unwrap();
        for ring in [None, Some(&mut ring)] {
            let records = read_dir_all(dir.as_fd(), ring).unwrap();
            let got: BTreeSet<_> = DirentIter::new(&records)
                .map(|r| r.unwrap())
                .filter(|r| !r.is_dot_or_dotdot())
                .map(|r| r.name_os().to_owned())
                .collect();
            assert_eq!(got, want);
        }
    }
}
