//! Reading a saved scan in ncdu's export format (what `--export`, `ncdu
//! -o` and `gdu -o` write) back into an [`NcduDir`], and changing a tree
//! in place (a directory scanned again). Any JSON is read, without
//! recursion (a chain of tens of thousands of directories is an array
//! nested as deep); the fields the tree uses are kept, in the form the
//! export writes them, so [`NcduDir::entries`] reads them back.

use rustc_hash::FxHashSet;

use crate::ncdu_export::json_str;
use crate::ncdu_tree::NcduDir;
use crate::totals::Totals;

/// A JSON value, as far as the tree needs it.
#[derive(Debug)]
enum Value {
    Str(Vec<u8>),
    Num(u64),
    Bool(bool),
    /// `null`, a negative or fractional number: present, but not used.
    Other,
}

/// The fields of an ncdu item (a directory's first object, or an entry).
#[derive(Debug, Default)]
struct Item {
    name: Vec<u8>,
    asize: u64,
    dsize: u64,
    ino: u64,
    dev: Option<u64>,
    mtime: Option<u64>,
    nlink: Option<u64>,
    hard_link: bool,
    not_regular: bool,
    read_error: bool,
    excluded: Option<Vec<u8>>,
}

impl Item {
    fn set(&mut self, key: &[u8], value: Value) {
        match (key, value) {
            (b"name", Value::Str(s)) => self.name = s,
            (b"asize", Value::Num(n)) => self.asize = n,
            (b"dsize", Value::Num(n)) => self.dsize = n,
            (b"ino", Value::Num(n)) => self.ino = n,
            (b"dev", Value::Num(n)) => self.dev = Some(n),
            (b"mtime", Value::Num(n)) => self.mtime = Some(n),
            (b"nlink", Value::Num(n)) => self.nlink = Some(n),
            (b"hlnkc", Value::Bool(b)) => self.hard_link = b,
            (b"notreg", Value::Bool(b)) => self.not_regular = b,
            (b"read_error", Value::Bool(b)) => self.read_error = b,
            (b"excluded", Value::Str(s)) => self.excluded = Some(s),
            _ => {}
        }
    }

    /// The fields as the export writes them, without braces.
    fn write(&self, out: &mut Vec<u8>, dev: Option<u64>) {
        out.extend_from_slice(b"\"name\":");
        json_str(out, &self.name);
        for (key, n) in [
            (&b",\"asize\":"[..], Some(self.asize)),
            (b",\"dsize\":", Some(self.dsize)),
            (b",\"ino\":", Some(self.ino)),
            (b",\"dev\":", dev),
            (b",\"mtime\":", self.mtime),
        ] {
            if let Some(n) = n {
                out.extend_from_slice(key);
                out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            }
        }
    }
}

/// What the reader is in: a directory's array (its tree and device) or
/// an array of no interest (the file's outer one).
enum Frame {
    Outer,
    Dir(NcduDir, u64),
}

impl NcduDir {
    /// Reads a saved scan: `[1, 2, {metadata}, [root...]]`, each directory
    /// `[{its fields}, {entry}..., [subdirectory]...]`. The totals are
    /// summed as the walk sums them: a hard-linked inode's sizes once (its
    /// first name in the file), a directory that could not be read
    /// counted as an error. The error says what is wrong and at which
    /// byte.
    ///
    /// # Example
    ///
    /// ```
    /// let text = br#"[1,2,{"progname":"ncdu"},
    ///   [{"name":"/srv","asize":4096,"dsize":4096,"dev":1,"ino":2},
    ///    {"name":"f","asize":10,"dsize":4096,"ino":3},
    ///    [{"name":"d","asize":4096,"dsize":4096,"ino":4,"read_error":true}]]]"#;
    /// let root = traverse::NcduDir::read_export(text)?;
    /// assert_eq!(root.name(), b"/srv");
    /// assert_eq!((root.totals().files, root.totals().dirs, root.totals().bytes), (1, 2, 8202));
    /// assert!(root.dirs()[0].has_read_error());
    /// # Ok::<_, String>(())
    /// ```
    pub fn read_export(text: &[u8]) -> Result<NcduDir, String> {
        let mut r = Reader { text, pos: 0 };
        let mut stack: Vec<Frame> = Vec::new();
        let mut root = None;
        let mut links = FxHashSet::default();
        r.space();
        r.expect(b'[')?;
        stack.push(Frame::Outer);
        while let Some(top) = stack.last_mut() {
            r.space();
            if r.eat(b']') {
                match stack.pop() {
                    Some(Frame::Dir(dir, _)) => match stack.last_mut() {
                        Some(Frame::Dir(parent, _)) => {
                            parent.totals += dir.totals;
                            parent.dirs.push(dir);
                        }
                        _ => root = root.or(Some(dir)),
                    },
                    _ => break,
                }
                r.space();
                r.eat(b',');
                continue;
            }
            match r.peek() {
                Some(b'[') => {
                    r.pos += 1;
                    r.space();
                    let parent_dev = match top {
                        Frame::Dir(_, dev) => *dev,
                        Frame::Outer => 0,
                    };
                    let item = r.object()?;
                    let dev = item.dev.unwrap_or(parent_dev);
                    let mut dir = NcduDir::default();
                    item.write(&mut dir.info, Some(dev));
                    dir.read_error = item.read_error;
                    dir.totals.dirs = 1;
                    dir.totals.bytes = item.asize.into();
                    dir.totals.disk_bytes = item.dsize.into();
                    dir.totals.errors = u64::from(item.read_error);
                    stack.push(Frame::Dir(dir, dev));
                }
                Some(b'{') => {
                    let item = r.object()?;
                    if let Frame::Dir(dir, dev) = top {
                        add_entry(dir, &item, *dev, &mut links);
                    }
                }
                Some(_) => {
                    r.value()?;
                }
                None => return Err(r.error("the file ends inside an array")),
            }
            r.space();
            r.eat(b',');
        }
        root.ok_or_else(|| "no directory in the file (not an ncdu export?)".to_owned())
    }

    /// Adds `more` to the subtree's totals (see [`subtract`](Self::subtract)).
    ///
    /// # Example
    ///
    /// ```
    /// let mut root = traverse::NcduDir::default();
    /// let mut more = traverse::Totals::default();
    /// more.files = 2;
    /// root.add(&more);
    /// assert_eq!(root.totals().files, 2);
    /// ```
    pub fn add(&mut self, more: &Totals) {
        self.totals += *more;
    }

    /// Replaces the entries, subdirectories and totals with `other`'s (the
    /// same directory scanned again), keeping the name.
    ///
    /// # Example
    ///
    /// ```
    /// let mut dir = traverse::NcduDir::default();
    /// let mut again = traverse::NcduDir::default();
    /// again.push_dir(traverse::NcduDir::default());
    /// dir.replace_contents(again);
    /// assert_eq!(dir.dirs().len(), 1);
    /// ```
    pub fn replace_contents(&mut self, mut other: NcduDir) {
        self.entries = std::mem::take(&mut other.entries);
        self.dirs = std::mem::take(&mut other.dirs);
        self.totals = other.totals;
        self.read_error = other.read_error;
    }
}

/// Adds an entry of the file to `dir`: its text as the export writes it,
/// its totals (a hard-linked inode's sizes once in the whole tree).
fn add_entry(dir: &mut NcduDir, item: &Item, dev: u64, links: &mut FxHashSet<(u64, u64)>) {
    let out = &mut dir.entries;
    out.extend_from_slice(b",{");
    item.write(out, None);
    if let Some(why) = &item.excluded {
        out.extend_from_slice(b",\"excluded\":");
        json_str(out, why);
    } else if item.not_regular {
        out.extend_from_slice(b",\"notreg\":true");
    }
    let linked = item.hard_link || item.nlink.is_some_and(|n| n > 1);
    if linked {
        out.extend_from_slice(b",\"hlnkc\":true,\"nlink\":");
        out.extend_from_slice(
            itoa::Buffer::new()
                .format(item.nlink.unwrap_or(2))
                .as_bytes(),
        );
    }
    out.push(b'}');
    let t = &mut dir.totals;
    if item.not_regular || item.excluded.is_some() {
        t.other += 1;
    } else {
        t.files += 1;
    }
    if !linked || links.insert((dev, item.ino)) {
        t.bytes += u128::from(item.asize);
        t.disk_bytes += u128::from(item.dsize);
    }
}

/// A reader of JSON text.
struct Reader<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {}", self.pos)
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        let found = self.peek() == Some(b);
        self.pos += usize::from(found);
        found
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", b as char)))
        }
    }

    /// An object of scalar fields (ncdu's items have no nested values).
    fn object(&mut self) -> Result<Item, String> {
        let mut item = Item::default();
        self.expect(b'{')?;
        self.space();
        if self.eat(b'}') {
            return Ok(item);
        }
        loop {
            self.space();
            let key = self.string()?;
            self.space();
            self.expect(b':')?;
            self.space();
            let value = self.value()?;
            item.set(&key, value);
            self.space();
            if self.eat(b'}') {
                return Ok(item);
            }
            self.expect(b',')?;
        }
    }

    /// A scalar value, or an object of them (the file's metadata).
    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(b'"') => self.string().map(Value::Str),
            Some(b'{') => self.object().map(|_| Value::Other),
            Some(b't') => self.word(b"true", Value::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Bool(false)),
            Some(b'n') => self.word(b"null", Value::Other),
            Some(b'-' | b'0'..=b'9') => Ok(self.number()),
            _ => Err(self.error("expected a value")),
        }
    }

    fn word(&mut self, word: &[u8], value: Value) -> Result<Value, String> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn number(&mut self) -> Value {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
        {
            self.pos += 1;
        }
        std::str::from_utf8(&self.text[start..self.pos])
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(Value::Other, Value::Num)
    }

    /// A string's bytes: ncdu writes a name's bytes as they are (any
    /// encoding), escaping quotes, backslashes and control characters.
    fn string(&mut self) -> Result<Vec<u8>, String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let b = self
                .peek()
                .ok_or_else(|| self.error("unterminated string"))?;
            self.pos += 1;
            match b {
                b'"' => return Ok(out),
                b'\\' => {
                    let e = self
                        .peek()
                        .ok_or_else(|| self.error("unterminated string"))?;
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let hex = self.text.get(self.pos..self.pos + 4);
                            let code = hex
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .ok_or_else(|| self.error("bad \\u escape"))?;
                            self.pos += 4;
                            match u8::try_from(code) {
                                Ok(byte) => out.push(byte),
                                Err(_) => {
                                    let c = char::from_u32(code).unwrap_or('\u{fffd}');
                                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                                }
                            }
                        }
                        other => out.push(other),
                    }
                }
                b => out.push(b),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root's tree as a walk builds it for the export.
    fn walk_tree(root: &std::path::Path) -> NcduDir {
        use crate::{DirTotals, DirVisitor, Ignore, WalkBuilder};
        use std::sync::{Arc, Mutex};
        #[derive(Default)]
        struct Root(Mutex<Option<NcduDir>>);
        impl DirVisitor for Root {
            fn dir(&self, dir: &DirTotals<'_>) {
                if dir.depth() == 0 {
                    *self.0.lock().unwrap() = dir.take_tree();
                }
            }
            fn ncdu(&self) -> bool {
                true
            }
        }
        let keep = Arc::new(Root::default());
        WalkBuilder::new()
            .build()
            .run_dirs(root, &Ignore, keep.clone());
        let tree = keep.0.lock().unwrap().take().unwrap();
        tree
    }

    fn export_text(tree: &NcduDir) -> Vec<u8> {
        let mut text = b"[1,2,{\"progname\":\"traverse\"},\n".to_vec();
        tree.write(&mut text).unwrap();
        text.push(b']');
        text
    }

    /// What the export writes, read back, is the same tree with the same
    /// totals and entries; with a hard link, the same root totals.
    #[test]
    fn an_export_reads_back_whole() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(tree.path().join("f\n\"q\""), b"12345").unwrap();
        std::fs::create_dir_all(tree.path().join("a/b")).unwrap();
        std::fs::write(tree.path().join("a/b/g"), vec![0; 9000]).unwrap();
        std::os::unix::fs::symlink("g", tree.path().join("a/b/l")).unwrap();
        let walked = walk_tree(tree.path());
        let read = NcduDir::read_export(&export_text(&walked)).unwrap();
        let mut stack = vec![(&walked, &read)];
        while let Some((w, r)) = stack.pop() {
            assert_eq!(w.name(), r.name());
            assert_eq!(w.totals().bytes, r.totals().bytes);
            assert_eq!(w.totals().disk_bytes, r.totals().disk_bytes);
            assert_eq!(w.totals().dirs, r.totals().dirs);
            let entries = |d: &NcduDir| d.entries().collect::<Vec<_>>();
            assert_eq!(entries(w), entries(r));
            assert_eq!(w.dirs().len(), r.dirs().len());
            stack.extend(w.dirs().iter().zip(r.dirs()));
        }
        std::fs::hard_link(tree.path().join("a/b/g"), tree.path().join("a/h")).unwrap();
        let walked = walk_tree(tree.path());
        let read = NcduDir::read_export(&export_text(&walked)).unwrap();
        assert_eq!(walked.totals().bytes, read.totals().bytes);
        assert_eq!(walked.totals().files, read.totals().files);
    }

    #[test]
    fn bad_files_say_where() {
        assert!(NcduDir::read_export(b"[1,2,{}]")
            .unwrap_err()
            .contains("no directory"));
        let err = NcduDir::read_export(b"[1,2,{},[{\"name\":\"x\"},{\"name\":]]").unwrap_err();
        assert!(err.contains("at byte 30"), "{err}");
    }

    /// 100 000 levels: no recursion.
    #[test]
    fn deep_trees_read_without_recursion() {
        let depth = 100_000;
        let mut text = b"[1,2,{}".to_vec();
        for _ in 0..depth {
            text.extend_from_slice(b",[{\"name\":\"d\",\"asize\":1,\"dsize\":0}");
        }
        text.extend(std::iter::repeat_n(b']', depth + 1));
        let root = NcduDir::read_export(&text).unwrap();
        assert_eq!(root.totals().dirs, depth as u64);
    }
}
