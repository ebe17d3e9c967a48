//! The FUSE request handlers: a read-only passthrough to the source
//! directory, with the delay, the fault table and the counters.

mod attr;
mod dir;
mod inodes;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use fuser::{
    Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, Request,
};

use crate::{Fault, Stats, STATS_FILE};
use attr::{attr, STATS_INO};
use dir::DirItem;
use inodes::Inodes;

/// `fuse_dirent` header size: ino, off, namelen, type (8 + 8 + 4 + 4).
const FUSE_DIRENT_HEADER: u64 = 24;

/// What an open file handle refers to.
enum Handle {
    /// A directory listing, read once at OPENDIR so that READDIR offsets
    /// (indexes into it) stay valid while the caller reads.
    Dir(Arc<Vec<DirItem>>),
    File(Arc<File>),
    /// The stats text as it was when the stats file was opened.
    Stats(Arc<[u8]>),
}

/// How the mount behaves beyond passing requests through.
pub(crate) struct Behaviour {
    pub(crate) delay: Duration,
    pub(crate) ttl: Duration,
    pub(crate) faults: HashMap<PathBuf, Fault>,
    /// Entries shown under another name: by source path, the name shown.
    pub(crate) shown: HashMap<PathBuf, OsString>,
    /// Entries whose GETATTR claims another entry's inode number: by
    /// source path, that entry's path and source `(st_dev, st_ino)`.
    pub(crate) inodes: HashMap<PathBuf, (PathBuf, (u64, u64))>,
}

/// The filesystem object handed to fuser.
pub(crate) struct TestFs {
    source: PathBuf,
    delay: Duration,
    ttl: Duration,
    faults: HashMap<PathBuf, Fault>,
    /// Entries shown under another name: by source path, the name shown.
    shown: HashMap<PathBuf, OsString>,
    /// See [`Behaviour::inodes`].
    claimed: HashMap<PathBuf, (PathBuf, (u64, u64))>,
    /// The same the other way: the path as shown, and the source path.
    real: HashMap<PathBuf, PathBuf>,
    stats: Arc<Mutex<Stats>>,
    inodes: Mutex<Inodes>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
}

/// Locks a mutex even if a handler thread panicked while holding it: the
/// tables stay consistent because every update is a single insert or
/// remove.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The errno of a failed source operation; EIO for errors that carry none.
fn errno(err: &io::Error) -> Errno {
    err.raw_os_error().map_or(Errno::EIO, Errno::from_i32)
}

impl TestFs {
    pub(crate) fn new(
        source: PathBuf,
        root: &Metadata,
        behaviour: Behaviour,
        stats: Arc<Mutex<Stats>>,
    ) -> TestFs {
        let Behaviour {
            delay,
            ttl,
            faults,
            shown,
            inodes: claimed,
        } = behaviour;
        let mut inodes = Inodes {
            nodes: Vec::new(),
            by_key: HashMap::new(),
        };
        let root_ino = inodes.intern((root.dev(), root.ino()), PathBuf::new(), INodeNo::ROOT);
        debug_assert_eq!(root_ino, INodeNo::ROOT);
        let real = shown
            .iter()
            .map(|(path, name)| (path.with_file_name(name), path.clone()))
            .collect();
        TestFs {
            source,
            delay,
            ttl,
            faults,
            shown,
            claimed,
            real,
            stats,
            inodes: Mutex::new(inodes),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        }
    }

    /// Counts one request and makes it wait the configured delay, as a
    /// round trip to a remote server would. The sleep runs on the handler
    /// thread, so requests overlap up to the number of threads.
    fn begin(&self, counter: fn(&mut Stats) -> &mut u64) {
        *counter(&mut lock(&self.stats)) += 1;
        if !self.delay.is_zero() {
            thread::sleep(self.delay);
            // Counted after the sleep: `delayed` is the number of waits
            // that were served in full.
            lock(&self.stats).delayed += 1;
        }
    }

    /// The error to inject for this request on `rel`, if any. Every fault
    /// but [`Fault::EndlessReaddir`] (which only changes what READDIR
    /// lists) fails READDIR; [`Fault::Eio`] and [`Fault::Vanish`] also fail
    /// LOOKUP, GETATTR and OPENDIR.
    fn injected(&self, rel: &Path, readdir: bool) -> Option<Errno> {
        let errno = match self.faults.get(rel)? {
            Fault::Eio => Errno::EIO,
            Fault::EioReaddir if readdir => Errno::EIO,
            Fault::EioReaddir | Fault::EndlessReaddir => return None,
            Fault::Vanish => Errno::ENOENT,
        };
        let mut stats = lock(&self.stats);
        if errno == Errno::ENOENT {
            stats.enoent_injected += 1;
        } else {
            stats.eio_injected += 1;
        }
        Some(errno)
    }

    fn rel(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        lock(&self.inodes)
            .get(ino)
            .map(|node| node.rel.clone())
            .ok_or(Errno::ESTALE)
    }

    fn full(&self, rel: &Path) -> PathBuf {
        self.source.join(rel)
    }

    fn add_handle(&self, handle: Handle) -> FileHandle {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, handle);
        FileHandle(fh)
    }

    fn lookup_entry(&self, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
        let rel = self.rel(parent)?.join(name);
        let rel = self.real.get(&rel).cloned().unwrap_or(rel);
        if let Some(errno) = self.injected(&rel, false) {
            return Err(errno);
        }
        let meta = fs::symlink_metadata(self.full(&rel)).map_err(|e| errno(&e))?;
        let ino = lock(&self.inodes).intern((meta.dev(), meta.ino()), rel, parent);
        Ok(attr(ino, &meta))
    }

    fn node_attr(&self, ino: INodeNo) -> Result<FileAttr, Errno> {
        let rel = self.rel(ino)?;
        if let Some(errno) = self.injected(&rel, false) {
            return Err(errno);
        }
        let meta = fs::symlink_metadata(self.full(&rel)).map_err(|e| errno(&e))?;
        let mut attr = attr(ino, &meta);
        if let Some((other, key)) = self.claimed.get(&rel) {
            // Only the number reported changes: the kernel still knows the
            // node by its own id, from LOOKUP.
            let mut inodes = lock(&self.inodes);
            attr.ino = match inodes.by_key.get(key) {
                Some(&other_ino) => other_ino,
                None => inodes.intern(*key, other.clone(), INodeNo::ROOT),
            };
        }
        Ok(attr)
    }
}

impl Filesystem for TestFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == STATS_FILE {
            reply.entry(&Duration::ZERO, &self.stats_attr(), Generation(0));
            return;
        }
        self.begin(|s| &mut s.lookup);
        match self.lookup_entry(parent, name) {
            Ok(attr) => reply.entry(&self.ttl, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino == STATS_INO {
            reply.attr(&Duration::ZERO, &self.stats_attr());
            return;
        }
        self.begin(|s| &mut s.getattr);
        match self.node_attr(ino) {
            Ok(attr) => reply.attr(&self.ttl, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        self.begin(|s| &mut s.readlink);
        let target = self
            .rel(ino)
            .and_then(|rel| fs::read_link(self.full(&rel)).map_err(|e| errno(&e)));
        match target {
            Ok(target) => reply.data(target.as_os_str().as_encoded_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == STATS_INO {
            let text = lock(&self.stats).to_string();
            let fh = self.add_handle(Handle::Stats(text.into_bytes().into()));
            // Direct I/O: every read comes here, none is served from a
            // page cache filled by an earlier open.
            reply.opened(fh, FopenFlags::FOPEN_DIRECT_IO);
            return;
        }
        self.begin(|s| &mut s.open);
        // The mount is read-only, so the kernel refuses write opens itself.
        let file = self
            .rel(ino)
            .and_then(|rel| File::open(self.full(&rel)).map_err(|e| errno(&e)));
        match file {
            Ok(file) => reply.opened(
                self.add_handle(Handle::File(Arc::new(file))),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let handle = match lock(&self.handles).get(&fh.0) {
            Some(Handle::File(file)) => Ok(Handle::File(file.clone())),
            Some(Handle::Stats(text)) => Ok(Handle::Stats(text.clone())),
            Some(Handle::Dir(_)) => Err(Errno::EISDIR),
            None => Err(Errno::EBADF),
        };
        if let Ok(Handle::Stats(text)) = &handle {
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(text.len());
            let end = start.saturating_add(size as usize).min(text.len());
            reply.data(&text[start..end]);
            return;
        }
        self.begin(|s| &mut s.read);
        match handle {
            Ok(Handle::File(file)) => {
                let mut buf = vec![0u8; size as usize];
                match file.read_at(&mut buf, offset) {
                    Ok(n) => reply.data(&buf[..n]),
                    Err(e) => reply.error(errno(&e)),
                }
            }
            Ok(_) => reply.error(Errno::EBADF),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if ino != STATS_INO {
            self.begin(|s| &mut s.release);
        }
        lock(&self.handles).remove(&fh.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.begin(|s| &mut s.opendir);
        match self.snapshot(ino) {
            // No FOPEN_CACHE_DIR: every getdents64 reaches READDIR, which
            // is what the counter is for.
            Ok(items) => reply.opened(
                self.add_handle(Handle::Dir(Arc::new(items))),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        self.begin(|s| &mut s.readdir);
        let rel = match self.rel(ino) {
            Ok(rel) => rel,
            Err(e) => return reply.error(e),
        };
        if let Some(errno) = self.injected(&rel, true) {
            return reply.error(errno);
        }
        let items = match lock(&self.handles).get(&fh.0) {
            Some(Handle::Dir(items)) => items.clone(),
            Some(_) => return reply.error(Errno::ENOTDIR),
            None => return reply.error(Errno::EBADF),
        };
        // The offset handed to the kernel with an entry is the index of
        // the entry after it, so the next READDIR resumes there. An endless
        // directory's last entry leads back to its first (after `.` and
        // `..`): the reply fills up, and no read ever comes to the end.
        let endless = self.faults.get(&rel) == Some(&Fault::EndlessReaddir) && items.len() > 2;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let order: Box<dyn Iterator<Item = usize>> = if endless && start < items.len() {
            Box::new((start..items.len()).chain((2..items.len()).cycle()))
        } else {
            Box::new(start..items.len())
        };
        let (mut bytes, mut entries) = (0u64, 0u64);
        for index in order {
            let item = &items[index];
            let next = if endless && index + 1 == items.len() {
                2
            } else {
                index as u64 + 1
            };
            if reply.add(item.ino, next, item.kind, &item.name) {
                break;
            }
            let record = FUSE_DIRENT_HEADER + item.name.len() as u64;
            bytes += record.next_multiple_of(8);
            entries += 1;
        }
        {
            let mut stats = lock(&self.stats);
            stats.readdir_bytes += bytes;
            stats.readdir_entries += entries;
            stats.readdir_max_reply = stats.readdir_max_reply.max(bytes);
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.begin(|s| &mut s.releasedir);
        lock(&self.handles).remove(&fh.0);
        reply.ok();
    }
}
