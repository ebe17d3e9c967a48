//! The text of ncdu's export format (what `ncdu -o` writes and `ncdu -f`
//! and `gdu -f` read), built as the walk goes: the fields of each entry
//! and of each directory, names escaped as ncdu reads them, and a tree
//! ([`NcduDir`]) written out whole.

use std::io::{self, Write};

use crate::ncdu_tree::NcduDir;
use crate::sys::Stat;
use crate::totals::disk_bytes;

impl NcduDir {
    /// A directory known by its name alone, until a stat tells more.
    pub(crate) fn named(name: &[u8]) -> NcduDir {
        let mut dir = NcduDir::default();
        dir.info.extend_from_slice(b"\"name\":");
        json_str(&mut dir.info, name);
        dir
    }

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
    pub(crate) fn write(&self, w: &mut dyn Write) -> io::Result<()> {
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

/// `"name":...,"asize":...,"dsize":...,"ino":...` (and `"dev"`), and
/// `"mtime"` where the stat gave one (ncdu's extended field, which the
/// browser sorts by).
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
    if st.mtime.sec > 0 {
        out.extend_from_slice(b",\"mtime\":");
        push_number(out, st.mtime.sec);
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
