//! One entry of a directory.

use std::ffi::{CStr, OsStr};
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use io_uring_getdents::dirent::{FileType, HEADER_LEN};
use io_uring_getdents::plus::DirentPlusIter;

use super::Metadata;
use crate::error::PathError;
use crate::op::name::CName;

/// An entry read from a [`Dir`](super::Dir): name, inode number, type and
/// directory offset, as the kernel's `linux_dirent64` record gives them.
///
/// Entries of one read share a single buffer (a copy of what the kernel
/// wrote), so producing an entry allocates nothing; an entry keeps its
/// batch alive, a few kilobytes at most. Copy the name
/// (`file_name().to_owned()`) to keep names for long. With
/// [`DirBuilder::entry_metadata`](super::DirBuilder::entry_metadata), the
/// batch holds each entry's `statx` too, and [`metadata`](DirEntry::metadata)
/// reads it from there.
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::{Dir, FileType};
///
/// tokio_uring::start(async {
///     let mut dir = Dir::open("/etc").await?;
///     while let Some(entry) = dir.next().await {
///         let entry = entry?;
///         if entry.file_type() == FileType::Directory {
///             println!("{:?} (inode {})", entry.file_name(), entry.ino());
///         }
///     }
///     Ok::<_, std::io::Error>(())
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct DirEntry {
    batch: Arc<[u8]>,
    /// Where the record starts in `batch`; the name follows its header
    /// and ends with a NUL.
    record: u32,
    name_len: u16,
    d_type: u8,
    ino: u64,
    offset: u64,
    /// With entry metadata: the directory's path (for errors), and a
    /// batch of readdirplus records, whose `statx` follows the name.
    plus_in: Option<Arc<Path>>,
}

impl DirEntry {
    pub(crate) fn new(
        batch: Arc<[u8]>,
        record: usize,
        name_len: usize,
        d_type: u8,
        ino: u64,
        offset: u64,
        plus_in: Option<Arc<Path>>,
    ) -> DirEntry {
        DirEntry {
            batch,
            // Batches are at most a read's length (a u32) and names at most
            // a record's length (a u16), so these never saturate.
            record: u32::try_from(record).unwrap_or(u32::MAX),
            name_len: u16::try_from(name_len).unwrap_or(u16::MAX),
            d_type,
            ino,
            offset,
            plus_in,
        }
    }

    fn name_start(&self) -> usize {
        self.record as usize + HEADER_LEN
    }

    /// The entry's name: any bytes except `/` and NUL, not necessarily
    /// UTF-8.
    pub fn file_name(&self) -> &OsStr {
        let start = self.name_start();
        OsStr::from_bytes(&self.batch[start..start + usize::from(self.name_len)])
    }

    /// The name with its terminating NUL, as system calls take it.
    pub fn file_name_cstr(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.batch[self.name_start()..]).unwrap_or_default()
    }

    /// The inode number (`d_ino`).
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The type from `d_type`. [`FileType::Unknown`] where the file
    /// system does not report types (`DT_UNKNOWN`): ask
    /// [`Dir::statx`](super::Dir::statx) then.
    pub fn file_type(&self) -> FileType {
        FileType::from_d_type(self.d_type)
    }

    /// The entry's `d_off`: the directory position just after it.
    /// [`Dir::seek`](super::Dir::seek) to it resumes the listing with the
    /// next entry, even in a `Dir` opened later on the same directory.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The entry's metadata, when the `Dir` was opened with
    /// [`DirBuilder::entry_metadata`](super::DirBuilder::entry_metadata);
    /// `None` otherwise. The same on every backend: what `statx(2)` of the
    /// name gave, with the builder's mask, relative to the directory and
    /// without following a symbolic link. Each call decodes it again from
    /// the batch (no system call).
    ///
    /// # Errors
    ///
    /// The errno of the entry's `statx`, naming the directory's path
    /// joined with the name: `NotFound` when the entry was removed between
    /// the read and the lookup, `PermissionDenied` when the directory may
    /// be read but not searched.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::{Dir, STATX_BASIC_STATS};
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::builder().entry_metadata(STATX_BASIC_STATS).open("/etc").await?;
    ///     while let Some(entry) = dir.next().await {
    ///         let entry = entry?;
    ///         match entry.metadata() {
    ///             Some(Ok(meta)) => println!("{:o} {:?}", meta.mode(), entry.file_name()),
    ///             Some(Err(e)) => println!("{e}"),
    ///             None => unreachable!("asked for"),
    ///         }
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn metadata(&self) -> Option<io::Result<Metadata>> {
        let dir = self.plus_in.as_ref()?;
        // The record was checked when the entry was made; the check runs
        // again, on the one record, rather than trust an offset.
        let record = DirentPlusIter::new(&self.batch[self.record as usize..]).next();
        let stat = match record {
            Some(Ok(record)) => record.stat(),
            Some(Err(e)) => Err(e.into()),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no readdirplus record where the entry was read",
            )),
        };
        Some(
            stat.map(|stx| Metadata::from_statx(&stx))
                .map_err(|e| PathError::wrap("stat", dir.join(self.file_name()), e)),
        )
    }

    /// The name, pointing into the shared batch (no copy).
    pub(crate) fn cname(&self) -> CName {
        CName::InBatch {
            batch: Arc::clone(&self.batch),
            start: self.name_start(),
        }
    }
}

impl fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirEntry")
            .field("name", &self.file_name())
            .field("ino", &self.ino)
            .field("type", &self.file_type())
            .field("offset", &self.offset)
            .finish()
    }
}
