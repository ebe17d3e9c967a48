//! A walker's reads: a directory read to its end with `getdents64`, each
//! entry stat'ed where needed, each read's entries handed to the stream's
//! queue (after the filter), waiting while the queue is full.

use std::ffi::{CStr, CString};
use std::io;
use std::mem;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::{getdents64, statx};

use super::super::{lock, Chunk, LATENCY, WAKE_AT};
use super::Walker;
use crate::error::PathError;
use crate::fs::{FileType, Metadata, STATX_TYPE};
use crate::walk::entry::{DirName, Name, WalkEntry};
use crate::walk::{Visit, READY_HIGH};

impl Walker {
    /// Reads `dir` to its end, handing each read's entries to the stream;
    /// returns the subdirectories to walk.
    pub(super) fn read(
        &mut self,
        fd: BorrowedFd<'_>,
        dir: &Arc<DirName>,
        depth: usize,
    ) -> Vec<CString> {
        let mut subdirs = Vec::new();
        let mask = self.shared.mask;
        while !self.shared.stopped() {
            let n = match getdents64(fd, &mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let err = PathError::wrap_at("read directory", dir.join(None), e, depth);
                    self.items.push(Err(err));
                    break;
                }
            };
            // The entries' names are slices of one copy of the read.
            let names: Arc<[u8]> = Arc::from(&self.buf[..n]);
            let mut broken = false;
            for record in DirentIter::new(&names) {
                let record = match record {
                    Ok(record) => record,
                    Err(e) => {
                        let err =
                            PathError::wrap_at("read directory", dir.join(None), e.into(), depth);
                        self.items.push(Err(err));
                        broken = true;
                        break;
                    }
                };
                if record.is_dot_or_dotdot() {
                    continue;
                }
                let name = record.name();
                let start = name.as_ptr() as usize - names.as_ptr() as usize;
                let shared = Name::within(&names, start, name.count_bytes());
                let item = entry(
                    dir,
                    depth,
                    fd,
                    mask,
                    (name, shared),
                    record.file_type(),
                    record.ino(),
                );
                self.items.push(item);
            }
            if broken {
                break;
            }
            self.emit(dir, depth + 1, &mut subdirs);
        }
        self.emit(dir, depth + 1, &mut subdirs);
        subdirs
    }

    /// Hands `self.items` (entries of `dir`, at `depth`) to the stream,
    /// after the filter, and adds the subdirectories to walk to `subdirs`.
    /// Waits while the stream has `READY_HIGH` entries not taken.
    pub(super) fn emit(&mut self, dir: &Arc<DirName>, depth: usize, subdirs: &mut Vec<CString>) {
        if self.items.is_empty() {
            return;
        }
        let enter = depth < self.shared.max_depth;
        let wants = |e: &WalkEntry| enter && e.file_type() == FileType::Directory;
        let name = |e: &WalkEntry| CString::new(e.file_name().as_bytes()).ok();
        if !self.shared.filtered {
            let dirs = self.items.iter().filter_map(|i| i.as_ref().ok());
            subdirs.extend(dirs.filter(|e| wants(e)).filter_map(name));
        }
        let mut state = lock(&self.shared);
        while state.queued >= READY_HIGH && !self.shared.stopped() {
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
            state.waiting_for_room += 1;
            state = self
                .shared
                .room_cv
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.waiting_for_room -= 1;
        }
        if self.shared.stopped() {
            self.items.clear();
            return;
        }
        if let Some(filter) = state.filter.as_mut() {
            self.items.retain(|item| {
                let Ok(e) = item else {
                    return true;
                };
                let visit = filter(e);
                if visit == Visit::Continue && wants(e) {
                    subdirs.extend(name(e));
                }
                visit != Visit::Skip
            });
        }
        let spare = state.spares.pop().unwrap_or_default();
        let items = mem::replace(&mut self.items, spare);
        if !items.is_empty() {
            state.queued += items.len();
            state.out.push_back(Chunk {
                dir: Arc::clone(dir),
                items,
            });
        }
        let now = Instant::now();
        let since = *state.since.get_or_insert(now);
        if state.queued >= WAKE_AT || now - since >= LATENCY {
            if let Some(waker) = state.waker.take() {
                drop(state);
                waker.wake();
            }
        }
    }
}

/// One entry, stat'ed relative to `fd` when a mask was given or the file
/// system did not say its type.
fn entry(
    dir: &Arc<DirName>,
    depth: usize,
    fd: BorrowedFd<'_>,
    mask: Option<u32>,
    (name, shared): (&CStr, Name),
    file_type: FileType,
    ino: u64,
) -> io::Result<WalkEntry> {
    let stat_mask = match mask {
        Some(mask) => Some(mask | STATX_TYPE),
        None if file_type == FileType::Unknown => Some(STATX_TYPE),
        None => None,
    };
    let (file_type, metadata) = match stat_mask {
        None => (file_type, None),
        Some(stat_mask) => {
            let stx = statx(Some(fd), name, 0, stat_mask).map_err(|e| {
                let path = dir.join(Some(shared.as_os_str()));
                PathError::wrap_at("stat", path, e, depth + 1)
            })?;
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
        Some(Arc::clone(dir)),
        shared,
        depth + 1,
        file_type,
        ino,
        metadata,
    ))
}
