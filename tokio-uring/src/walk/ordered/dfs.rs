//! The walker of the walk in order: depth first from a stack of frames,
//! each a directory read whole (and sorted, and its ignore rules applied)
//! whose entries are handed out one by one, a subdirectory entered as soon
//! as its entry comes up, as walkdir does.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::mem;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;
use tokio::sync::mpsc;

use super::{sys, Item, Settings, Shared, BATCH};
use crate::error::PathError;
use crate::fs::{FileType, Metadata, STATX_TYPE};
use crate::walk::entry::{DirName, Name, WalkEntry};
use crate::walk::Visit;
use walk_ignore_rules::{Names, Rules, Scope};

/// Each read's buffer.
const BUFFER: usize = 64 * 1024;
/// A batch waits at most this long once a directory is done, so a slow
/// tree still shows its entries as they come.
const LATENCY: Duration = Duration::from_millis(1);

/// A directory whose entries are being handed out.
struct Frame {
    dir: Arc<DirName>,
    /// Closed when too many are open; opened again from an ancestor.
    fd: Option<OwnedFd>,
    /// Entered through a symbolic link: opened again the same way.
    via_link: bool,
    id: (u64, u64),
    entries: std::vec::IntoIter<WalkEntry>,
    /// The ignore rules that apply in it.
    scope: Scope,
    /// With `contents_first`, the directory's own entry, for after them.
    own: Option<WalkEntry>,
}

pub(super) struct Dfs {
    s: Settings,
    shared: Arc<Shared>,
    tx: mpsc::Sender<Vec<Item>>,
    batch: Vec<Item>,
    sent: Instant,
    rules: Option<Rules>,
    stack: Vec<Frame>,
    /// Frames holding a descriptor.
    open: usize,
    buf: Vec<u8>,
    skips_seen: usize,
    gone: bool,
}

impl Dfs {
    pub(super) fn new(s: Settings, shared: Arc<Shared>, tx: mpsc::Sender<Vec<Item>>) -> Dfs {
        let rules = s.ignore.map(|r| Rules::new(r, &s.root));
        Dfs {
            s,
            shared,
            tx,
            batch: Vec::with_capacity(BATCH),
            sent: Instant::now(),
            rules,
            stack: Vec::new(),
            open: 0,
            buf: vec![0; BUFFER],
            skips_seen: 0,
            gone: false,
        }
    }

    pub(super) fn run(mut self) {
        self.root();
        while !self.stopped() {
            self.check_skips();
            let Some(top) = self.stack.last_mut() else {
                break;
            };
            match top.entries.next() {
                Some(entry) => self.visit(entry),
                None => {
                    let frame = self.stack.pop().expect("a top frame");
                    self.open -= usize::from(frame.fd.is_some());
                    if let Some(own) = frame.own {
                        self.emit(Ok(own));
                    }
                }
            }
        }
        self.flush();
    }

    fn stopped(&self) -> bool {
        self.gone || self.shared.stop.load(Ordering::Relaxed)
    }

    fn emit(&mut self, item: Item) {
        self.batch.push(item);
        if self.batch.len() >= BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.batch.is_empty() || self.gone {
            return;
        }
        let batch = mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.gone = self.tx.blocking_send(batch).is_err();
        self.sent = Instant::now();
    }

    /// The root: a directory is entered; a file, or a link not followed,
    /// is the walk's only entry.
    fn root(&mut self) {
        let path = self.s.root.clone();
        let fail = |op: &'static str, e: io::Error| -> Item {
            Err(PathError::wrap_at(op, path.clone(), e, 0))
        };
        let cpath = match CString::new(path.as_os_str().as_bytes()) {
            Ok(c) => c,
            Err(e) => return self.emit(fail("open directory", e.into())),
        };
        let mask = self.s.mask.unwrap_or(0) | STATX_TYPE;
        let lstat = match sys::statx(None, &cpath, false, mask) {
            Ok(stx) => Metadata::from_statx(&stx),
            Err(e) => return self.emit(fail("stat", e)),
        };
        let is_link = lstat.file_type() == FileType::Symlink;
        let follow = is_link && (self.s.follow_root_links || self.s.follow_links);
        let opened = if is_link && !follow {
            Err(io::Error::from_raw_os_error(libc::ENOTDIR))
        } else {
            sys::open_dir(None, &cpath, true)
        };
        let target = |dfs: &Dfs| {
            if is_link && dfs.s.follow_links {
                sys::statx(None, &cpath, true, mask).map(|stx| Metadata::from_statx(&stx))
            } else {
                Ok(lstat)
            }
        };
        let (fd, meta) = match opened {
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => match target(self) {
                Ok(meta) => (None, meta),
                Err(e) => return self.emit(fail("stat", e)),
            },
            Err(e) => return self.emit(fail("open directory", e)),
            Ok(fd) => match target(self) {
                Ok(meta) => (Some(fd), meta),
                Err(e) => return self.emit(fail("stat", e)),
            },
        };
        let mut entry = WalkEntry::new(
            None,
            Name::new(path.as_os_str()),
            0,
            meta.file_type(),
            meta.ino(),
            self.s.mask.map(|_| meta),
        );
        entry.link = is_link;
        let visit = self.filter(&entry);
        if visit == Visit::Skip {
            return;
        }
        let Some(fd) = fd.filter(|_| visit == Visit::Continue && self.s.max_depth > 0) else {
            return self.emit(Ok(entry));
        };
        let id = match sys::id(fd.as_fd()) {
            Ok(id) => id,
            Err(e) => return self.emit(fail("stat", e)),
        };
        let dir = DirName::root(&path);
        let scope = self
            .rules
            .as_ref()
            .map(Rules::root_scope)
            .unwrap_or_default();
        self.enter(entry, (dir, fd, id, follow), scope);
    }

    fn filter(&self, entry: &WalkEntry) -> Visit {
        self.s.filter.as_ref().map_or(Visit::Continue, |f| f(entry))
    }

    /// An entry of the directory on top: handed out, and entered if it is
    /// a directory to walk into.
    fn visit(&mut self, entry: WalkEntry) {
        let visit = self.filter(&entry);
        let depth = entry.depth();
        let walk_in = visit == Visit::Continue
            && entry.file_type() == FileType::Directory
            && depth < self.s.max_depth;
        if visit == Visit::Skip {
            return;
        }
        if !walk_in {
            return self.emit(Ok(entry));
        }
        let opened = self.open_child(entry.file_name(), entry.link);
        let opened = opened.and_then(|fd| sys::id(fd.as_fd()).map(|id| (fd, id)));
        let (fd, id) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                let err = PathError::wrap_at("open directory", entry.path(), e, depth);
                self.emit(Ok(entry));
                return self.emit(Err(err));
            }
        };
        if let Some(ancestor) = self.stack.iter().find(|f| f.id == id) {
            let ancestor = ancestor.dir.join(None);
            let err = PathError::walk_loop(entry.path().to_path_buf(), ancestor, depth);
            return self.emit(Err(err));
        }
        let top = self.stack.last().expect("an entry has its directory");
        let dir = DirName::child(&top.dir, entry.file_name());
        let above = top.scope.clone();
        let link = entry.link;
        self.enter(entry, (dir, fd, id, link), above);
    }

    /// Opens `name` in the directory on top, opening that one again first
    /// if its descriptor was closed.
    fn open_child(&mut self, name: &OsStr, follow: bool) -> io::Result<OwnedFd> {
        let cname = CString::new(name.as_bytes())?;
        let top = self.stack.len() - 1;
        if self.stack[top].fd.is_none() {
            let from = (0..top)
                .rev()
                .find(|&i| self.stack[i].fd.is_some())
                .expect("the root stays open");
            let mut fd = None::<OwnedFd>;
            for i in from + 1..=top {
                let parent = match &fd {
                    Some(fd) => fd.as_fd(),
                    None => self.stack[from].fd.as_ref().expect("found open").as_fd(),
                };
                let name = CString::new(self.stack[i].dir.name().as_bytes())?;
                fd = Some(sys::open_dir(Some(parent), &name, self.stack[i].via_link)?);
            }
            self.make_room();
            self.stack[top].fd = fd;
            self.open += 1;
        }
        let parent = self.stack[top].fd.as_ref().expect("opened above");
        sys::open_dir(Some(parent.as_fd()), &cname, follow)
    }

    /// Closes the descriptor of the highest frame below the root that has
    /// one, if the budget is spent.
    fn make_room(&mut self) {
        if self.open < self.s.max_open {
            return;
        }
        let top = self.stack.len().saturating_sub(1);
        if let Some(frame) = self.stack[1.min(top)..top]
            .iter_mut()
            .find(|f| f.fd.is_some())
        {
            frame.fd = None;
            self.open -= 1;
        }
    }

    /// Reads the directory just opened and puts it on the stack; hands out
    /// its own entry first (or keeps it for last, with `contents_first`).
    fn enter(
        &mut self,
        entry: WalkEntry,
        (dir, fd, id, via_link): (Arc<DirName>, OwnedFd, (u64, u64), bool),
        above: Scope,
    ) {
        let depth = entry.depth();
        let mut names = Names::default();
        let mut errors = Vec::new();
        let mut entries = self.read(fd.as_fd(), &dir, depth, &mut names, &mut errors);
        let scope = match &self.rules {
            Some(rules) => {
                let scope = rules.enter(&above, &fd, &dir.join(None), &names);
                entries.retain(|e| {
                    let is_dir = e.file_type() == FileType::Directory;
                    let name = e.file_name().as_bytes();
                    !rules.ignored(&scope, e.path(), name, is_dir)
                });
                scope
            }
            None => above,
        };
        if let Some(sort) = &self.s.sort {
            entries.sort_by(|a, b| sort(a, b));
        }
        let own = if self.s.contents_first {
            Some(entry)
        } else {
            self.emit(Ok(entry));
            None
        };
        for err in errors {
            self.emit(Err(err));
        }
        self.make_room();
        self.open += 1;
        self.stack.push(Frame {
            dir,
            fd: Some(fd),
            via_link,
            id,
            entries: entries.into_iter(),
            scope,
            own,
        });
        if self.sent.elapsed() >= LATENCY {
            self.flush();
        }
    }

    /// `dir`'s entries (at `depth + 1`), its errors apart.
    fn read(
        &mut self,
        fd: BorrowedFd<'_>,
        dir: &Arc<DirName>,
        depth: usize,
        held: &mut Names,
        errors: &mut Vec<io::Error>,
    ) -> Vec<WalkEntry> {
        let mut entries = Vec::new();
        loop {
            let n = match getdents64(fd, &mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    errors.push(PathError::wrap_at(
                        "read directory",
                        dir.join(None),
                        e,
                        depth,
                    ));
                    break;
                }
            };
            let names: Arc<[u8]> = Arc::from(&self.buf[..n]);
            for record in DirentIter::new(&names) {
                let record = match record {
                    Ok(record) => record,
                    Err(e) => {
                        let path = dir.join(None);
                        errors.push(PathError::wrap_at("read directory", path, e.into(), depth));
                        return entries;
                    }
                };
                if record.is_dot_or_dotdot() {
                    continue;
                }
                let name = record.name();
                held.note(name.to_bytes());
                let start = name.as_ptr() as usize - names.as_ptr() as usize;
                let shared = Name::within(&names, start, name.count_bytes());
                let at = (dir, depth + 1);
                match self.entry(fd, at, (name, shared), record.file_type(), record.ino()) {
                    Ok(entry) => entries.push(entry),
                    Err(e) => errors.push(e),
                }
            }
        }
        entries
    }

    /// One entry, stat'ed where the type is unknown, metadata is asked
    /// for, or a link is to be followed.
    fn entry(
        &self,
        fd: BorrowedFd<'_>,
        (dir, depth): (&Arc<DirName>, usize),
        (name, shared): (&CStr, Name),
        mut file_type: FileType,
        ino: u64,
    ) -> io::Result<WalkEntry> {
        let link = self.s.follow_links && file_type == FileType::Symlink;
        let mut metadata = None;
        if link || self.s.mask.is_some() || file_type == FileType::Unknown {
            let mask = self.s.mask.unwrap_or(0) | STATX_TYPE;
            let stx = sys::statx(Some(fd), name, link, mask).map_err(|e| {
                let path = dir.join(Some(shared.as_os_str()));
                PathError::wrap_at(if link { "follow" } else { "stat" }, path, e, depth)
            })?;
            let meta = Metadata::from_statx(&stx);
            file_type = meta.file_type();
            metadata = self.s.mask.map(|_| meta);
        }
        let mut entry = WalkEntry::new(
            Some(Arc::clone(dir)),
            shared,
            depth,
            file_type,
            ino,
            metadata,
        );
        entry.link = link;
        Ok(entry)
    }

    /// Drops the frames `skip_current_dir` left out since the last look.
    fn check_skips(&mut self) {
        let skips = self.shared.skips.load(Ordering::Acquire);
        if skips == self.skips_seen {
            return;
        }
        let skipped = self
            .shared
            .skipped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        self.skips_seen = skipped.len();
        let epoch = self.skips_seen;
        if let Some(at) = self
            .stack
            .iter()
            .position(|f| f.dir.is_left_out(&skipped, epoch))
        {
            for frame in self.stack.drain(at..) {
                self.open -= usize::from(frame.fd.is_some());
            }
        }
    }
}
