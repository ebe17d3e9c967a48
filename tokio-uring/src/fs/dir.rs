//! The directory stream.

use std::future::{poll_fn, Future};
use std::io;
use std::mem;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures_core::Stream;
use io_uring_getdents::dirent::{Dirent, DirentIter, ParseError};
use io_uring_getdents::plus::DirentPlusIter;
use tokio::task::JoinHandle;

use super::builder::{Config, EntryMetadata};
use super::fallback::{fill, with_metadata, Fill};
use super::{
    Backend, ChildName, DirBuilder, DirEntry, DirHandle, FileId, OpenDirFuture, StatxFuture,
};
use crate::error::PathError;
use crate::fd::SharedFd;
use crate::op::close::close;
use crate::op::getdents::{getdents, InFlightRead};
use crate::pool;

/// An open directory, read as a stream of [`DirEntry`] with io_uring.
///
/// `.` and `..` are skipped. Each `Dir` has at most one read in flight and
/// reuses its buffer; while you consume one batch of entries, the next one
/// is already being read.
///
/// # Cancellation
///
/// Dropping a [`next`](Dir::next) future loses nothing: the read it
/// started belongs to the `Dir`, and the next call picks it up. Dropping
/// the `Dir` with a read in flight is safe: the buffer and a reference to
/// the descriptor live in the operation's stable data (or the blocking
/// task's closure), freed only after the kernel is done; the descriptor is
/// then closed. See the crate documentation and DESIGN.md.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::Dir;
///
/// tokio_uring::start(async {
///     let mut dir = Dir::open(".").await?;
///     while let Some(entry) = dir.next().await {
///         let entry = entry?;
///         println!("entry: {}", entry.file_name().display());
///     }
///     dir.close().await?;
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
pub struct Dir {
    /// The descriptor, path and settings, shared with handles.
    at: DirHandle,
    /// Records of the last read, copied out of the kernel buffer so that
    /// the buffer can be reused at once; entries share this copy.
    batch: Option<Arc<[u8]>>,
    /// Parse position in `batch`.
    pos: usize,
    /// The read buffer while no read is in flight; allocated on first use.
    buf: Option<Box<[u8]>>,
    read: Read,
    /// Where the next read starts: 0, a seek target, or the `d_off` of the
    /// last record read.
    next_offset: u64,
    /// Fallback only: move the descriptor's position to `next_offset`
    /// before the next read (after a seek).
    reposition: bool,
    /// A seek happened while a read was in flight: ignore its result.
    discard: bool,
}

/// The reader's state.
enum Read {
    /// Nothing in flight; the next read may start.
    Idle,
    /// A GETDENTS in flight.
    Ring(InFlightRead),
    /// A fallback fill on the blocking pool, or the entry metadata of a
    /// GETDENTS without readdirplus.
    Thread(JoinHandle<Fill>),
    /// The last read returned 0.
    End,
    /// An error to return once; `None` afterwards.
    Failed(Option<io::Error>),
}

impl Dir {
    /// Opens `path` with default settings; see [`DirBuilder::open`].
    ///
    /// # Errors
    ///
    /// See [`DirBuilder::open`]: `NotFound`, `NotADirectory`,
    /// `PermissionDenied`, too many open files, each naming the path.
    ///
    /// # Example
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let dir = tokio_uring_getdents::fs::Dir::open("/tmp").await?;
    ///     dir.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> OpenDirFuture {
        DirBuilder::new().open(path)
    }

    /// Opens the subdirectory `name` of `parent` relative to its
    /// descriptor, with the parent's settings; see
    /// [`DirBuilder::open_at`]. The returned future does not borrow
    /// `parent`, which can go on being read meanwhile.
    ///
    /// # Errors
    ///
    /// See [`DirBuilder::open_at`]; a symbolic link gives `ENOTDIR`.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, FileType};
    ///
    /// tokio_uring::start(async {
    ///     let mut usr = Dir::open("/usr").await?;
    ///     while let Some(entry) = usr.next().await {
    ///         let entry = entry?;
    ///         if entry.file_type() == FileType::Directory {
    ///             let child = Dir::open_at(&usr, &entry).await?;
    ///             println!("{}", child.path().display());
    ///         }
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn open_at<'a>(parent: &Dir, name: impl Into<ChildName<'a>>) -> OpenDirFuture {
        parent.at.open_at(name)
    }

    /// A builder for other buffer sizes or backends.
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{BackendChoice, Dir};
    /// tokio_uring::start(async {
    ///     let dir = Dir::builder().buffer_size(1 << 20).backend(BackendChoice::Fallback).open(".").await?;
    ///     dir.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn builder() -> DirBuilder {
        DirBuilder::new()
    }

    pub(super) fn from_parts(fd: OwnedFd, path: Arc<Path>, config: Config) -> Dir {
        Dir {
            at: DirHandle::new(SharedFd::new(fd), path, config),
            batch: None,
            pos: 0,
            buf: None,
            read: Read::Idle,
            next_offset: 0,
            reposition: false,
            discard: false,
        }
    }

    pub(super) fn handle_ref(&self) -> &DirHandle {
        &self.at
    }

    /// A handle for `statx` and `open_at` relative to this directory that
    /// does not borrow it, for use while the `Dir` is being read (by a
    /// stream combinator, say); see [`DirHandle`]. It keeps the descriptor
    /// open as long as it lives.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, FileType};
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open(env!("CARGO_MANIFEST_DIR")).await?;
    ///     let at = dir.handle();
    ///     let mut children = Vec::new();
    ///     while let Some(entry) = dir.next().await {
    ///         let entry = entry?;
    ///         if entry.file_type() == FileType::Directory {
    ///             children.push(at.open_at(&entry).await?);
    ///         }
    ///     }
    ///     assert!(children.iter().any(|c| c.path().ends_with("src")));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn handle(&self) -> DirHandle {
        self.at.clone()
    }

    /// The path this `Dir` was opened with (for `open_at`, the parent's
    /// path joined with the name). Used in error messages.
    pub fn path(&self) -> &Path {
        self.at.path()
    }

    /// The device and inode of the open directory: one `statx(2)` on the
    /// descriptor, made directly rather than through io_uring (it needs
    /// no I/O: `AT_STATX_DONT_SYNC` lets network and FUSE file systems
    /// answer from the inode they have), so a caller can check cheaply
    /// that a directory opened again by path is the one it opened first.
    ///
    /// # Errors
    ///
    /// The errno of `statx`, naming the directory (rare: the descriptor is
    /// open).
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// tokio_uring::start(async {
    ///     let first = Dir::builder().nofollow(true).open("/").await?;
    ///     let id = first.file_id()?;
    ///     first.close().await?;
    ///     // Later, with the descriptor closed: open again and compare.
    ///     let again = Dir::builder().nofollow(true).open("/").await?;
    ///     if again.file_id()? != id {
    ///         return Err(std::io::Error::other("/ was replaced while we walked it"));
    ///     }
    ///     again.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn file_id(&self) -> io::Result<FileId> {
        self.at.file_id()
    }

    /// The backend reading this directory.
    pub fn backend(&self) -> Backend {
        self.at.backend()
    }

    /// The read buffer's size in bytes.
    pub fn buffer_size(&self) -> usize {
        self.at.config().buffer_size
    }

    /// True when the entries' metadata
    /// ([`DirBuilder::entry_metadata`]) comes with the reads, from
    /// GETDENTS in readdirplus mode; false when it comes from a `statx(2)`
    /// per entry, or was not asked for.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Backend, Dir, STATX_SIZE};
    ///
    /// tokio_uring::start(async {
    ///     let dir = Dir::builder().entry_metadata(STATX_SIZE).open(".").await?;
    ///     if dir.readdirplus() {
    ///         assert!(matches!(dir.backend(), Backend::Getdents { .. }));
    ///     }
    ///     assert!(!Dir::open(".").await?.readdirplus(), "not asked for");
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn readdirplus(&self) -> bool {
        matches!(self.at.config().metadata, EntryMetadata::Plus(_))
    }

    /// Whether batches hold readdirplus records (entry metadata asked
    /// for, however it is served).
    fn plus_records(&self) -> bool {
        self.at.config().metadata != EntryMetadata::None
    }

    /// The next entry; `None` at the end.
    ///
    /// # Errors
    ///
    /// A failed read gives one error naming the directory (for example
    /// `NotFound` after the directory was removed, or `InvalidData` for a
    /// corrupt record); every later call returns `None` until a
    /// [`seek`](Dir::seek). Never panics, however often it is called.
    ///
    /// # Example
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let mut dir = tokio_uring_getdents::fs::Dir::open(".").await?;
    ///     let mut count = 0;
    ///     while let Some(entry) = dir.next().await {
    ///         entry?;
    ///         count += 1;
    ///     }
    ///     println!("{count} entries");
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn next(&mut self) -> Option<io::Result<DirEntry>> {
        poll_fn(|cx| self.poll_entry(cx)).await
    }

    fn poll_entry(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<DirEntry>>> {
        loop {
            if let Some(item) = self.next_buffered() {
                return Poll::Ready(Some(item));
            }
            match &mut self.read {
                Read::Idle => self.start_read(),
                Read::Ring(op) => {
                    let (res, buf, end) = ready!(Pin::new(op).poll(cx));
                    self.read = Read::Idle;
                    match (res, self.at.config().metadata) {
                        (Ok(n), EntryMetadata::Statx(mask)) if n > 0 && !self.discard => {
                            // No readdirplus: stat the entries on the
                            // blocking pool, one job for the whole read.
                            let fd = self.at.shared_fd().clone();
                            self.read = Read::Thread(tokio::task::spawn_blocking(move || {
                                with_metadata(&fd, buf, n, end, mask)
                            }));
                        }
                        (res, _) => self.finish_read(res, Some(buf), None, end),
                    }
                }
                Read::Thread(task) => {
                    let joined = ready!(Pin::new(task).poll(cx));
                    self.read = Read::Idle;
                    match joined {
                        Ok(fill) => {
                            self.finish_read(fill.res, Some(fill.buf), fill.records, fill.end)
                        }
                        Err(e) => self.finish_read(Err(io::Error::other(e)), None, None, false),
                    }
                }
                Read::End => return Poll::Ready(None),
                Read::Failed(err) => return Poll::Ready(err.take().map(Err)),
            }
        }
    }

    /// The next entry of the current batch, skipping `.` and `..`.
    fn next_buffered(&mut self) -> Option<io::Result<DirEntry>> {
        let batch = self.batch.as_ref()?;
        let plus = self.plus_records();
        while self.pos < batch.len() {
            match first_record(&batch[self.pos..], plus) {
                Some(Ok((record, len))) => {
                    let start = self.pos;
                    self.pos += len;
                    if record.is_dot_or_dotdot() {
                        continue;
                    }
                    return Some(Ok(DirEntry::new(
                        Arc::clone(batch),
                        start,
                        record.name_bytes().len(),
                        record.d_type(),
                        record.ino(),
                        record.offset(),
                        plus.then(|| self.at.shared_path()),
                    )));
                }
                Some(Err(e)) => {
                    self.batch = None;
                    self.read = Read::Failed(None);
                    return Some(Err(self.read_error(e.into())));
                }
                None => break,
            }
        }
        // Done with this batch: release it, so entries the caller dropped
        // free it now.
        self.batch = None;
        None
    }

    fn start_read(&mut self) {
        let buf = self
            .buf
            .take()
            .unwrap_or_else(|| pool::take(self.at.config().buffer_size));
        let fd = self.at.shared_fd();
        let metadata = self.at.config().metadata;
        self.read = match self.at.backend() {
            Backend::Getdents { opcode } => {
                let plus = match metadata {
                    EntryMetadata::Plus(mask) => Some(mask),
                    EntryMetadata::None | EntryMetadata::Statx(_) => None,
                };
                Read::Ring(getdents(fd, buf, self.next_offset, opcode, plus))
            }
            Backend::Fallback => {
                let fd = fd.clone();
                let seek_to = mem::take(&mut self.reposition).then_some(self.next_offset);
                let mask = metadata.mask();
                Read::Thread(tokio::task::spawn_blocking(move || {
                    fill(fd, buf, seek_to, mask)
                }))
            }
        };
    }

    /// Takes in the result of a read of `res` bytes, in `buf` or, when
    /// the records were rewritten with their metadata, in `records`; `end`
    /// when the reader already saw the end of the directory after them.
    fn finish_read(
        &mut self,
        res: io::Result<usize>,
        buf: Option<Box<[u8]>>,
        records: Option<Vec<u8>>,
        end: bool,
    ) {
        self.buf = buf;
        if mem::take(&mut self.discard) {
            // A seek came while this read was in flight.
            return;
        }
        let filled = match res {
            Ok(0) => {
                self.read = Read::End;
                self.release_buffer();
                return;
            }
            Ok(n) => match &records {
                Some(records) => records.get(..n),
                None => self.buf.as_deref().and_then(|buf| buf.get(..n)),
            },
            Err(e) => {
                self.read = Read::Failed(Some(self.read_error(e)));
                return;
            }
        };
        let Some(filled) = filled else {
            let e = io::Error::new(
                io::ErrorKind::InvalidData,
                "the kernel reported more bytes than the buffer holds",
            );
            self.read = Read::Failed(Some(self.read_error(e)));
            return;
        };
        // Copying the records (one allocation and a memcpy per read) frees
        // the kernel buffer for the next read right away and keeps what
        // entries pin down to the bytes actually read.
        let batch: Arc<[u8]> = Arc::from(filled);
        self.pos = 0;
        // Chain by the last record's d_off, and read ahead while the caller
        // consumes this batch. A corrupt batch stops the chain; its error
        // comes out of `next_buffered` in order.
        let mut last = None;
        let mut intact = true;
        let mut pos = 0;
        while let Some(record) = first_record(&batch[pos..], self.plus_records()) {
            match record {
                Ok((record, len)) => {
                    last = Some(record.offset());
                    pos += len;
                }
                Err(_) => {
                    intact = false;
                    break;
                }
            }
        }
        self.batch = Some(batch);
        match last {
            Some(_) if intact && end => {
                self.read = Read::End;
                self.release_buffer();
            }
            Some(offset) if intact => {
                self.next_offset = offset;
                self.start_read();
            }
            _ => self.read = Read::Failed(None),
        }
    }

    /// Gives the read buffer back to the thread's stock once no more reads
    /// are expected (a seek takes one again).
    fn release_buffer(&mut self) {
        if let Some(buf) = self.buf.take() {
            pool::give(buf);
        }
    }

    fn read_error(&self, e: io::Error) -> io::Error {
        PathError::wrap("read directory", self.at.path(), e)
    }

    /// Moves the read position: the next entry returned is the one after
    /// the entry whose [`offset`](DirEntry::offset) is `offset`; 0 (or
    /// [`rewind`](Dir::rewind)) starts again from the beginning. Entries
    /// already buffered are dropped, a read in flight is ignored, and an
    /// earlier error or end is forgotten.
    ///
    /// Only 0 and offsets this directory returned are meaningful; others
    /// give whatever the file system makes of them, possibly an `EINVAL`
    /// error from the next read.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open(".").await?;
    ///     if let Some(first) = dir.next().await.transpose()? {
    ///         // Later, maybe in another Dir: continue after `first`.
    ///         let mut again = Dir::open(".").await?;
    ///         again.seek(first.offset());
    ///         let second = again.next().await.transpose()?;
    ///         println!("{first:?} then {second:?}");
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn seek(&mut self, offset: u64) {
        self.batch = None;
        self.pos = 0;
        self.next_offset = offset;
        self.reposition = true;
        match self.read {
            Read::Ring(_) | Read::Thread(_) => self.discard = true,
            Read::Idle | Read::End | Read::Failed(_) => self.read = Read::Idle,
        }
    }

    /// Starts again from the first entry: `seek(0)`.
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let mut dir = tokio_uring_getdents::fs::Dir::open(".").await?;
    ///     while dir.next().await.transpose()?.is_some() {}
    ///     dir.rewind();
    ///     assert!(dir.next().await.is_some());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn rewind(&mut self) {
        self.seek(0);
    }

    /// Metadata of the entry `name` of this directory through io_uring
    /// `STATX`, relative to the directory's descriptor and without
    /// following a symbolic link (`AT_SYMLINK_NOFOLLOW`). `mask` takes
    /// `libc::STATX_*` bits, e.g. `STATX_BASIC_STATS`. Passing a
    /// [`&DirEntry`](DirEntry) copies no name.
    ///
    /// The returned future does not borrow `self`: several can be in
    /// flight while the directory is being read.
    ///
    /// # Errors
    ///
    /// `NotFound` when the entry is gone, `PermissionDenied`, or another
    /// errno, naming the directory's path joined with `name`;
    /// `InvalidInput` when `name` is not one path component.
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open("/etc").await?;
    ///     let mut total = 0;
    ///     while let Some(entry) = dir.next().await {
    ///         let meta = dir.statx(&entry?, libc::STATX_SIZE).await?;
    ///         total += meta.size();
    ///     }
    ///     println!("{total} bytes");
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn statx<'a>(&self, name: impl Into<ChildName<'a>>, mask: u32) -> StatxFuture {
        self.at.statx(name, mask)
    }

    /// Metadata of the directory itself (`statx` with `AT_EMPTY_PATH` on
    /// its descriptor).
    ///
    /// # Errors
    ///
    /// The errno of `statx`, naming the directory (rare: the descriptor is
    /// open).
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let dir = tokio_uring_getdents::fs::Dir::open("/").await?;
    ///     let meta = dir.metadata(libc::STATX_BASIC_STATS).await?;
    ///     assert!(meta.is_dir());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn metadata(&self, mask: u32) -> StatxFuture {
        self.at.metadata(mask)
    }

    /// Closes the directory with io_uring `CLOSE`, after waiting for its
    /// read in flight, if any.
    ///
    /// If a dropped [`statx`](Dir::statx) or [`open_at`](Dir::open_at) on
    /// this directory is still in flight, or a [`DirHandle`] of it lives,
    /// that holds the descriptor; then this returns at once and the
    /// descriptor is closed when the last of them is gone.
    ///
    /// # Errors
    ///
    /// The errno of `close`, naming the directory.
    ///
    /// # Example
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let dir = tokio_uring_getdents::fs::Dir::open(".").await?;
    ///     dir.close().await
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn close(mut self) -> io::Result<()> {
        match mem::replace(&mut self.read, Read::End) {
            Read::Ring(op) => drop(op.await),
            Read::Thread(task) => drop(task.await),
            Read::Idle | Read::End | Read::Failed(_) => {}
        }
        let (fd, path) = (self.at.shared_fd().clone(), self.at.shared_path());
        drop(self);
        match fd.into_owned() {
            Some(fd) => {
                let mut op = close(fd, path);
                poll_fn(|cx| op.poll_op(cx)).await
            }
            None => Ok(()),
        }
    }
}

/// The first record of `bytes` and its length, in the layout of the
/// batch: readdirplus records when `plus`, plain ones otherwise.
fn first_record(bytes: &[u8], plus: bool) -> Option<Result<(Dirent<'_>, usize), ParseError>> {
    if plus {
        let mut records = DirentPlusIter::new(bytes);
        let record = records.next()?;
        Some(record.map(|r| (r.dirent(), records.position())))
    } else {
        let mut records = DirentIter::new(bytes);
        let record = records.next()?;
        Some(record.map(|r| (r, records.position())))
    }
}

impl Stream for Dir {
    type Item = io::Result<DirEntry>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_entry(cx)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // A read in flight keeps its buffer (stable data or closure); only
        // a buffer at rest goes back to the stock.
        self.release_buffer();
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.at.shared_fd().borrow()
    }
}

impl std::fmt::Debug for Dir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dir")
            .field("path", &self.at.path())
            .field("fd", &self.at.shared_fd().raw())
            .field("backend", &self.at.backend())
            .field("buffer_size", &self.buffer_size())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use io_uring_getdents::dirent::encode;

    use super::super::{BackendChoice, Metadata, MIN_BUFFER_SIZE};
    use super::*;

    /// Records as a FUSE file system may return them (names of 300 and
    /// 1 024 bytes among short ones), in a buffer of the smallest size a
    /// `Dir` uses: every name comes out whole, as `DirEntry`, its C
    /// string, and the name an `open_at`/`statx` of the entry passes.
    #[test]
    fn names_up_to_fuse_s_limit_fit_the_smallest_buffer_and_stay_whole() {
        let names: Vec<Vec<u8>> = vec![
            b".".to_vec(),
            vec![b'x'; 300],
            b"short".to_vec(),
            (0..1024).map(|i| b'a' + (i % 26) as u8).collect(),
        ];
        let mut config = DirBuilder::new()
            .buffer_size(0)
            .backend(BackendChoice::Fallback)
            .config(Path::new("/"))
            .unwrap();
        assert_eq!(config.buffer_size, MIN_BUFFER_SIZE);
        for name in &names[1..] {
            let mut record = Vec::new();
            encode(&mut record, 1, 1, libc::DT_REG, name);
            assert!(
                record.len() <= MIN_BUFFER_SIZE,
                "a {}-byte name needs a {}-byte record, more than the smallest buffer",
                name.len(),
                record.len()
            );
        }
        // One read per name, each the last (`end`), so that no real read
        // of `/` starts behind them.
        config.buffer_size = MIN_BUFFER_SIZE;
        let mut dir = Dir::from_parts(
            std::fs::File::open("/").unwrap().into(),
            Arc::from(Path::new("/")),
            config,
        );
        let mut seen = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut records = Vec::new();
            encode(
                &mut records,
                10 + i as u64,
                100 + i as u64,
                libc::DT_REG,
                name,
            );
            let mut buf = vec![0u8; MIN_BUFFER_SIZE].into_boxed_slice();
            buf[..records.len()].copy_from_slice(&records);
            dir.finish_read(Ok(records.len()), Some(buf), None, true);
            while let Some(entry) = dir.next_buffered() {
                seen.push(entry.unwrap());
            }
        }
        assert_eq!(seen.len(), names.len() - 1, "`.` is skipped");
        for (entry, name) in seen.iter().zip(&names[1..]) {
            assert_eq!(entry.file_name().as_bytes(), &name[..]);
            assert_eq!(entry.file_name_cstr().to_bytes(), &name[..]);
            let child = ChildName::from(entry).to_cname().unwrap();
            assert_eq!(child.as_os_str().as_bytes(), &name[..]);
        }
        assert_eq!(seen[2].file_name().len(), 1024);
        assert!(matches!(dir.read, Read::End));
    }

    /// The GETDENTS opcode, or `None` after printing why the test is
    /// skipped; a failure where `IO_URING_GETDENTS_REQUIRE=1` (the VM).
    fn getdents_opcode() -> Option<u8> {
        let support = io_uring_getdents::detect::cached();
        if support.opcode().is_none() {
            assert!(
                std::env::var("IO_URING_GETDENTS_REQUIRE").as_deref() != Ok("1"),
                "IO_URING_GETDENTS_REQUIRE=1 but {support}"
            );
            eprintln!("skipped: {support}");
        }
        support.opcode()
    }

    /// On the patched kernel, a directory that fits in one buffer is read
    /// by one GETDENTS: its completion carries `IORING_CQE_F_DIR_EOF`, so
    /// once its first entry is out no read is in flight and the stream is
    /// at its end (without the flag, the read after it would be on its
    /// way). The entries are still all there, as `std::fs::read_dir` sees
    /// them.
    #[test]
    fn getdents_stops_at_the_kernel_s_end_of_directory_flag() {
        if getdents_opcode().is_none() {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(tmp.path().join(format!("file-{i}")), []).unwrap();
        }
        let mut want: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        want.sort();
        tokio_uring::start(async {
            let mut dir = Dir::builder()
                .backend(BackendChoice::Getdents)
                .open(tmp.path())
                .await
                .unwrap();
            let mut got = vec![dir.next().await.unwrap().unwrap().file_name().to_owned()];
            assert!(
                matches!(dir.read, Read::End),
                "a read is in flight after a directory that fits one buffer"
            );
            while let Some(entry) = dir.next().await {
                got.push(entry.unwrap().file_name().to_owned());
            }
            got.sort();
            assert_eq!(got, want);
        });
    }

    /// Readdirplus records as the kernel writes them (`.` with the
    /// directory's statx, `..` with EOPNOTSUPP, an entry removed before
    /// its lookup with ENOENT), taken in by a `Dir` asked for entry
    /// metadata: the dot entries are skipped, the others carry what the
    /// record says, and a failed lookup names the entry's path.
    #[test]
    fn readdirplus_records_give_each_entry_its_metadata() {
        use io_uring_getdents::plus::encode_plus;
        use io_uring_getdents::syscall::statx;

        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("file"), b"12345").unwrap();
        let file = std::fs::File::open(tmp.path()).unwrap();
        let stat = |name: &std::ffi::CStr| {
            statx(Some(file.as_fd()), name, 0, libc::STATX_BASIC_STATS).unwrap()
        };
        let (dot, stx) = (stat(c"."), stat(c"file"));
        let mut records = Vec::new();
        encode_plus(&mut records, dot.stx_ino, 1, libc::DT_DIR, b".", Ok(&dot));
        encode_plus(
            &mut records,
            2,
            2,
            libc::DT_DIR,
            b"..",
            Err(libc::EOPNOTSUPP),
        );
        encode_plus(
            &mut records,
            stx.stx_ino,
            3,
            libc::DT_REG,
            b"file",
            Ok(&stx),
        );
        encode_plus(
            &mut records,
            99,
            4,
            libc::DT_REG,
            b"gone",
            Err(libc::ENOENT),
        );

        let mut config = DirBuilder::new()
            .backend(BackendChoice::Fallback)
            .entry_metadata(libc::STATX_BASIC_STATS)
            .config(tmp.path())
            .unwrap();
        // The kernel's layout, whichever backend this host has.
        config.metadata = EntryMetadata::Plus(libc::STATX_BASIC_STATS);
        let mut dir = Dir::from_parts(file.into(), Arc::from(tmp.path()), config);
        assert!(dir.readdirplus());
        let mut buf = vec![0u8; records.len()].into_boxed_slice();
        buf.copy_from_slice(&records);
        dir.finish_read(Ok(records.len()), Some(buf), None, true);
        let got: Vec<DirEntry> = std::iter::from_fn(|| dir.next_buffered())
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.len(), 2, "`.` and `..` are skipped: {got:?}");
        let meta = got[0].metadata().unwrap().unwrap();
        assert_eq!(meta, Metadata::from_statx(&stx));
        assert_eq!(meta.size(), 5);
        let gone = got[1].metadata().unwrap().unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
        let named = tmp.path().join("gone").display().to_string();
        assert!(gone.to_string().contains(&named), "{gone}");
    }

    /// A kernel with GETDENTS but without readdirplus: each read's entries
    /// are stat'ed on the blocking pool right after it, and every entry
    /// carries what `statx(2)` gives, as on the other backends.
    #[test]
    fn getdents_without_readdirplus_stats_each_read_s_entries() {
        let Some(opcode) = getdents_opcode() else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..200 {
            std::fs::write(tmp.path().join(format!("file-{i}")), vec![1; i]).unwrap();
        }
        let mut config = DirBuilder::new()
            .backend(BackendChoice::Getdents)
            .buffer_size(MIN_BUFFER_SIZE)
            .entry_metadata(libc::STATX_BASIC_STATS)
            .config(tmp.path())
            .unwrap();
        assert!(matches!(config.backend, Backend::Getdents { opcode: o } if o == opcode));
        config.metadata = EntryMetadata::Statx(libc::STATX_BASIC_STATS);
        tokio_uring::start(async {
            let file = std::fs::File::open(tmp.path()).unwrap();
            let mut dir = Dir::from_parts(file.into(), Arc::from(tmp.path()), config);
            assert!(!dir.readdirplus());
            let mut seen = 0;
            while let Some(entry) = dir.next().await {
                let entry = entry.unwrap();
                let meta = entry.metadata().unwrap().unwrap();
                let want = std::fs::symlink_metadata(tmp.path().join(entry.file_name())).unwrap();
                assert_eq!(meta.ino(), std::os::unix::fs::MetadataExt::ino(&want));
                assert_eq!(meta.size(), want.len());
                seen += 1;
            }
            assert_eq!(seen, 200);
        });
    }
}
