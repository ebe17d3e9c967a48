//! Paths of directories without rebuilding them from the root each time:
//! [`DirHandle`], a finished directory kept for later (its path built only
//! when asked, ordered by path without building it), and [`PathCache`],
//! the path of the directory a worker reads, kept from one directory to
//! the next. On a tree thousands of levels deep, building each path from
//! the chain of parents costs time in proportion to the depth for every
//! directory: quadratic in all.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::Arc;

use crate::node::{push_name, DirNode};

/// A directory of a breakdown, kept after the [`DirVisitor`](crate::DirVisitor)
/// call that handed it over, for the price of a pointer: its path is
/// built only by [`path`](Self::path). Handles compare as their paths do
/// (component by component, as [`std::path::Path`] compares), without
/// building them.
///
/// # Example
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use traverse::{DirHandle, DirTotals, DirVisitor, Ignore, WalkBuilder};
///
/// /// Every directory, its path built only at the end.
/// #[derive(Default)]
/// struct All(Mutex<Vec<DirHandle>>);
/// impl DirVisitor for All {
///     fn dir(&self, dir: &DirTotals<'_>) {
///         self.0.lock().unwrap().push(dir.handle());
///     }
/// }
///
/// let tree = tempfile::tempdir()?;
/// std::fs::create_dir_all(tree.path().join("b/c"))?;
/// std::fs::create_dir(tree.path().join("a"))?;
/// let all = Arc::new(All::default());
/// WalkBuilder::new().build().run_dirs(tree.path(), &Ignore, all.clone());
/// let mut dirs = std::mem::take(&mut *all.0.lock().unwrap());
/// dirs.sort();
/// let paths: Vec<_> = dirs.iter().map(|d| d.path()).collect();
/// let root = tree.path();
/// assert_eq!(paths, [root.to_owned(), root.join("a"), root.join("b"), root.join("b/c")]);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DirHandle(pub(crate) Arc<DirNode>);

impl DirHandle {
    /// The directory's path: the root's path and the names below it.
    pub fn path(&self) -> PathBuf {
        self.0.path()
    }

    /// Levels below the root (the root is 0).
    pub fn depth(&self) -> usize {
        self.0.depth()
    }
}

impl PartialEq for DirHandle {
    fn eq(&self, other: &DirHandle) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for DirHandle {}

impl PartialOrd for DirHandle {
    fn partial_cmp(&self, other: &DirHandle) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DirHandle {
    /// As the paths compare, in time proportional to the distance from
    /// each directory to their nearest common ancestor.
    fn cmp(&self, other: &DirHandle) -> Ordering {
        cmp_paths(&self.0, &other.0)
    }
}

/// Compares the paths of `a` and `b` component by component: climbs the
/// deeper one to the other's depth (an ancestor comes before what is below
/// it), then both together until their parents meet, where their names
/// decide. Directories of different walks (no common ancestor) compare
/// by their built paths.
fn cmp_paths(a: &DirNode, b: &DirNode) -> Ordering {
    let (mut x, mut y) = (a, b);
    while x.depth() > y.depth() {
        match x.parent() {
            Some(p) => x = p,
            None => break,
        }
    }
    while y.depth() > x.depth() {
        match y.parent() {
            Some(p) => y = p,
            None => break,
        }
    }
    if std::ptr::eq(x, y) {
        return a.depth().cmp(&b.depth());
    }
    loop {
        match (x.parent(), y.parent()) {
            (Some(px), Some(py)) if std::ptr::eq(px.as_ref(), py.as_ref()) => {
                return x.name().to_bytes().cmp(y.name().to_bytes());
            }
            (Some(px), Some(py)) => (x, y) = (px, py),
            _ => return a.path().cmp(&b.path()),
        }
    }
}

/// The path of the directory a worker reads, and the chain of directories
/// it was built from: the next directory's path keeps the part shared with
/// the last one and appends the rest, so a depth-first walk pays for each
/// name about once, not once per level below it.
#[derive(Debug, Default)]
pub(crate) struct PathCache {
    /// The directories of `bytes`, from the root, each with the length of
    /// the path up to and including its name.
    chain: Vec<(Arc<DirNode>, usize)>,
    bytes: Vec<u8>,
}

impl PathCache {
    /// The path of `dir`, built from the chain of the last one.
    pub fn path_of(&mut self, dir: &Arc<DirNode>) -> &[u8] {
        // The deepest of `dir` and its ancestors already in the chain.
        let mut keep = 0;
        let mut cur = Some(dir);
        while let Some(node) = cur {
            let d = node.depth();
            if self.chain.get(d).is_some_and(|(c, _)| Arc::ptr_eq(c, node)) {
                keep = d + 1;
                break;
            }
            cur = node.parent();
        }
        self.chain.truncate(keep);
        self.bytes
            .truncate(keep.checked_sub(1).map_or(0, |i| self.chain[i].1));
        let start = self.chain.len();
        let mut cur = Some(dir);
        while let Some(node) = cur.filter(|n| n.depth() >= keep) {
            self.chain.push((Arc::clone(node), 0));
            cur = node.parent();
        }
        self.chain[start..].reverse();
        for (node, len) in &mut self.chain[start..] {
            push_name(&mut self.bytes, node.name().to_bytes());
            *len = self.bytes.len();
        }
        &self.bytes
    }

    /// The last path built (empty after [`clear`](Self::clear)).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Lets go of the directories of the last path.
    pub fn clear(&mut self) {
        self.chain.clear();
        self.bytes.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    use super::*;
    use crate::node::{test_root as root, ListingPlace};

    fn child(parent: &Arc<DirNode>, name: &str) -> Arc<DirNode> {
        DirNode::child(
            parent,
            &CString::new(name).unwrap(),
            ListingPlace::default(),
        )
    }

    #[test]
    fn handles_compare_as_their_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let r = root(tmp.path());
        let a = child(&r, "a");
        let ab = child(&a, "b");
        let abc = child(&ab, "c");
        // `a.b` sorts after `a/...` as paths (component by component), but
        // before it byte by byte ('.' < '/').
        let adot = child(&r, "a.b");
        let z = child(&r, "z");
        let zy = child(&z, "y");
        let nodes = [&r, &a, &ab, &abc, &adot, &z, &zy];
        for x in nodes {
            for y in nodes {
                let (hx, hy) = (DirHandle(Arc::clone(x)), DirHandle(Arc::clone(y)));
                assert_eq!(hx.cmp(&hy), x.path().cmp(&y.path()), "{x:?} {y:?}");
            }
        }
    }

    #[test]
    fn the_cache_gives_each_path_as_built_from_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let r = root(tmp.path());
        let a = child(&r, "a");
        let ab = child(&a, "b");
        let abc = child(&ab, "c");
        let ad = child(&a, "d");
        let z = child(&r, "z");
        let mut cache = PathCache::default();
        for node in [&abc, &ad, &ab, &z, &r, &abc, &a, &abc, &z] {
            assert_eq!(cache.path_of(node), node.path().as_os_str().as_bytes());
        }
    }
}
