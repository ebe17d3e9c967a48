//! The fallback backend's read: `getdents64(2)` on tokio's blocking pool.

use std::io;

use io_uring_getdents::dirent::{HEADER_LEN, RECORD_ALIGN};
use io_uring_getdents::syscall::{getdents64, seek_dir};

use super::MIN_BUFFER_SIZE;
use crate::fd::SharedFd;

/// What a fallback fill brings back.
pub(super) struct Fill {
    pub(super) res: io::Result<usize>,
    pub(super) buf: Box<[u8]>,
    /// `getdents64` returned 0 after the bytes in `res`.
    pub(super) end: bool,
}

/// The fallback read, on a blocking thread: `getdents64` until the buffer
/// cannot take a maximal record or the directory ends. Seeing the end in
/// the same trip saves a second hop to the pool for every directory that
/// fits in one buffer (most of them). The buffer and the descriptor
/// reference travel with the closure, so a dropped `Dir` cannot free them
/// while the system call runs.
pub(super) fn fill(fd: SharedFd, mut buf: Box<[u8]>, seek_to: Option<u64>) -> Fill {
    if let Some(offset) = seek_to {
        if let Err(e) = seek_dir(fd.borrow(), offset) {
            return Fill {
                res: Err(e),
                buf,
                end: false,
            };
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
                }
            }
            Ok(n) => filled += n,
            // Return what was read; the next fill meets the error again.
            Err(_) if filled > 0 => break,
            Err(e) => {
                return Fill {
                    res: Err(e),
                    buf,
                    end: false,
                }
            }
        }
        if buf.len() - filled < MAX_RECORD {
            break;
        }
    }
    Fill {
        res: Ok(filled),
        buf,
        end: false,
    }
}

/// FUSE's limit on names (`FUSE_NAME_MAX`), the longest any Linux file
/// system gives.
const MAX_NAME: usize = 1024;

/// The largest record: a [`MAX_NAME`]-byte name.
const MAX_RECORD: usize = (HEADER_LEN + MAX_NAME + 1).next_multiple_of(RECORD_ALIGN);

const _: () = assert!(MIN_BUFFER_SIZE >= MAX_RECORD);
