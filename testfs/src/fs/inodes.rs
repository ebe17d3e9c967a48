//! Node ids: the kernel's handle on each source entry, interned by the
//! entry's source `(st_dev, st_ino)`.

use std::collections::HashMap;
use std::path::PathBuf;

use fuser::INodeNo;

/// A node the kernel knows: where it is, relative to the source root.
pub(super) struct Node {
    pub(super) rel: PathBuf,
    pub(super) parent: INodeNo,
}

/// Node ids by source `(st_dev, st_ino)`, so hard links share one node as
/// they share one inode in the source. Nodes are never dropped (FORGET is
/// ignored): ids stay stable for the mount's life, and fixture trees are
/// small enough for that.
pub(super) struct Inodes {
    pub(super) nodes: Vec<Node>,
    pub(super) by_key: HashMap<(u64, u64), INodeNo>,
}

impl Inodes {
    pub(super) fn intern(&mut self, key: (u64, u64), rel: PathBuf, parent: INodeNo) -> INodeNo {
        if let Some(&ino) = self.by_key.get(&key) {
            return ino;
        }
        self.nodes.push(Node { rel, parent });
        let ino = INodeNo(self.nodes.len() as u64);
        self.by_key.insert(key, ino);
        ino
    }

    pub(super) fn get(&self, ino: INodeNo) -> Option<&Node> {
        let index = ino.0.checked_sub(1)?;
        self.nodes.get(usize::try_from(index).ok()?)
    }
}
