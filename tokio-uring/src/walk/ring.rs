//! The walk's directory jobs through io_uring: the root's open, and on
//! kernels with GETDENTS every directory's open, read (GETDENTS) and
//! `statx`: with the read where the kernel has readdirplus, as STATX (64
//! in flight) elsewhere.

use std::io;
use std::rc::Rc;
use std::sync::Arc;

use super::entry::{Name, WalkEntry};
use super::node::Node;
use crate::fs::{Dir, DirBuilder, DirEntry, DirHandle, FileType, Metadata, STATX_TYPE};

/// What a directory gave: its entries (and errors), and its handle, kept
/// if it has subdirectories and the budget has room.
pub(super) struct Listing {
    pub(super) kept: Option<DirHandle>,
    pub(super) items: Vec<io::Result<WalkEntry>>,
}

/// The root: opened if it is a directory (or a link to one, unless
/// `follow_link` is off), else yielded alone, as walkdir does.
pub(super) async fn open_root(
    builder: DirBuilder,
    node: &Node,
    mask: Option<u32>,
    follow_link: bool,
) -> io::Result<Box<(Option<Dir>, WalkEntry)>> {
    let path = node.path();
    let lstat = crate::fs::statx(&path, mask.unwrap_or(0) | STATX_TYPE).await?;
    let is_link = lstat.file_type() == FileType::Symlink;
    let alone = |meta: Metadata| {
        let mut entry = WalkEntry::new(
            None,
            Name::new(path.as_os_str()),
            0,
            meta.file_type(),
            meta.ino(),
            mask.map(|_| meta),
        );
        entry.link = is_link;
        Ok(Box::new((None, entry)))
    };
    if (is_link && !follow_link) || (!is_link && lstat.file_type() != FileType::Directory) {
        return alone(lstat);
    }
    let refuses_links = builder.refuses_links();
    // Every directory of the walk inherits this from the root.
    let builder = match mask {
        Some(mask) => builder.entry_metadata_if_plus(mask | STATX_TYPE),
        None => builder,
    };
    let dir = match builder.open(&path).await {
        Err(e) if is_link && !refuses_links && e.kind() == io::ErrorKind::NotADirectory => {
            return alone(lstat);
        }
        opened => opened?,
    };
    let metadata = match mask {
        Some(_) if is_link => Some(lstat),
        Some(mask) => Some(dir.metadata(mask | STATX_TYPE).await?),
        None => None,
    };
    let ino = match &metadata {
        Some(m) => m.ino(),
        None if is_link => lstat.ino(),
        None => dir.file_id()?.ino,
    };
    let file_type = if is_link {
        FileType::Symlink
    } else {
        FileType::Directory
    };
    let mut entry = WalkEntry::new(
        None,
        Name::new(path.as_os_str()),
        0,
        file_type,
        ino,
        metadata,
    );
    entry.link = is_link;
    Ok(Box::new((Some(dir), entry)))
}

/// Opens `node` relative to its parent, or, if the parent was closed,
/// through the names from the nearest ancestor still open. Holds at most
/// two descriptors at a time of its own (the ancestor's clone counts as
/// one: the walk may close that ancestor meanwhile).
async fn open(node: &Node) -> io::Result<Dir> {
    let (mut current, chain) = super::nearest_open(node);
    for step in chain.iter().rev() {
        let dir = current.open_at(step.name.name()).await?;
        current = dir.handle();
    }
    current.open_at(node.name.name()).await
}

pub(super) async fn read(node: &Rc<Node>, dir: Option<Dir>, mask: Option<u32>) -> Listing {
    let dir = match dir {
        Some(dir) => Ok(dir),
        None => open(node).await,
    };
    let at = |mut e: io::Error, depth: usize| {
        crate::PathError::set_depth(&mut e, depth);
        e
    };
    let mut dir = match dir {
        Ok(dir) => dir,
        Err(e) => {
            let e = at(e, node.depth);
            return Listing {
                kept: None,
                items: vec![Err(e)],
            };
        }
    };
    let id = dir
        .file_id()
        .map(|id| node.name.opened_as((id.dev, id.ino)));
    let looped = match id {
        Ok(None) => None,
        Ok(Some(ancestor)) => Some(crate::PathError::walk_loop(
            node.path(),
            ancestor.join(None),
            node.depth,
        )),
        Err(e) => Some(at(e, node.depth)),
    };
    if let Some(err) = looped {
        let _ = dir.close().await;
        return Listing {
            kept: None,
            items: vec![Err(err)],
        };
    }
    let handle = dir.handle();
    let mut entries: Vec<DirEntry> = Vec::new();
    let mut failure = None;
    while let Some(item) = dir.next().await {
        match item {
            Ok(entry) => entries.push(entry),
            Err(e) => failure = Some(at(e, node.depth)),
        }
    }
    let mut items = Vec::with_capacity(entries.len() + 1);
    // Bounded batches of statx in flight, so a huge directory does not
    // put a million operations on the ring at once.
    for batch in entries.chunks(64) {
        let stats: Vec<Option<io::Result<Metadata>>> = match mask {
            // Readdirplus brought every entry's statx with the read.
            Some(_) if dir.readdirplus() => batch.iter().map(DirEntry::metadata).collect(),
            Some(mask) => futures_util::future::join_all(
                batch.iter().map(|e| handle.statx(e, mask | STATX_TYPE)),
            )
            .await
            .into_iter()
            .map(Some)
            .collect(),
            None => {
                let handle = &handle;
                let unknown = batch.iter().map(|e| async move {
                    if e.file_type() == FileType::Unknown {
                        Some(handle.statx(e, STATX_TYPE).await)
                    } else {
                        None
                    }
                });
                futures_util::future::join_all(unknown).await
            }
        };
        for (entry, stat) in batch.iter().zip(stats) {
            let (file_type, metadata) = match stat {
                Some(Err(e)) => {
                    items.push(Err(at(e, node.depth + 1)));
                    continue;
                }
                Some(Ok(meta)) if entry.file_type() == FileType::Unknown => {
                    (meta.file_type(), mask.map(|_| meta))
                }
                Some(Ok(meta)) => (entry.file_type(), mask.map(|_| meta)),
                None => (entry.file_type(), None),
            };
            items.push(Ok(WalkEntry::new(
                Some(Arc::clone(&node.name)),
                Name::new(entry.file_name()),
                node.depth + 1,
                file_type,
                entry.ino(),
                metadata,
            )));
        }
    }
    items.extend(failure.map(Err));
    if let Err(e) = dir.close().await {
        items.push(Err(at(e, node.depth)));
    }
    Listing {
        kept: Some(handle),
        items,
    }
}
