//! Per-directory totals out of the same parallel walk.
//!
//! With a breakdown asked for, every [`DirNode`] carries a [`Tally`]: the
//! sums counted so far in its subtree and how many parts of it are not
//! done yet (its own reading, which the `threads` and `uring` engines may
//! share out in chunks, each subdirectory not final yet, and each name of
//! a hard-linked inode waiting for its attribution). The part that brings
//! that count to zero makes the sums final: it hands the directory to the
//! [`DirVisitor`], adds its sums to its parent's and counts the parent's
//! part done, up to the root. So a directory's totals are known as soon as
//! its last subdirectory is done, and nothing of it is kept afterwards.
//!
//! A hard-linked inode (not a directory) whose names sit in several
//! directories is counted once, in the directory of its name whose path
//! sorts first (bytewise): the same on every run, whatever order the
//! workers met the names in. Those inodes are settled at the end of the
//! walk, which holds back the directories that hold their names (and so
//! their ancestors) until then.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustc_hash::FxHashMap;

use crate::dirpath::DirHandle;
use crate::file_totals::FileTotals;
use crate::links::{shard_of, SHARDS};
use crate::node::DirNode;
use crate::sys::Stat;
use crate::totals::{disk_bytes, InodeKey, Totals};

/// Receives each directory of a walk once its whole subtree is counted:
/// children before their parent, the root last. Called from the worker
/// threads, so it takes `&self`.
///
/// # Example
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use traverse::{DirTotals, DirVisitor, Ignore, WalkBuilder};
///
/// #[derive(Default)]
/// struct Depth1(Mutex<Vec<(std::path::PathBuf, u128)>>);
/// impl DirVisitor for Depth1 {
///     fn dir(&self, dir: &DirTotals<'_>) {
///         if dir.depth() <= 1 {
///             self.0.lock().unwrap().push((dir.path(), dir.totals().bytes));
///         }
///     }
/// }
///
/// let tree = tempfile::tempdir()?;
/// std::fs::create_dir(tree.path().join("sub"))?;
/// std::fs::write(tree.path().join("sub/f"), b"12345")?;
/// let lines = Arc::new(Depth1::default());
/// let walk = WalkBuilder::new().build();
/// let summary = walk.run_dirs(tree.path(), &Ignore, lines.clone());
/// let lines = lines.0.lock().unwrap();
/// assert_eq!(lines.len(), 2);
/// assert_eq!(lines[1].0, tree.path());
/// assert_eq!(lines[1].1, summary.totals.bytes);
/// # Ok::<_, std::io::Error>(())
/// ```
pub trait DirVisitor: Send + Sync {
    /// A directory whose subtree is fully counted.
    fn dir(&self, dir: &DirTotals<'_>);

    /// Whether to build the tree of every entry in ncdu's export format
    /// (then [`DirTotals::write_ncdu`] works on the root, and
    /// [`DirTotals::take_tree`] on every directory). Memory grows with the
    /// tree.
    fn ncdu(&self) -> bool {
        false
    }

    /// The deepest level (the root's entries are at 1) down to which each
    /// entry that is not a directory goes to [`file`](Self::file), as
    /// `du -a` prints them; `None` (the default): none does.
    fn files_to(&self) -> Option<usize> {
        None
    }

    /// An entry that is not a directory, no deeper than
    /// [`files_to`](Self::files_to), with its sizes: before its directory.
    /// A hard-linked inode comes once, under the name whose path sorts
    /// first (where the breakdown counts it), at the end of the walk;
    /// with `count_links`, under each name.
    fn file(&self, file: &FileTotals<'_>) {
        let _ = file;
    }
}

/// One directory and the totals of its whole subtree, as a
/// [`DirVisitor`] sees it.
///
/// # Example
///
/// ```
/// use traverse::{DirTotals, DirVisitor};
/// struct Print;
/// impl DirVisitor for Print {
///     fn dir(&self, dir: &DirTotals<'_>) {
///         println!("{}\t{}", dir.totals().bytes, dir.path().display());
///     }
/// }
/// ```
pub struct DirTotals<'a> {
    node: &'a Arc<DirNode>,
    totals: &'a Totals,
    /// Names of hard-linked inodes in the subtree beyond the one counted.
    more_names: u64,
    /// The directory's tree, until [`take_tree`](Self::take_tree) takes it
    /// (otherwise it goes into its parent's).
    tree: RefCell<Option<NcduDir>>,
}

impl DirTotals<'_> {
    /// The directory's path: the root's path and the names below it (built
    /// on each call, from the chain of parents).
    pub fn path(&self) -> PathBuf {
        self.node.path()
    }

    /// Levels below the root (the root is 0).
    pub fn depth(&self) -> usize {
        self.node.depth()
    }

    /// The directory, kept for later without building its path (which
    /// takes time in proportion to the depth): see [`DirHandle`].
    pub fn handle(&self) -> DirHandle {
        DirHandle(Arc::clone(self.node))
    }

    /// The totals of the directory and everything below it.
    pub fn totals(&self) -> &Totals {
        self.totals
    }

    /// Its entries as `du --inodes` counts them: the directory and every
    /// entry below it, a hard-linked inode once (where its size is
    /// counted) rather than once per name as in [`totals`](Self::totals).
    ///
    /// ```
    /// use traverse::{DirTotals, DirVisitor};
    /// struct Inodes;
    /// impl DirVisitor for Inodes {
    ///     fn dir(&self, dir: &DirTotals<'_>) {
    ///         println!("{}\t{}", dir.inodes(), dir.path().display());
    ///     }
    /// }
    /// ```
    pub fn inodes(&self) -> u64 {
        let t = self.totals;
        (t.files + t.dirs + t.symlinks + t.other).saturating_sub(self.more_names)
    }

    /// Writes the directory's tree in ncdu's JSON export format (the
    /// directory's array, without the file header), when the
    /// [`DirVisitor`] asked for it ([`DirVisitor::ncdu`]) and this is the
    /// root; otherwise returns `Ok(false)` and writes nothing.
    pub fn write_ncdu(&self, w: &mut dyn Write) -> io::Result<bool> {
        match &*self.tree.borrow() {
            Some(tree) if self.node.parent().is_none() => tree.write(w).map(|()| true),
            _ => Ok(false),
        }
    }

    /// Takes the directory's tree, whole and with its totals, when the
    /// [`DirVisitor`] asked for trees ([`DirVisitor::ncdu`]); its parent's
    /// tree then goes on without it (an ncdu export of the root would
    /// lack it). Called a second time, or without trees, gives `None`.
    /// Example: [`NcduDir::name`].
    pub fn take_tree(&self) -> Option<NcduDir> {
        self.tree.borrow_mut().take()
    }
}

/// A directory's share of a breakdown, kept in its [`DirNode`].
#[derive(Debug)]
pub(crate) struct Tally {
    sums: Mutex<Totals>,
    /// See [`DirTotals::inodes`]: known once hard links are settled.
    more_names: AtomicU64,
    /// Parts not done yet (see the module's documentation).
    left: AtomicUsize,
    /// Not handed to the visitor: counted under an earlier root.
    left_out: AtomicBool,
    /// With an ncdu export: the directory's own fields and what is below.
    tree: Option<Mutex<NcduDir>>,
}

impl Tally {
    /// The tally of a directory not read yet (its reading is the one part
    /// left), its own stat `own` counted.
    pub fn new(own: Option<&Stat>, name: &[u8], ncdu: bool) -> Tally {
        let mut sums = Totals::default();
        let mut tree = ncdu.then(NcduDir::default);
        if let Some(tree) = &mut tree {
            // The name alone until a stat tells more (a subdirectory is
            // stat'ed once open; if that fails, the name is all there is).
            tree.info.extend_from_slice(b"\"name\":");
            json_str(&mut tree.info, name);
        }
        if let Some(st) = own {
            sums.add_stat(st);
            if let Some(tree) = &mut tree {
                tree.set_info(name, st);
            }
        }
        Tally {
            sums: Mutex::new(sums),
            more_names: AtomicU64::new(0),
            left: AtomicUsize::new(1),
            left_out: AtomicBool::new(false),
            tree: tree.map(Mutex::new),
        }
    }

    /// Whether an ncdu tree is built.
    pub fn ncdu(&self) -> bool {
        self.tree.is_some()
    }

    /// Leaves the directory out of the visitor's calls (it was counted
    /// under an earlier root); what it holds still goes to its parent.
    pub fn leave_out(&self) {
        self.left_out.store(true, Ordering::Relaxed);
    }

    /// One more part to wait for (a subdirectory, a held name).
    pub fn hold(&self) {
        self.left.fetch_add(1, Ordering::AcqRel);
    }

    /// Adds what a worker counted here.
    pub fn add(&self, here: &Totals) {
        *lock(&self.sums) += *here;
    }

    /// With an ncdu export: the directory's tree, to add to.
    pub fn tree(&self) -> Option<MutexGuard<'_, NcduDir>> {
        self.tree.as_ref().map(lock)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another worker panicked; the walk is
    // reported as failed then, and the sums stay consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The names met of one hard-linked inode, while the walk runs.
struct LinkNames {
    /// Size, blocks and mode, from the stat of one of its names (a further
    /// name counted from `d_ino` may come first: see
    /// [`Breakdown::link_known`]).
    sizes: Option<(u64, u64, u32)>,
    /// The path that sorts first, and its directory.
    first: (Vec<u8>, Arc<DirNode>),
    /// The directory of each name (each holds back one part of it).
    holders: Vec<Arc<DirNode>>,
}

/// The breakdown of one root's walk: where finished directories go, and
/// the hard-linked inodes waiting for their attribution.
pub(crate) struct Breakdown {
    visitor: Arc<dyn DirVisitor>,
    pub ncdu: bool,
    /// [`DirVisitor::files_to`], asked once.
    pub files_to: Option<usize>,
    /// Split in locks by inode, as [`crate::links`]: every name of a tree
    /// of hard links comes here.
    links: Box<[Mutex<FxHashMap<InodeKey, LinkNames>>]>,
}

impl std::fmt::Debug for Breakdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Breakdown")
            .field("ncdu", &self.ncdu)
            .finish_non_exhaustive()
    }
}

impl Breakdown {
    pub fn new(visitor: Arc<dyn DirVisitor>) -> Breakdown {
        Breakdown {
            ncdu: visitor.ncdu(),
            files_to: visitor.files_to(),
            visitor,
            links: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    /// A name `path` of the hard-linked inode `st`, in `dir` (whose
    /// reading is not done): `dir` waits until the inode is settled.
    pub fn link(&self, dir: &Arc<DirNode>, path: &[u8], st: &Stat) {
        let sizes = (st.size, st.blocks, st.mode);
        self.name((st.dev, st.ino), Some(sizes), dir, path);
    }

    /// A further name `path` of the hard-linked inode `key`, counted from
    /// its `d_ino` without a stat: the inode's stat under another name
    /// gives its sizes (in the registry already, or soon: another worker
    /// may still be on its way from the stat to [`link`](Self::link)).
    pub fn link_known(&self, dir: &Arc<DirNode>, path: &[u8], key: InodeKey) {
        self.name(key, None, dir, path);
    }

    fn name(&self, key: InodeKey, sizes: Option<(u64, u64, u32)>, dir: &Arc<DirNode>, path: &[u8]) {
        let tally = dir.tally().expect("a breakdown tallies every directory");
        tally.hold();
        let mut links = lock(&self.links[shard_of(&key)]);
        let names = links.entry(key).or_insert_with(|| LinkNames {
            sizes,
            first: (path.to_owned(), Arc::clone(dir)),
            holders: Vec::new(),
        });
        names.sizes = names.sizes.or(sizes);
        names.holders.push(Arc::clone(dir));
        if path < names.first.0.as_slice() {
            names.first = (path.to_owned(), Arc::clone(dir));
        }
    }

    /// One part of `dir` is done; when it was the last, hands `dir` to the
    /// visitor and counts it done in its parent, and so on up.
    pub fn done(&self, dir: &Arc<DirNode>) {
        let mut cur = dir;
        loop {
            let tally = cur.tally().expect("a breakdown tallies every directory");
            if tally.left.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            let totals = std::mem::take(&mut *lock(&tally.sums));
            let more_names = tally.more_names.load(Ordering::Acquire);
            let tree = tally.tree().map(|mut t| {
                // Kept until the walk ends: without the room grown for more.
                t.entries.shrink_to_fit();
                t.dirs.shrink_to_fit();
                t.totals = totals;
                std::mem::take(&mut *t)
            });
            let finished = DirTotals {
                node: cur,
                totals: &totals,
                more_names,
                tree: RefCell::new(tree),
            };
            if !tally.left_out.load(Ordering::Relaxed) {
                self.visitor.dir(&finished);
            }
            let tree = finished.tree.into_inner();
            let Some(parent) = cur.parent() else {
                return;
            };
            let ptally = parent.tally().expect("a breakdown tallies every directory");
            ptally.add(&totals);
            ptally.more_names.fetch_add(more_names, Ordering::AcqRel);
            if let (Some(mut ptree), Some(tree)) = (ptally.tree(), tree) {
                ptree.dirs.push(tree);
            }
            cur = parent;
        }
    }

    /// Hands `file` to the visitor if it asked for entries that deep.
    pub fn file(&self, file: &FileTotals<'_>) {
        if self.files_to.is_some_and(|max| file.depth() <= max) {
            self.visitor.file(file);
        }
    }

    /// Settles the hard-linked inodes at the end of the walk: each not in
    /// `seen` (counted under an earlier root) is counted in the directory
    /// of its first path; then the directories holding names go on.
    pub fn settle(&self, seen: &HashSet<InodeKey>) {
        let links = self
            .links
            .iter()
            .flat_map(|shard| std::mem::take(&mut *lock(shard)));
        let mut holders = Vec::new();
        for (key, names) in links {
            // Each name is one more than the inode counts as, except the
            // one it is counted under, if it is.
            for dir in &names.holders {
                let tally = dir.tally().expect("a breakdown tallies every directory");
                tally.more_names.fetch_add(1, Ordering::AcqRel);
            }
            // No sizes: no name of it was counted with its stat (one on
            // another filesystem, under -x), nor in the totals.
            if let Some((size, blocks, mode)) = names.sizes.filter(|_| !seen.contains(&key)) {
                let mut sizes = Totals::default();
                sizes.add_sizes(size, blocks);
                let dir = &names.first.1;
                let tally = dir.tally().expect("a breakdown tallies every directory");
                tally.add(&sizes);
                tally.more_names.fetch_sub(1, Ordering::AcqRel);
                let first = FileTotals::new(&names.first.0, dir.depth() + 1, mode, size, blocks);
                self.file(&first);
            }
            holders.extend(names.holders);
        }
        for dir in holders {
            self.done(&dir);
        }
    }
}

/// A directory in ncdu's export format: `[{its fields}, {entry}...,
/// [subdirectory]...]`, built as the walk goes (entries as JSON text,
/// subdirectories as they finish), with the totals of its subtree. The
/// tree of `--export`, and what `--interactive` browses (see
/// [`DirTotals::take_tree`]; reading it: [`NcduDir::entries`]). Example:
/// [`NcduDir::name`].
#[derive(Debug, Default)]
pub struct NcduDir {
    pub(crate) info: Vec<u8>,
    /// Whether reading it failed, whole or in part.
    pub(crate) read_error: bool,
    /// `,{entry}` for each entry that is not a subdirectory read.
    pub(crate) entries: Vec<u8>,
    pub(crate) dirs: Vec<NcduDir>,
    /// The subtree's totals, once final.
    pub(crate) totals: Totals,
}

impl NcduDir {
    /// The directory's own fields, from its stat (with its device, which
    /// ncdu needs to tell hard links on different filesystems apart).
    pub(crate) fn set_info(&mut self, name: &[u8], st: &Stat) {
        self.info.clear();
        ncdu_fields(&mut self.info, name, st, true);
    }

    /// Marks that the directory could not be read (whole or in part).
    pub(crate) fn read_error(&mut self) {
        self.read_error = true;
    }

    /// Appends entries written by [`ncdu_entry`].
    pub(crate) fn add_entries(&mut self, json: &[u8]) {
        self.entries.extend_from_slice(json);
    }

    /// Writes the tree, one directory after another from an explicit
    /// stack (a tree thousands of levels deep would overflow the call
    /// stack).
    fn write(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut stack: Vec<(&NcduDir, usize)> = vec![(self, 0)];
        while let Some((dir, next)) = stack.pop() {
            if next == 0 {
                w.write_all(b"[{")?;
                w.write_all(&dir.info)?;
                if dir.read_error {
                    w.write_all(b",\"read_error\":true")?;
                }
                w.write_all(b"}")?;
                w.write_all(&dir.entries)?;
            }
            match dir.dirs.get(next) {
                Some(sub) => {
                    w.write_all(b",\n")?;
                    stack.push((dir, next + 1));
                    stack.push((sub, 0));
                }
                None => w.write_all(b"]")?,
            }
        }
        Ok(())
    }
}

impl Drop for NcduDir {
    /// Frees the subdirectories from an explicit stack: the default drop
    /// recurses once per level, and a chain of tens of thousands of
    /// directories would overflow a worker thread's stack.
    fn drop(&mut self) {
        let mut stack = std::mem::take(&mut self.dirs);
        while let Some(mut dir) = stack.pop() {
            stack.append(&mut dir.dirs);
        }
    }
}

/// Writes `,{fields}` of an entry that is not a directory read (a file,
/// a symlink, a directory on another filesystem when `other_fs`).
pub(crate) fn ncdu_entry(out: &mut Vec<u8>, name: &[u8], st: &Stat, other_fs: bool) {
    out.extend_from_slice(b",{");
    ncdu_fields(out, name, st, false);
    if other_fs {
        out.extend_from_slice(b",\"excluded\":\"otherfs\"");
    } else if st.mode & libc::S_IFMT != libc::S_IFREG && !st.is_dir() {
        out.extend_from_slice(b",\"notreg\":true");
    }
    if st.is_hard_linked() {
        out.extend_from_slice(b",\"hlnkc\":true,\"nlink\":");
        push_number(out, st.nlink);
    }
    out.push(b'}');
}

/// `"name":...,"asize":...,"dsize":...,"ino":...` (and `"dev"`).
fn ncdu_fields(out: &mut Vec<u8>, name: &[u8], st: &Stat, with_dev: bool) {
    out.extend_from_slice(b"\"name\":");
    json_str(out, name);
    out.extend_from_slice(b",\"asize\":");
    push_number(out, st.size);
    out.extend_from_slice(b",\"dsize\":");
    push_number(out, disk_bytes(st.blocks));
    out.extend_from_slice(b",\"ino\":");
    push_number(out, st.ino);
    if with_dev {
        out.extend_from_slice(b",\"dev\":");
        push_number(out, st.dev);
    }
}

/// Appends `n` in decimal. The export writes four numbers per entry, and
/// `write!` through `fmt` took a tenth of its CPU over the plain walk.
fn push_number(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends `bytes` as a JSON string, quotes included, the way ncdu writes
/// names: `"`, `\` and control characters escaped, every other byte as
/// is (names need not be UTF-8; ncdu and gdu read the bytes back).
pub(crate) fn json_str(out: &mut Vec<u8>, bytes: &[u8]) {
    use std::io::Write as _;
    out.push(b'"');
    let mut rest = bytes;
    // Runs of bytes that need no escape are copied whole: most names are
    // one such run.
    while let Some(at) = rest.iter().position(|&b| needs_escape(b)) {
        out.extend_from_slice(&rest[..at]);
        match rest[at] {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// Whether ncdu escapes this byte of a name.
fn needs_escape(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20 || b == 0x7f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_as_ncdu_reads_them() {
        let mut out = Vec::new();
        json_str(&mut out, b"a\"b\\c\n\xff");
        assert_eq!(out, b"\"a\\\"b\\\\c\\u000a\xff\"");
    }
}
