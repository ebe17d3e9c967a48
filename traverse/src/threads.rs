//! The `threads` engine: worker threads on plain system calls.
//!
//! Workers share one LIFO stack of directories (last in, first out keeps
//! the walk depth-first, so the stack stays as small as the tree is wide).
//! A worker reads a whole directory with `getdents64` into a large buffer,
//! stats each entry with `statx` relative to the directory's descriptor,
//! then pushes the subdirectories and takes the next directory in the same
//! lock. Each directory is one unit of work, so the lock is taken once per
//! directory, not per entry.

use std::ffi::CStr;
use std::os::fd::AsFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;

use crate::engine::{on_threads, Shared, Worker};
use crate::node::DirNode;
use crate::sys;
use crate::totals::Accumulator;
use crate::{Op, VisitorBuilder};

/// Bytes per `getdents64` call: a directory of up to ~30 000 entries is
/// read in one call (peers use 32 KiB, about 1 000 entries).
const BUF_LEN: usize = 1 << 20;

/// Walks below `root` (already counted) with `shared.config.jobs` threads.
pub(crate) fn walk(
    shared: &Shared,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let queue = Queue {
        state: Mutex::new(State {
            stack: vec![root],
            active: 0,
            done: false,
        }),
        ready: Condvar::new(),
    };
    on_threads(shared.config.jobs, shared, visitors, |worker| {
        let mut reader = Reader::new();
        let mut next = queue.next(shared, None);
        while let Some(dir) = next {
            reader.read(worker, shared, &dir);
            drop(dir);
            let children = std::mem::take(&mut reader.children);
            next = queue.next(shared, Some(children));
        }
    })
}

struct State {
    stack: Vec<Arc<DirNode>>,
    /// Workers reading a directory (they may push more).
    active: usize,
    done: bool,
}

struct Queue {
    state: Mutex<State>,
    ready: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the worker's directory, if it had one (`done` holds the
    /// subdirectories it found), and returns the next directory, or `None`
    /// when the walk is over or interrupted.
    fn next(&self, shared: &Shared, done: Option<Vec<Arc<DirNode>>>) -> Option<Arc<DirNode>> {
        let mut st = self.lock();
        if let Some(children) = done {
            st.active -= 1;
            st.stack.extend(children);
        }
        loop {
            if st.done {
                return None;
            }
            if shared.interrupted() {
                st.done = true;
                st.stack.clear();
                self.ready.notify_all();
                return None;
            }
            if let Some(dir) = st.stack.pop() {
                st.active += 1;
                if !st.stack.is_empty() {
                    self.ready.notify_one();
                }
                return Some(dir);
            }
            if st.active == 0 {
                st.done = true;
                self.ready.notify_all();
                return None;
            }
            st = self.ready.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// One entry of the directory being read; its name lives in
/// [`Reader::names`] with a NUL after it.
#[derive(Clone, Copy)]
struct Ent {
    ino: u64,
    start: u32,
    len: u8,
    d_type: u8,
}

/// A worker's buffers, kept from one directory to the next.
struct Reader {
    buf: Vec<u8>,
    names: Vec<u8>,
    ents: Vec<Ent>,
    children: Vec<Arc<DirNode>>,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            buf: vec![0; BUF_LEN],
            names: Vec::new(),
            ents: Vec::new(),
            children: Vec::new(),
        }
    }

    fn read(&mut self, worker: &mut Worker<'_>, shared: &Shared, dir: &Arc<DirNode>) {
        worker.enter(dir);
        let fd = match dir.open(sys::open_dir, &shared.budget) {
            Ok(fd) => fd,
            Err(cause) => {
                worker.dir_error(Op::Open, cause);
                worker.leave(shared);
                return;
            }
        };
        self.names.clear();
        self.ents.clear();
        'read: while !shared.interrupted() {
            let n = match getdents64(fd.as_fd(), &mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(cause) => {
                    worker.dir_error(Op::Read, cause);
                    break;
                }
            };
            for entry in DirentIter::new(&self.buf[..n]) {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(bad) => {
                        worker.dir_error(Op::Read, bad.into());
                        break 'read;
                    }
                };
                if entry.is_dot_or_dotdot() {
                    continue;
                }
                let name = entry.name_bytes();
                self.ents.push(Ent {
                    ino: entry.ino(),
                    start: self.names.len() as u32,
                    // The kernel caps names at 255 bytes (NAME_MAX).
                    len: name.len().min(255) as u8,
                    d_type: entry.d_type(),
                });
                self.names.extend_from_slice(name);
                self.names.push(0);
            }
        }
        if shared.inode_order(self.ents.len()) {
            self.ents.sort_unstable_by_key(|e| e.ino);
        }
        for (i, ent) in self.ents.iter().enumerate() {
            if i % 1024 == 1023 && shared.interrupted() {
                break;
            }
            let start = ent.start as usize;
            let end = start + usize::from(ent.len);
            let name = &self.names[start..end];
            let cname = CStr::from_bytes_with_nul(&self.names[start..=end])
                .expect("names are stored with one NUL after them");
            let st = if shared.needs_stat(ent.d_type) {
                match sys::statx(Some(fd.as_fd()), cname) {
                    Ok(st) => Some(st),
                    Err(cause) => {
                        worker.entry_error(name, Op::Stat, cause);
                        continue;
                    }
                }
            } else {
                None
            };
            if worker.entry(shared, name, ent.d_type, st.as_ref()) {
                self.children.push(DirNode::child(dir, cname));
            }
        }
        dir.keep(fd, self.children.len(), &shared.budget);
        worker.leave(shared);
    }
}
