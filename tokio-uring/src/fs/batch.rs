//! Calls relative to a directory that are cheaper made together, or that
//! io_uring has no operation for: the metadata of many entries in one trip
//! to tokio's blocking pool, `readlinkat`, the parent's metadata.
//!
//! io_uring hands every STATX to an io-wq worker (a thread hop per entry);
//! here one hop makes the `statx(2)` calls of up to [`CHUNK`] entries, the
//! cost of the plain calls plus one wake-up. Chunks of equal size run side
//! by side, each through a descriptor of its own, so a cold directory is
//! still read by several threads at once.

use std::ffi::CString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use io_uring_getdents::syscall::{open_dir_at, statx as statx_now};

use super::{ChildName, Dir, DirEntry, DirHandle, Metadata, StatxFuture};
use crate::error::PathError;
use crate::fd::SharedFd;
use crate::op::name::CName;
use crate::op::statx::statx;

/// Entries stat'ed per blocking call.
pub const CHUNK: usize = 1024;

/// An entry with its metadata, or the error of its `statx`.
pub type WithMetadata = (DirEntry, io::Result<Metadata>);

impl DirHandle {
    /// The metadata of `entries` (of this directory), `statx(2)` relative
    /// to it without following links, made on tokio's blocking pool in
    /// chunks of at most [`CHUNK`] entries, all of one size, side by side:
    /// one thread hop per chunk instead of an io_uring STATX (an io-wq hop)
    /// per entry. The results come in the
    /// order of `entries`. Dropping the future is safe: the calls finish on
    /// their threads, which hold the descriptor until then.
    ///
    /// # Errors
    ///
    /// Each entry has its own result, naming the entry's path. The whole
    /// call fails only if a blocking thread could not run (the runtime is
    /// shutting down).
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, STATX_SIZE};
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open(env!("CARGO_MANIFEST_DIR")).await?;
    ///     let mut entries = Vec::new();
    ///     while let Some(entry) = dir.next().await {
    ///         entries.push(entry?);
    ///     }
    ///     for (entry, meta) in dir.handle().statx_many(entries, STATX_SIZE).await? {
    ///         println!("{} {}", meta?.size(), entry.file_name().display());
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn statx_many(
        &self,
        entries: Vec<DirEntry>,
        mask: u32,
    ) -> io::Result<Vec<WithMetadata>> {
        // Chunks of equal size (1 500 entries: two of 750, not 1 024 and
        // 476), so that the threads side by side finish together.
        let parts = entries.len().div_ceil(CHUNK);
        let size = entries.len().div_ceil(parts.max(1));
        let mut chunks = Vec::with_capacity(parts);
        let mut rest = entries;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(size));
            let chunk = std::mem::replace(&mut rest, tail);
            let (fd, path) = (self.shared_fd().clone(), self.shared_path());
            let own = !chunks.is_empty();
            chunks.push(tokio::task::spawn_blocking(move || {
                stat_chunk(&fd, own, &path, chunk, mask)
            }));
        }
        let mut out = Vec::new();
        for joined in futures_util::future::join_all(chunks).await {
            let done = joined.map_err(|e| {
                let e = io::Error::other(format!("statx on a blocking thread: {e}"));
                PathError::wrap("stat entries of", self.path(), e)
            })?;
            out.extend(done);
        }
        Ok(out)
    }

    /// The target of the symbolic link `name` in this directory
    /// (`readlinkat(2)` on tokio's blocking pool; io_uring has no
    /// operation for it).
    ///
    /// # Errors
    ///
    /// `InvalidInput` when `name` is not a symbolic link, `NotFound`, or
    /// another errno, naming the link's path.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// let tmp = tempfile::tempdir()?;
    /// std::os::unix::fs::symlink("target", tmp.path().join("link"))?;
    /// tokio_uring::start(async {
    ///     let dir = Dir::open(tmp.path()).await?;
    ///     assert_eq!(dir.handle().read_link("link").await?, std::path::Path::new("target"));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn read_link<'a>(&self, name: impl Into<ChildName<'a>>) -> io::Result<PathBuf> {
        let link = Link::new(self.path(), name.into());
        let path = link.path.clone();
        let fd = self.shared_fd().clone();
        let read = tokio::task::spawn_blocking(move || link.read(&fd)).await;
        read.unwrap_or_else(|e| Err(PathError::wrap("read link", path, io::Error::other(e))))
    }

    /// The targets of the symbolic links `names` in this directory, in
    /// their order, all read in one trip to tokio's blocking pool
    /// (`readlinkat(2)` each): an `ls -l` pays one thread hop for its
    /// links, not one per link.
    ///
    /// # Errors
    ///
    /// Each name has its own result, as [`read_link`](Self::read_link)
    /// gives it. The whole call fails only if the blocking thread could
    /// not run (the runtime is shutting down).
    ///
    /// # Example
    ///
    /// ```
    /// use std::path::Path;
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// let tmp = tempfile::tempdir()?;
    /// std::os::unix::fs::symlink("one", tmp.path().join("a"))?;
    /// std::os::unix::fs::symlink("two", tmp.path().join("b"))?;
    /// tokio_uring::start(async {
    ///     let dir = Dir::open(tmp.path()).await?;
    ///     let targets = dir.handle().read_links(["a", "b"]).await?;
    ///     assert_eq!(targets[0].as_ref().unwrap(), Path::new("one"));
    ///     assert_eq!(targets[1].as_ref().unwrap(), Path::new("two"));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn read_links<'a, I>(&self, names: I) -> io::Result<Vec<io::Result<PathBuf>>>
    where
        I: IntoIterator,
        I::Item: Into<ChildName<'a>>,
    {
        let links: Vec<Link> = names
            .into_iter()
            .map(|name| Link::new(self.path(), name.into()))
            .collect();
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let fd = self.shared_fd().clone();
        let read = tokio::task::spawn_blocking(move || {
            links.into_iter().map(|link| link.read(&fd)).collect()
        });
        read.await.map_err(|e| {
            let e = io::Error::other(format!("readlinkat on a blocking thread: {e}"));
            PathError::wrap("read links in", self.path(), e)
        })
    }

    /// The metadata of the directory's parent (`..` relative to it, which
    /// [`statx`](DirHandle::statx) refuses as a child name), through
    /// io_uring STATX: what `ls -la` shows for `..`.
    ///
    /// # Errors
    ///
    /// As [`Dir::statx`](super::Dir::statx).
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, STATX_INO};
    ///
    /// tokio_uring::start(async {
    ///     let dir = Dir::open("/usr").await?;
    ///     let parent = dir.handle().parent_metadata(STATX_INO).await?;
    ///     assert!(parent.is_dir());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn parent_metadata(&self, mask: u32) -> StatxFuture {
        let dotdot = CName::Owned(c"..".to_owned());
        StatxFuture::new(statx(
            Some((self.shared_fd(), self.shared_path())),
            dotdot,
            mask,
        ))
    }
}

/// The `statx(2)` calls of one chunk, relative to `fd`, or with `own` to a
/// descriptor of the chunk's own: threads calling through one open file
/// bounce its reference count between their CPUs on every call. Opened as
/// `.` relative to `fd`, it is the same directory even if renamed
/// meanwhile; if it cannot be opened (no read permission any more), `fd`
/// serves. 400 calls on 1 500 entries took 417 ms with chunks of 1 024 and
/// 476 through one descriptor, 343 with two of 750, 325 with their own
/// descriptors (docs/benchmarks.md).
fn stat_chunk(
    fd: &SharedFd,
    own: bool,
    dir: &Path,
    chunk: Vec<DirEntry>,
    mask: u32,
) -> Vec<WithMetadata> {
    let reopened = own
        .then(|| open_dir_at(Some(fd.borrow()), c".").ok())
        .flatten();
    let at = reopened.as_ref().map_or(fd.borrow(), AsFd::as_fd);
    chunk
        .into_iter()
        .map(|entry| {
            let meta = statx_now(Some(at), entry.file_name_cstr(), 0, mask)
                .map(|stx| Metadata::from_statx(&stx))
                .map_err(|e| PathError::wrap("stat", dir.join(entry.file_name()), e));
            (entry, meta)
        })
        .collect()
}

/// A symbolic link to read: its path (for errors) and its name (`None`
/// when it holds a NUL byte, which no system call can be passed).
struct Link {
    path: PathBuf,
    name: Option<CString>,
}

impl Link {
    fn new(dir: &Path, name: ChildName<'_>) -> Link {
        Link {
            path: dir.join(name.as_os_str()),
            name: CString::new(name.as_os_str().as_bytes()).ok(),
        }
    }

    /// Its target, relative to the directory `fd` (on a blocking thread).
    fn read(self, fd: &SharedFd) -> io::Result<PathBuf> {
        let read = match &self.name {
            Some(name) => read_link_at(fd, name),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "name contains a NUL byte",
            )),
        };
        read.map_err(|e| PathError::wrap("read link", self.path, e))
    }
}

fn read_link_at(fd: &SharedFd, name: &std::ffi::CStr) -> io::Result<PathBuf> {
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: `name` is NUL-terminated; the kernel writes at most
        // `buf.len()` bytes into `buf`; the descriptor is held open by `fd`.
        let n = unsafe {
            libc::readlinkat(fd.raw(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        if n < buf.len() {
            buf.truncate(n);
            return Ok(PathBuf::from(std::ffi::OsString::from_vec(buf)));
        }
        // Possibly cut short: try again with more room.
        buf.resize(buf.len() * 2, 0);
    }
}

/// The same calls on the `Dir` itself.
impl Dir {
    /// As [`DirHandle::statx_many`]: the metadata of many entries in one
    /// blocking call per [`CHUNK`] entries.
    ///
    /// # Errors
    ///
    /// As [`DirHandle::statx_many`].
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, STATX_SIZE};
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open("/usr").await?;
    ///     let mut entries = Vec::new();
    ///     while let Some(entry) = dir.next().await {
    ///         entries.push(entry?);
    ///     }
    ///     let stats = dir.statx_many(entries, STATX_SIZE).await?;
    ///     assert!(stats.iter().all(|(_, meta)| meta.is_ok()));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn statx_many(
        &self,
        entries: Vec<DirEntry>,
        mask: u32,
    ) -> io::Result<Vec<WithMetadata>> {
        self.handle_ref().statx_many(entries, mask).await
    }

    /// As [`DirHandle::read_link`].
    ///
    /// # Errors
    ///
    /// As [`DirHandle::read_link`].
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// let tmp = tempfile::tempdir()?;
    /// std::os::unix::fs::symlink("/", tmp.path().join("up"))?;
    /// tokio_uring::start(async {
    ///     let dir = Dir::open(tmp.path()).await?;
    ///     assert_eq!(dir.read_link("up").await?, std::path::Path::new("/"));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn read_link<'a>(&self, name: impl Into<ChildName<'a>>) -> io::Result<PathBuf> {
        self.handle_ref().read_link(name).await
    }

    /// As [`DirHandle::read_links`]: the targets of many symbolic links in
    /// one blocking call.
    ///
    /// # Errors
    ///
    /// As [`DirHandle::read_links`].
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// let tmp = tempfile::tempdir()?;
    /// std::os::unix::fs::symlink("/", tmp.path().join("up"))?;
    /// std::fs::write(tmp.path().join("file"), "")?;
    /// tokio_uring::start(async {
    ///     let dir = Dir::open(tmp.path()).await?;
    ///     let targets = dir.read_links(["up", "file"]).await?;
    ///     assert_eq!(targets[0].as_ref().unwrap(), std::path::Path::new("/"));
    ///     // Not a link: EINVAL, as readlinkat(2) says.
    ///     assert_eq!(targets[1].as_ref().unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn read_links<'a, I>(&self, names: I) -> io::Result<Vec<io::Result<PathBuf>>>
    where
        I: IntoIterator,
        I::Item: Into<ChildName<'a>>,
    {
        self.handle_ref().read_links(names).await
    }

    /// As [`DirHandle::parent_metadata`].
    ///
    /// # Errors
    ///
    /// As [`Dir::statx`].
    ///
    /// # Panics
    ///
    /// Outside a tokio-uring runtime.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, STATX_INO};
    ///
    /// tokio_uring::start(async {
    ///     let dir = Dir::open("/usr/bin").await?;
    ///     let usr = std::fs::metadata("/usr")?;
    ///     let parent = dir.parent_metadata(STATX_INO).await?;
    ///     assert_eq!(parent.ino(), std::os::unix::fs::MetadataExt::ino(&usr));
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn parent_metadata(&self, mask: u32) -> StatxFuture {
        self.handle_ref().parent_metadata(mask)
    }
}
