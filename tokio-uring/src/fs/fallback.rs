//! The fallback backend's read: `getdents64(2)` on tokio's blocking pool;
//! and entry metadata where the kernel has no readdirplus: a `statx(2)`
//! per entry on the same thread, written into readdirplus records.

use std::io;

use io_uring_getdents::dirent::{self, DirentIter, HEADER_LEN, RECORD_ALIGN};
use io_uring_getdents::plus::{encode_plus, TAIL_LEN};
use io_uring_getdents::syscall::{getdents64, seek_dir, statx};

use super::MIN_BUFFER_SIZE;
use crate::fd::SharedFd;

/// What a fallback fill brings back.
pub(super) struct Fill {
    /// The bytes of records read: in `buf`, or in `records` when there.
    pub(super) res: io::Result<usize>,
    pub(super) buf: Box<[u8]>,
    /// `getdents64` returned 0 after the bytes in `res`.
    pub(super) end: bool,
    /// With entry metadata: the records read, rewritten as readdirplus
    /// records (they no longer fit the read buffer).
    pub(super) records: Option<Vec<u8>>,
}

/// The fallback read, on a blocking thread: `getdents64` until the buffer
/// cannot take a maximal record or the directory ends. Seeing the end in
/// the same trip saves a second hop to the pool for every directory that
/// fits in one buffer (most of them). The buffer and the descriptor
/// reference travel with the closure, so a dropped `Dir` cannot free them
/// while the system call runs. With `mask`, the entries are stat'ed here
/// too ([`with_metadata`]).
pub(super) fn fill(fd: SharedFd, buf: Box<[u8]>, seek_to: Option<u64>, mask: Option<u32>) -> Fill {
    let read = read(&fd, buf, seek_to);
    match (mask, &read.res) {
        (Some(mask), Ok(n)) if *n > 0 => with_metadata(&fd, read.buf, *n, read.end, mask),
        _ => read,
    }
}

fn read(fd: &SharedFd, mut buf: Box<[u8]>, seek_to: Option<u64>) -> Fill {
    let fail = |res, buf| Fill {
        res,
        buf,
        end: false,
        records: None,
    };
    if let Some(offset) = seek_to {
        if let Err(e) = seek_dir(fd.borrow(), offset) {
            return fail(Err(e), buf);
        }
    }
    let mut filled = 0;
    loop {
        match getdents64(fd.borrow(), &mut buf[filled..]) {
            Ok(0) => {
                return Fill {
                    res: Ok(filled),
                    buf,
                    end: true,
                    records: None,
                }
            }
            Ok(n) => filled += n,
            // Return what was read; the next fill meets the error again.
            Err(_) if filled > 0 => break,
            Err(e) => return fail(Err(e), buf),
        }
        if buf.len() - filled < MAX_RECORD {
            break;
        }
    }
    fail(Ok(filled), buf)
}

/// The first `filled` bytes of `buf`, plain records read from `fd`, as
/// readdirplus records: each entry with what `statx(2)` of its name with
/// `mask` gives, or its errno, as the kernel's readdirplus would write
/// them, so that a `Dir` reads one layout whichever way the metadata came.
/// Runs on a blocking thread: the fallback's, or one right after a
/// GETDENTS without readdirplus.
pub(super) fn with_metadata(
    fd: &SharedFd,
    buf: Box<[u8]>,
    filled: usize,
    end: bool,
    mask: u32,
) -> Fill {
    let Some(plain) = buf.get(..filled) else {
        // Passed on as it is: the `Dir` reports the impossible length.
        return Fill {
            res: Ok(filled),
            buf,
            end,
            records: None,
        };
    };
    // Room for the most records `filled` bytes can hold, each with its tail.
    let most = filled / dirent::MIN_RECORD_LEN;
    let mut records = Vec::with_capacity(filled + most * TAIL_LEN);
    for record in DirentIter::new(plain) {
        let record = match record {
            Ok(record) => record,
            Err(e) => {
                // A corrupt record and what follows stay as they are: the
                // `Dir` fails on them after the entries before, as it does
                // on any corrupt record.
                records.extend_from_slice(plain.get(e.position()..).unwrap_or_default());
                break;
            }
        };
        // `.` and `..` are never yielded: no statx for them. `..` carries
        // EOPNOTSUPP as in the kernel's records; `.` too, since nothing
        // reads it.
        let stat = if record.is_dot_or_dotdot() {
            Err(libc::EOPNOTSUPP)
        } else {
            statx(
                Some(fd.borrow()),
                record.name(),
                libc::AT_NO_AUTOMOUNT,
                mask,
            )
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
        };
        // Cannot panic: the kernel checked the name (not empty, no `/` or
        // NUL: `verify_dirent_name`), a name of at most 1 024 bytes leaves
        // the record far below 64 KiB, and statx(2) fails with an errno
        // of 1 to 4095.
        encode_plus(
            &mut records,
            record.ino(),
            record.offset(),
            record.d_type(),
            record.name_bytes(),
            stat.as_ref().map_err(|&errno| errno),
        );
    }
    Fill {
        res: Ok(records.len()),
        buf,
        end,
        records: Some(records),
    }
}

/// FUSE's limit on names (`FUSE_NAME_MAX`), the longest any Linux file
/// system gives.
const MAX_NAME: usize = 1024;

/// The largest record: a [`MAX_NAME`]-byte name.
const MAX_RECORD: usize = (HEADER_LEN + MAX_NAME + 1).next_multiple_of(RECORD_ALIGN);

/// The smallest buffer takes the largest record, and with readdirplus
/// the largest record with its `statx` tail.
const _: () = assert!(MIN_BUFFER_SIZE >= MAX_RECORD + TAIL_LEN);

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use io_uring_getdents::dirent::encode;
    use io_uring_getdents::plus::DirentPlusIter;

    use super::*;

    /// Plain records rewritten with their metadata: an entry that exists
    /// gets its statx, one removed before the lookup ENOENT, the dot
    /// entries EOPNOTSUPP without a call; bytes after a corrupt record
    /// are kept, so that the reader fails there, after the good entries.
    #[test]
    fn plain_records_get_statx_or_its_errno() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("here"), b"abc").unwrap();
        let dir = std::fs::File::open(tmp.path()).unwrap();
        let fd = SharedFd::new(dir.as_fd().try_clone_to_owned().unwrap());
        let mut plain = Vec::new();
        encode(&mut plain, 1, 1, libc::DT_DIR, b".");
        encode(&mut plain, 2, 2, libc::DT_DIR, b"..");
        encode(&mut plain, 3, 3, libc::DT_REG, b"here");
        encode(&mut plain, 4, 4, libc::DT_REG, b"gone");
        let good = plain.len();
        // A record claiming 4 bytes, less than a header.
        plain.extend_from_slice(&[0u8; 16]);
        plain.extend_from_slice(&4u16.to_ne_bytes());
        plain.extend_from_slice(&[0u8; 6]);
        let mut buf = vec![0u8; 4096].into_boxed_slice();
        buf[..plain.len()].copy_from_slice(&plain);

        let fill = with_metadata(&fd, buf, plain.len(), true, libc::STATX_BASIC_STATS);
        assert!(fill.end);
        let records = fill.records.expect("rewritten records");
        assert_eq!(fill.res.unwrap(), records.len());
        let mut parsed = DirentPlusIter::new(&records);
        let mut next = || parsed.next().unwrap().unwrap();
        for dot in [&b"."[..], b".."] {
            let record = next();
            assert_eq!(record.name_bytes(), dot);
            assert_eq!(
                record.stat().unwrap_err().raw_os_error(),
                Some(libc::EOPNOTSUPP)
            );
        }
        let here = next();
        let want = std::fs::symlink_metadata(tmp.path().join("here")).unwrap();
        let stx = here.stat().unwrap();
        assert_eq!(stx.stx_ino, std::os::unix::fs::MetadataExt::ino(&want));
        assert_eq!(stx.stx_size, 3);
        let gone = next();
        assert_eq!(gone.stat().unwrap_err().raw_os_error(), Some(libc::ENOENT));
        assert!(
            matches!(parsed.next(), Some(Err(_))),
            "the corrupt tail fails"
        );
        assert_eq!(
            &records[records.len() - (plain.len() - good)..],
            &plain[good..]
        );
    }
}
