//! The attributes testfs replies with: a source entry's, converted from its
//! metadata, and the stats file's.

use std::fs::{self, Metadata};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, INodeNo};

use super::TestFs;

/// Node id of the stats file. The kernel reserves no id but 0 and 1, and
/// real nodes count up from 1, so the top of the range is free.
pub(super) const STATS_INO: INodeNo = INodeNo(u64::MAX - 1);

/// Size announced for the stats file. It is opened with direct I/O, so reads
/// reach testfs and stop at the real end of the text; the size only has to
/// be non-zero for tools that trust `st_size`.
const STATS_SIZE: u64 = 4096;

pub(super) fn file_type(ft: fs::FileType) -> FileType {
    if ft.is_dir() {
        FileType::Directory
    } else if ft.is_symlink() {
        FileType::Symlink
    } else if ft.is_block_device() {
        FileType::BlockDevice
    } else if ft.is_char_device() {
        FileType::CharDevice
    } else if ft.is_fifo() {
        FileType::NamedPipe
    } else if ft.is_socket() {
        FileType::Socket
    } else {
        FileType::RegularFile
    }
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    let nanos = Duration::from_nanos(nsecs.clamp(0, 999_999_999) as u64);
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + nanos
    }
}

pub(super) fn attr(ino: INodeNo, meta: &Metadata) -> FileAttr {
    FileAttr {
        ino,
        size: meta.size(),
        blocks: meta.blocks(),
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        crtime: time(meta.ctime(), meta.ctime_nsec()),
        kind: file_type(meta.file_type()),
        perm: (meta.mode() & 0o7777) as u16,
        nlink: meta.nlink() as u32,
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: meta.rdev() as u32,
        blksize: meta.blksize() as u32,
        flags: 0,
    }
}

impl TestFs {
    pub(super) fn stats_attr(&self) -> FileAttr {
        let now = SystemTime::now();
        FileAttr {
            ino: STATS_INO,
            size: STATS_SIZE,
            blocks: 0,
            atime: now,
            mtime: now,
            ctime: now,
            crtime: now,
            kind: FileType::RegularFile,
            perm: 0o444,
            nlink: 1,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}
