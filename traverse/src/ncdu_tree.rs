//! The tree a breakdown builds for the ncdu export ([`NcduDir`]), and
//! reading and trimming it: the names, sizes and inodes of a directory's
//! entries, its subdirectories, its subtree's totals. The entries stay the
//! JSON text the export writes ([`crate::ncdu_export`]), read back on
//! request, so the tree costs no more memory than the export's.

use std::ops::Range;

use crate::totals::Totals;

/// A directory in ncdu's export format: `[{its fields}, {entry}...,
/// [subdirectory]...]`, built as the walk goes (entries as JSON text,
/// subdirectories as they finish), with the totals of its subtree. The
/// tree of `--export`, and what `--interactive` browses (see
/// [`DirTotals::take_tree`](crate::DirTotals::take_tree); reading it: [`NcduDir::entries`]). Example:
/// [`NcduDir::name`].
#[derive(Debug, Default)]
pub struct NcduDir {
    /// Its own fields as JSON text, without the braces
    /// ([`crate::ncdu_export`] writes them).
    pub(crate) info: Vec<u8>,
    /// Whether reading it failed, whole or in part.
    pub(crate) read_error: bool,
    /// `,{entry}` for each entry that is not a subdirectory read.
    pub(crate) entries: Vec<u8>,
    pub(crate) dirs: Vec<NcduDir>,
    /// The subtree's totals, once final.
    pub(crate) totals: Totals,
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

/// An entry of an [`NcduDir`] that is not a subdirectory read: a file, a
/// symlink or another kind, or a directory on another filesystem (not
/// entered, under `one_file_system`).
///
/// # Example
///
/// ```
/// use traverse::NcduEntry;
/// let e = NcduEntry { name: b"f".to_vec(), size: 5, disk_bytes: 4096, ino: 7,
///                     not_regular: false, other_fs: false, nlink: None,
///                     mtime: None };
/// assert_eq!((e.totals().files, e.totals().bytes), (1, 5));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NcduEntry {
    /// The name, as bytes.
    pub name: Vec<u8>,
    /// Apparent size (`st_size`).
    pub size: u64,
    /// Disk usage (`st_blocks * 512`).
    pub disk_bytes: u64,
    /// Inode number.
    pub ino: u64,
    /// Not a regular file: a symlink, FIFO, socket or device.
    pub not_regular: bool,
    /// A directory on another filesystem, left out.
    pub other_fs: bool,
    /// The link count of a hard-linked inode; `None` for one link.
    pub nlink: Option<u64>,
    /// Modification time, seconds since the epoch, when the stat gave it.
    pub mtime: Option<u64>,
}

impl NcduEntry {
    /// What the entry adds to its directory's totals: one entry (a
    /// regular file in `files`, anything else in `other`: the format does
    /// not tell a symlink from a FIFO) and its sizes, except for a
    /// hard-linked inode, whose sizes count under one of its names only.
    ///
    /// # Example
    ///
    /// ```
    /// use traverse::NcduEntry;
    /// let link = NcduEntry { size: 9, nlink: Some(2), ..NcduEntry::default() };
    /// assert_eq!((link.totals().files, link.totals().bytes), (1, 0));
    /// ```
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        if self.not_regular || self.other_fs {
            t.other = 1;
        } else {
            t.files = 1;
        }
        if self.nlink.is_none() {
            t.bytes = self.size.into();
            t.disk_bytes = self.disk_bytes.into();
        }
        t
    }
}

/// The entries of an [`NcduDir`], in the order the walk met them.
/// Example: [`NcduDir::name`].
#[derive(Clone, Debug)]
pub struct NcduEntries<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Iterator for NcduEntries<'_> {
    type Item = NcduEntry;

    fn next(&mut self) -> Option<NcduEntry> {
        self.next_at().map(|(e, _)| e)
    }
}

impl NcduEntries<'_> {
    /// The next entry and where its text lies.
    fn next_at(&mut self) -> Option<(NcduEntry, Range<usize>)> {
        let start = self.pos;
        let mut p = Parser {
            text: self.text,
            pos: start,
        };
        p.eat(b',')?;
        let mut e = NcduEntry::default();
        p.object(|key, value| match (key, value) {
            (b"name", Value::Str(s)) => e.name = s,
            (b"asize", Value::Num(n)) => e.size = n,
            (b"dsize", Value::Num(n)) => e.disk_bytes = n,
            (b"ino", Value::Num(n)) => e.ino = n,
            (b"nlink", Value::Num(n)) => e.nlink = Some(n),
            (b"mtime", Value::Num(n)) => e.mtime = Some(n),
            (b"notreg", Value::True) => e.not_regular = true,
            (b"excluded", _) => e.other_fs = true,
            _ => {}
        })?;
        self.pos = p.pos;
        Some((e, start..p.pos))
    }
}

impl NcduDir {
    /// The directory's name (the root's: its path as given).
    ///
    /// # Example
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use traverse::{DirTotals, DirVisitor, Ignore, NcduDir, WalkBuilder};
    ///
    /// /// Keeps the root's tree.
    /// #[derive(Default)]
    /// struct Root(Mutex<Option<NcduDir>>);
    /// impl DirVisitor for Root {
    ///     fn dir(&self, dir: &DirTotals<'_>) {
    ///         if dir.depth() == 0 {
    ///             *self.0.lock().unwrap() = dir.take_tree();
    ///         }
    ///     }
    ///     fn ncdu(&self) -> bool {
    ///         true
    ///     }
    /// }
    ///
    /// let tree = tempfile::tempdir()?;
    /// std::fs::write(tree.path().join("f"), b"12345")?;
    /// std::fs::create_dir(tree.path().join("sub"))?;
    /// let root = Arc::new(Root::default());
    /// let summary = WalkBuilder::new().build().run_dirs(tree.path(), &Ignore, root.clone());
    /// let root = root.0.lock().unwrap().take().unwrap();
    /// assert_eq!(root.totals(), &summary.totals);
    /// assert_eq!(root.entries().next().unwrap().name, b"f");
    /// assert_eq!(root.dirs()[0].name(), b"sub");
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn name(&self) -> Vec<u8> {
        let mut name = Vec::new();
        self.fields(|key, value| {
            if let (b"name", Value::Str(s)) = (key, value) {
                name = s;
            }
        });
        name
    }

    /// The directory's device and inode, when its stat succeeded.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(traverse::NcduDir::default().id(), None);
    /// ```
    pub fn id(&self) -> Option<(u64, u64)> {
        let (mut dev, mut ino) = (None, None);
        self.fields(|key, value| match (key, value) {
            (b"dev", Value::Num(n)) => dev = Some(n),
            (b"ino", Value::Num(n)) => ino = Some(n),
            _ => {}
        });
        dev.zip(ino)
    }

    /// The directory's modification time (seconds since the epoch), when
    /// its stat gave one.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(traverse::NcduDir::default().mtime(), None);
    /// ```
    pub fn mtime(&self) -> Option<u64> {
        let mut mtime = None;
        self.fields(|key, value| {
            if let (b"mtime", Value::Num(n)) = (key, value) {
                mtime = Some(n);
            }
        });
        mtime
    }

    fn fields(&self, f: impl FnMut(&[u8], Value)) {
        let mut text = Vec::with_capacity(self.info.len() + 2);
        text.push(b'{');
        text.extend_from_slice(&self.info);
        text.push(b'}');
        let mut p = Parser {
            text: &text,
            pos: 0,
        };
        let _ = p.object(f);
    }

    /// The totals of the directory's whole subtree.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(traverse::NcduDir::default().totals().files, 0);
    /// ```
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Whether reading the directory failed, whole or in part.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(!traverse::NcduDir::default().has_read_error());
    /// ```
    pub fn has_read_error(&self) -> bool {
        self.read_error
    }

    /// The entries that are not subdirectories read (those are
    /// [`dirs`](Self::dirs)). Example: [`NcduDir::name`].
    pub fn entries(&self) -> NcduEntries<'_> {
        NcduEntries {
            text: &self.entries,
            pos: 0,
        }
    }

    /// The subdirectories read. Example: [`NcduDir::name`].
    pub fn dirs(&self) -> &[NcduDir] {
        &self.dirs
    }

    /// A subdirectory, to change.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(traverse::NcduDir::default().dir_mut(0).is_none());
    /// ```
    pub fn dir_mut(&mut self, index: usize) -> Option<&mut NcduDir> {
        self.dirs.get_mut(index)
    }

    /// Adds `dir` as a subdirectory, its totals already counted in this
    /// directory's (a tree taken by [`DirTotals::take_tree`] goes back
    /// into its parent's).
    ///
    /// [`DirTotals::take_tree`]: crate::DirTotals::take_tree
    ///
    /// # Example
    ///
    /// ```
    /// let mut root = traverse::NcduDir::default();
    /// root.push_dir(traverse::NcduDir::default());
    /// assert_eq!(root.dirs().len(), 1);
    /// ```
    pub fn push_dir(&mut self, dir: NcduDir) {
        self.dirs.push(dir);
    }

    /// Removes the subdirectory `index` (this directory's totals are left
    /// as they are: see [`subtract`](Self::subtract)).
    ///
    /// # Example
    ///
    /// ```
    /// let mut root = traverse::NcduDir::default();
    /// root.push_dir(traverse::NcduDir::default());
    /// assert!(root.remove_dir(0).is_some() && root.dirs().is_empty());
    /// ```
    pub fn remove_dir(&mut self, index: usize) -> Option<NcduDir> {
        (index < self.dirs.len()).then(|| self.dirs.remove(index))
    }

    /// Removes the entry named `name` (this directory's totals are left
    /// as they are: see [`subtract`](Self::subtract)).
    ///
    /// # Example
    ///
    /// ```
    /// let mut root = traverse::NcduDir::default();
    /// assert_eq!(root.remove_entry(b"nothing"), None);
    /// ```
    pub fn remove_entry(&mut self, name: &[u8]) -> Option<NcduEntry> {
        let mut it = self.entries();
        while let Some((e, range)) = it.next_at() {
            if e.name == name {
                self.entries.drain(range);
                return Some(e);
            }
        }
        None
    }

    /// Takes `lost` (what was removed below) off the subtree's totals.
    ///
    /// # Example
    ///
    /// ```
    /// let mut root = traverse::NcduDir::default();
    /// let mut lost = traverse::Totals::default();
    /// lost.files = 1;
    /// root.subtract(&lost);
    /// assert_eq!(root.totals().files, 0);
    /// ```
    pub fn subtract(&mut self, lost: &Totals) {
        let t = &mut self.totals;
        t.files = t.files.saturating_sub(lost.files);
        t.dirs = t.dirs.saturating_sub(lost.dirs);
        t.symlinks = t.symlinks.saturating_sub(lost.symlinks);
        t.other = t.other.saturating_sub(lost.other);
        t.bytes = t.bytes.saturating_sub(lost.bytes);
        t.disk_bytes = t.disk_bytes.saturating_sub(lost.disk_bytes);
        t.errors = t.errors.saturating_sub(lost.errors);
    }
}

/// A field's value, of the kinds the export writes.
enum Value {
    Str(Vec<u8>),
    Num(u64),
    True,
}

/// Reads back the JSON the export writes (`ncdu_export::ncdu_fields` and
/// `ncdu_entry`): flat objects of strings, numbers and `true`.
struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.text.get(self.pos) == Some(&b)).then(|| self.pos += 1)
    }

    /// `{"key":value,...}`, each field handed to `f`.
    fn object(&mut self, mut f: impl FnMut(&[u8], Value)) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            let value = match self.text.get(self.pos)? {
                b'"' => Value::Str(self.string()?),
                b't' => {
                    let end = self.pos + 4;
                    (self.text.get(self.pos..end)? == b"true").then_some(())?;
                    self.pos = end;
                    Value::True
                }
                _ => Value::Num(self.number()?),
            };
            f(&key, value);
            if self.eat(b'}').is_some() {
                return Some(());
            }
            self.eat(b',')?;
        }
    }

    /// A string as `json_str` writes it: `\"`, `\\` and `\u00XX`.
    fn string(&mut self) -> Option<Vec<u8>> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let b = *self.text.get(self.pos)?;
            self.pos += 1;
            match b {
                b'"' => return Some(out),
                b'\\' => {
                    let e = *self.text.get(self.pos)?;
                    self.pos += 1;
                    if e == b'u' {
                        let hex = std::str::from_utf8(self.text.get(self.pos..self.pos + 4)?);
                        out.push(u8::from_str_radix(hex.ok()?, 16).ok()?);
                        self.pos += 4;
                    } else {
                        out.push(e);
                    }
                }
                b => out.push(b),
            }
        }
    }

    fn number(&mut self) -> Option<u64> {
        let start = self.pos;
        while self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        std::str::from_utf8(&self.text[start..self.pos])
            .ok()?
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ncdu_export::json_str;

    #[test]
    fn entries_read_back_what_the_export_writes() {
        let mut dir = NcduDir::default();
        let name = b"a\"b\\c\n\xff";
        let mut text = b",{\"name\":".to_vec();
        json_str(&mut text, name);
        text.extend_from_slice(b",\"asize\":5,\"dsize\":4096,\"ino\":9}");
        text.extend_from_slice(
            b",{\"name\":\"l\",\"asize\":3,\"dsize\":0,\"ino\":10,\"notreg\":true,\"hlnkc\":true,\"nlink\":2}",
        );
        dir.add_entries(&text);
        let entries: Vec<_> = dir.entries().collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].name, name);
        assert_eq!(
            (entries[0].size, entries[0].disk_bytes, entries[0].ino),
            (5, 4096, 9)
        );
        assert!(entries[1].not_regular && entries[1].nlink == Some(2));
        assert_eq!(dir.remove_entry(name).map(|e| e.ino), Some(9));
        assert_eq!(dir.entries().map(|e| e.name).collect::<Vec<_>>(), [b"l"]);
    }
}
