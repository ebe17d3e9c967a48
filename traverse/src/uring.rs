//! The `uring` engine: one thread, one io_uring, many operations in flight.
//!
//! Directories are read with `tokio_uring_getdents::fs::Dir` (the kernel's
//! GETDENTS where it has it, `getdents64` on a thread otherwise) and
//! entries are stat'ed with `IORING_OP_STATX` relative to the directory's
//! descriptor. Up to `jobs` directories are read at once, and at most
//! [`STATX_IN_FLIGHT`] stats are in flight in all. io_uring runs every
//! STATX (and GETDENTS) in an io-wq worker thread, and the kernel starts a
//! worker per blocked request; bounding what is in flight bounds those
//! workers, and bounding open directories keeps descriptors in `ulimit -n`.
//!
//! The shape follows the other engines: a directory waiting to be read
//! holds its parent's `Dir` while the descriptor budget allows, or is
//! reopened by `open_at` from the nearest ancestor that kept one.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, OsStr};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::rc::Rc;
use std::sync::{mpsc, Arc};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio_uring_getdents::fs::{Dir, DirBuilder, Metadata};
use tokio_uring_getdents::PathError;

use crate::engine::{Event, Forward, Shared, Worker};
use crate::node::{DirId, DirNode, Ent};
use crate::sys::{Stat, STATX_MASK};
use crate::totals::Accumulator;
use crate::{Error, Op, VisitorBuilder};

/// Directories read at once by default.
pub(crate) const DEFAULT_IN_FLIGHT: usize = 8;

/// Stats in flight in all directories together.
const STATX_IN_FLIGHT: usize = 128;

/// Bytes per directory read (each directory being read holds one buffer).
const BUF_LEN: usize = 256 * 1024;

/// Submission queue entries of the ring.
const RING_ENTRIES: u32 = 256;

/// Whether io_uring can be set up at all (not disabled by the
/// `kernel.io_uring_disabled` sysctl or a seccomp filter); the reason when
/// not.
pub(crate) fn available() -> Result<(), String> {
    match io_uring_getdents::io_uring::IoUring::new(2) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("io_uring_setup failed: {e}")),
    }
}

/// A directory of the walk, as [`DirNode`] is for the other engines but
/// holding a [`Dir`] and living on one thread.
struct UNode {
    /// Its name and path (for messages and listings).
    path: Arc<DirNode>,
    parent: Option<Rc<UNode>>,
    name: Box<[u8]>,
    dir: RefCell<Option<Rc<Dir>>>,
    pending: Cell<usize>,
}

/// State shared by the directory futures.
struct Ctx<'a> {
    shared: &'a Shared,
    builder: DirBuilder,
    /// Descriptors left for parents with children still to open.
    fd_budget: Cell<isize>,
    /// Stats that may still be submitted.
    statx_free: Cell<usize>,
    tx: mpsc::Sender<Event>,
}

/// The errno of an error from the Dir crate, without the path it already
/// names (ours adds its own).
fn plain(err: io::Error) -> io::Error {
    let code = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<PathError>())
        .and_then(PathError::raw_os_error);
    match code {
        Some(code) => io::Error::from_raw_os_error(code),
        None => err,
    }
}

impl UNode {
    fn name(&self) -> &OsStr {
        OsStr::from_bytes(&self.name)
    }

    /// Opens this directory relative to its parent and tells the parent,
    /// which drops its `Dir` after its last child.
    async fn open(&self, ctx: &Ctx<'_>) -> io::Result<Dir> {
        let Some(parent) = &self.parent else {
            return ctx.builder.open(self.name()).await.map_err(plain);
        };
        let result = match parent.descriptor(ctx).await {
            Ok(pdir) => ctx.builder.open_at(&pdir, self.name()).await.map_err(plain),
            Err(e) => Err(e),
        };
        parent.pending.set(parent.pending.get() - 1);
        if parent.pending.get() == 0 && parent.dir.borrow_mut().take().is_some() {
            ctx.fd_budget.set(ctx.fd_budget.get() + 1);
        }
        result
    }

    /// The kept `Dir`, or one opened down from the nearest ancestor that
    /// kept one (the root by its path).
    async fn descriptor(&self, ctx: &Ctx<'_>) -> io::Result<Rc<Dir>> {
        if let Some(dir) = self.dir.borrow().clone() {
            return Ok(dir);
        }
        let mut chain = vec![self];
        let mut base = None;
        let mut cur = self;
        while let Some(parent) = &cur.parent {
            if let Some(dir) = parent.dir.borrow().clone() {
                base = Some(dir);
                break;
            }
            chain.push(parent);
            cur = parent;
        }
        let mut dir = base;
        for node in chain.iter().rev() {
            let next = match &dir {
                Some(parent) => ctx.builder.open_at(parent, node.name()).await,
                None => ctx.builder.open(node.name()).await,
            };
            dir = Some(Rc::new(next.map_err(plain)?));
        }
        Ok(dir.expect("the chain holds at least this node"))
    }

    /// Keeps `dir` for `children` subdirectories if the budget allows.
    fn keep(&self, dir: Dir, children: usize, ctx: &Ctx<'_>) {
        self.pending.set(children);
        if children > 0 && ctx.fd_budget.get() > 0 {
            ctx.fd_budget.set(ctx.fd_budget.get() - 1);
            *self.dir.borrow_mut() = Some(Rc::new(dir));
        }
    }
}

fn stat_of(meta: &Metadata) -> Stat {
    Stat {
        mode: meta.mode(),
        nlink: u64::from(meta.nlink()),
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        blocks: meta.blocks(),
        mnt_id: None,
        mount_root: None,
    }
}

/// Walks below `root` (already counted) on a tokio-uring runtime.
pub(crate) fn walk(
    shared: &Arc<Shared>,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    let mut total = Accumulator::new(shared.config.count_links);
    let mut visitor = visitors.build();
    let mut builder = tokio_uring::builder();
    builder.entries(RING_ENTRIES);
    let runtime = match tokio_uring::Runtime::new(&builder) {
        Ok(rt) => rt,
        Err(cause) => {
            visitor.error(Error::new(root.path(), Op::Read, cause));
            total.totals.errors += 1;
            return total;
        }
    };
    let (tx, rx) = mpsc::channel();
    let ctx = Ctx {
        shared,
        builder: DirBuilder::new().buffer_size(BUF_LEN),
        // The runtime's ring is one more descriptor, and the blocking
        // pool of the fallback backend may hold a few; the shared budget
        // reserves room for both.
        fd_budget: Cell::new(shared.budget.available() as isize),
        statx_free: Cell::new(STATX_IN_FLIGHT),
        tx,
    };
    let root_name = root.path().into_os_string().into_vec().into_boxed_slice();
    let root = Rc::new(UNode {
        path: root,
        parent: None,
        name: root_name,
        dir: RefCell::new(None),
        pending: Cell::new(0),
    });
    runtime.block_on(async {
        let mut reading = FuturesUnordered::new();
        let mut stack = vec![root];
        loop {
            while reading.len() < shared.config.jobs && !shared.interrupted() {
                let Some(node) = stack.pop() else { break };
                reading.push(read_dir(&ctx, node));
            }
            let Some((acc, children)) = reading.next().await else {
                break;
            };
            total.merge(acc);
            stack.extend(children);
            for event in rx.try_iter() {
                event.deliver(visitor.as_mut());
            }
        }
    });
    total
}

/// Reads one directory and stats its entries, many at once; returns the
/// totals and the subdirectories.
async fn read_dir(ctx: &Ctx<'_>, node: Rc<UNode>) -> (Accumulator, Vec<Rc<UNode>>) {
    let shared = ctx.shared;
    let mut worker = Worker::new(shared, Box::new(Forward(ctx.tx.clone())));
    let mut children = Vec::new();
    worker.enter(&node.path);
    let mut dir = match node.open(ctx).await {
        Ok(dir) => dir,
        Err(cause) => {
            worker.dir_error(Op::Open, cause);
            worker.leave(shared);
            return (worker.into_accumulator(), children);
        }
    };
    // Names are copied into one buffer (with a NUL after each) rather than
    // kept as `DirEntry`s, which would pin every read buffer of a huge
    // directory until its last stat.
    let mut names: Vec<u8> = Vec::new();
    let mut ents: Vec<Ent> = Vec::new();
    while let Some(entry) = dir.next().await {
        match entry {
            Ok(entry) => {
                ents.push(Ent::push(
                    &mut names,
                    entry.ino(),
                    entry.file_name().as_bytes(),
                    entry.file_type().d_type(),
                ));
            }
            Err(cause) => {
                worker.dir_error(Op::Read, plain(cause));
                break;
            }
        }
        if shared.interrupted() {
            break;
        }
    }
    if shared.inode_order(ents.len()) {
        ents.sort_unstable_by_key(|e| e.ino);
    }
    let cname = |ent: &Ent| ent.name(&names);
    let mut stats = FuturesUnordered::new();
    let mut next = ents.iter();
    loop {
        // Submit stats while the global bound allows; entries that need
        // none are counted right away.
        while !shared.interrupted() {
            if ctx.statx_free.get() == 0 && !stats.is_empty() {
                break;
            }
            let Some(ent) = next.next() else { break };
            let name = cname(ent);
            if !shared.needs_stat(ent.d_type) {
                if worker.entry(shared, name.to_bytes(), ent.d_type, None) {
                    children.push(child(&node, name, None));
                }
                continue;
            }
            ctx.statx_free.set(ctx.statx_free.get().saturating_sub(1));
            let pending = dir.statx(OsStr::from_bytes(name.to_bytes()), STATX_MASK);
            stats.push(async move { (name, ent.d_type, pending.await) });
        }
        let Some((name, d_type, result)) = stats.next().await else {
            break;
        };
        ctx.statx_free.set(ctx.statx_free.get() + 1);
        match result {
            Ok(meta) => {
                let st = stat_of(&meta);
                if worker.entry(shared, name.to_bytes(), d_type, Some(&st)) {
                    children.push(child(&node, name, Some(st.id())));
                }
            }
            Err(cause) => worker.entry_error(name.to_bytes(), Op::Stat, plain(cause)),
        }
    }
    drop(stats);
    node.keep(dir, children.len(), ctx);
    worker.leave(shared);
    (worker.into_accumulator(), children)
}

/// A subdirectory; `id` from its stat, for loop detection below it.
fn child(parent: &Rc<UNode>, name: &CStr, id: Option<DirId>) -> Rc<UNode> {
    Rc::new(UNode {
        path: DirNode::child_with_id(&parent.path, name, id),
        parent: Some(Rc::clone(parent)),
        name: name.to_bytes().into(),
        dir: RefCell::new(None),
        pending: Cell::new(0),
    })
}
