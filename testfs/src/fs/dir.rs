//! A directory's listing, read whole from the source at OPENDIR: the
//! entries READDIR hands out, by index.

use std::fs;
use std::os::unix::fs::{DirEntryExt, MetadataExt};

use fuser::{Errno, FileType, INodeNo};

use super::attr::file_type;
use super::{errno, lock, TestFs};

/// One entry of a directory snapshot taken at OPENDIR.
pub(super) struct DirItem {
    pub(super) name: std::ffi::OsString,
    pub(super) ino: INodeNo,
    pub(super) kind: FileType,
}

impl TestFs {
    /// Reads the whole source directory, with `.` and `..` first as a
    /// real filesystem returns them.
    pub(super) fn snapshot(&self, ino: INodeNo) -> Result<Vec<DirItem>, Errno> {
        let (rel, parent) = {
            let inodes = lock(&self.inodes);
            let node = inodes.get(ino).ok_or(Errno::ESTALE)?;
            (node.rel.clone(), node.parent)
        };
        if let Some(errno) = self.injected(&rel, false) {
            return Err(errno);
        }
        let dir = self.full(&rel);
        let dev = fs::symlink_metadata(&dir).map_err(|e| errno(&e))?.dev();
        let mut items = vec![
            DirItem {
                name: ".".into(),
                ino,
                kind: FileType::Directory,
            },
            DirItem {
                name: "..".into(),
                ino: parent,
                kind: FileType::Directory,
            },
        ];
        for entry in fs::read_dir(&dir).map_err(|e| errno(&e))? {
            let entry = entry.map_err(|e| errno(&e))?;
            let kind = file_type(entry.file_type().map_err(|e| errno(&e))?);
            let name = entry.file_name();
            // Same key as LOOKUP uses, so d_ino matches st_ino (except on a
            // mount point inside the source, as on any Linux filesystem).
            let path = rel.join(&name);
            let name = self.shown.get(&path).cloned().unwrap_or(name);
            let child = lock(&self.inodes).intern((dev, entry.ino()), path, ino);
            items.push(DirItem {
                name,
                ino: child,
                kind,
            });
        }
        Ok(items)
    }
}
