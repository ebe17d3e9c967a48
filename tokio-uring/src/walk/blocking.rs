//! The walk's reads on kernels without GETDENTS: several directories in
//! one trip to tokio's blocking pool, each opened, read to its end and (if
//! asked) stat'ed there with plain system calls relative to its
//! descriptor.
//!
//! Without GETDENTS every read is a hop to a blocking thread anyway, and
//! io_uring's STATX is handed to an io-wq worker too; one hop for a whole
//! batch of directories, with `openat`, `getdents64` and `statx` made
//! directly, costs the wake-ups of one hop instead of one per read, per
//! open and per stat. DESIGN.md ("The walk without GETDENTS") has the
//! measurements.

use std::cell::RefCell;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::{getdents64, open_dir_at, statx};

use super::entry::{DirName, WalkEntry};
use super::node::Kept;
use crate::error::PathError;
use crate::fd::SharedFd;
use crate::fs::{FileType, Metadata, STATX_TYPE};

/// One directory to read: opened from `start` through `names` (empty for
/// the directory of `start` itself).
pub(super) struct Order {
    pub(super) start: SharedFd,
    pub(super) names: Vec<CString>,
    pub(super) dir: Arc<DirName>,
    pub(super) depth: usize,
}

/// What a directory gave: its entries (and errors), and its descriptor if
/// it has subdirectories and the batch was allowed to keep it.
pub(super) struct Listing {
    pub(super) kept: Option<Kept>,
    pub(super) items: Vec<io::Result<WalkEntry>>,
}

/// Reads every directory of `orders` on one blocking thread. At most
/// `keep` descriptors come back (the walk reserved them); every other
/// descriptor is closed before this returns.
pub(super) async fn read_batch(orders: Vec<Order>, mask: Option<u32>, keep: usize) -> Vec<Listing> {
    let count = orders.len();
    match tokio::task::spawn_blocking(move || list_all(orders, mask, keep)).await {
        Ok(listings) => listings,
        Err(e) => {
            let why = e.to_string();
            (0..count)
                .map(|_| Listing {
                    kept: None,
                    items: vec![Err(io::Error::other(format!(
                        "directory read failed: {why}"
                    )))],
                })
                .collect()
        }
    }
}

/// The read buffer of each blocking thread, reused across batches.
const BUFFER: usize = 64 * 1024;

thread_local! {
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn list_all(orders: Vec<Order>, mask: Option<u32>, mut keep: usize) -> Vec<Listing> {
    BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        if buf.len() < BUFFER {
            buf.resize(BUFFER, 0);
        }
        orders
            .into_iter()
            .map(|order| list_one(order, mask, &mut buf, &mut keep))
            .collect()
    })
}

fn list_one(order: Order, mask: Option<u32>, buf: &mut [u8], keep: &mut usize) -> Listing {
    let failed = |op, e| Listing {
        kept: None,
        items: vec![Err(PathError::wrap(op, order.dir.join(None), e))],
    };
    // Descend from `start`, holding at most the step's descriptor and the
    // next one.
    let mut opened: Option<OwnedFd> = None;
    for name in &order.names {
        let at = opened
            .as_ref()
            .map_or(order.start.borrow(), |fd| fd.as_fd());
        match open_dir_at(Some(at), name) {
            Ok(fd) => opened = Some(fd),
            Err(e) => return failed("open directory", e),
        }
    }
    let fd = opened
        .as_ref()
        .map_or(order.start.borrow(), |fd| fd.as_fd());
    let mut items = Vec::new();
    let mut subdirs = 0;
    loop {
        let n = match getdents64(fd, buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                items.push(Err(PathError::wrap(
                    "read directory",
                    order.dir.join(None),
                    e,
                )));
                break;
            }
        };
        for record in DirentIter::new(&buf[..n]) {
            let record = match record {
                Ok(record) => record,
                Err(e) => {
                    let e = io::Error::from(e);
                    items.push(Err(PathError::wrap(
                        "read directory",
                        order.dir.join(None),
                        e,
                    )));
                    break;
                }
            };
            if record.is_dot_or_dotdot() {
                continue;
            }
            let item = entry(
                &order,
                fd,
                mask,
                record.name(),
                record.file_type(),
                record.ino(),
            );
            if matches!(&item, Ok(e) if e.file_type() == FileType::Directory) {
                subdirs += 1;
            }
            items.push(item);
        }
    }
    let kept = match opened {
        Some(fd) if subdirs > 0 && *keep > 0 => {
            *keep -= 1;
            Some(Kept::Fd(SharedFd::new(fd)))
        }
        _ => None,
    };
    Listing { kept, items }
}

/// One entry, stat'ed relative to `fd` when a mask was given or the file
/// system did not say its type.
fn entry(
    order: &Order,
    fd: BorrowedFd<'_>,
    mask: Option<u32>,
    name: &std::ffi::CStr,
    file_type: FileType,
    ino: u64,
) -> io::Result<WalkEntry> {
    let name_os = OsStr::from_bytes(name.to_bytes());
    let stat_mask = match mask {
        Some(mask) => Some(mask | STATX_TYPE),
        None if file_type == FileType::Unknown => Some(STATX_TYPE),
        None => None,
    };
    let (file_type, metadata) = match stat_mask {
        None => (file_type, None),
        Some(stat_mask) => {
            let stx = statx(Some(fd), name, 0, stat_mask)
                .map_err(|e| PathError::wrap("stat", order.dir.join(Some(name_os)), e))?;
            let meta = Metadata::from_statx(&stx);
            let file_type = if file_type == FileType::Unknown {
                meta.file_type()
            } else {
                file_type
            };
            (file_type, mask.map(|_| meta))
        }
    };
    Ok(WalkEntry::new(
        Some(Arc::clone(&order.dir)),
        name_os.to_os_string(),
        order.depth + 1,
        file_type,
        ino,
        metadata,
    ))
}
