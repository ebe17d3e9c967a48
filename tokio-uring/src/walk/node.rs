//! A directory of the walk through io_uring while it is in progress:
//! enough to open it again from an ancestor.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use super::entry::DirName;
use crate::fs::DirHandle;

pub(super) struct Node {
    pub(super) parent: Option<Rc<Node>>,
    pub(super) name: Arc<DirName>,
    pub(super) depth: usize,
    /// Kept open while subdirectories wait to be opened, if there was room.
    pub(super) handle: RefCell<Option<DirHandle>>,
    /// Subdirectories not yet opened (or pruned).
    pub(super) children_left: Cell<usize>,
}

impl Node {
    pub(super) fn new(parent: Option<Rc<Node>>, name: Arc<DirName>, depth: usize) -> Rc<Node> {
        Rc::new(Node {
            parent,
            name,
            depth,
            handle: RefCell::new(None),
            children_left: Cell::new(0),
        })
    }

    /// The directory's path, for messages.
    pub(super) fn path(&self) -> PathBuf {
        self.name.join(None)
    }
}

/// Drops the chain of parents one by one, as `DirName` does: a 70 000
/// levels deep chain dropped recursively overflows a 2 MiB stack.
impl Drop for Node {
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(parent) = next {
            next = match Rc::into_inner(parent) {
                Some(mut last_owner) => last_owner.parent.take(),
                None => None,
            };
        }
    }
}

/// One subdirectory of `parent` is opened or pruned; the parent's
/// descriptor closes once none is left.
pub(super) fn child_done(parent: &Node, kept: &Cell<usize>) {
    let left = parent.children_left.get().saturating_sub(1);
    parent.children_left.set(left);
    if left == 0 && parent.parent.is_some() && parent.handle.borrow_mut().take().is_some() {
        kept.set(kept.get() - 1);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_deep_chain_of_nodes_drops_on_a_small_stack() {
        let dropped = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let root = DirName::root(Path::new("/r"));
                let mut node = Node::new(None, Arc::clone(&root), 0);
                for depth in 1..200_000 {
                    let name = DirName::child(&node.name, "a".as_ref());
                    node = Node::new(Some(node), name, depth);
                }
                drop(node);
            })
            .unwrap()
            .join();
        assert!(dropped.is_ok());
    }
}
