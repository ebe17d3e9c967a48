//! A row of the listing, the order of rows, and inserting rows into a
//! sorted listing at the cost of what is inserted (the scan adds the
//! directories of the first level one by one: rebuilding and re-sorting
//! every row each time made a root of thousands of subdirectories hang).

use std::cmp::Ordering;

use traverse::{NcduDir, NcduEntry, Totals};

/// What rows are sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// Largest first.
    Size,
    /// By name, bytewise.
    Name,
    /// Most entries first.
    Count,
    /// Most recently modified first.
    Mtime,
}

/// The order of rows: a key, reversed when the person asks twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    pub key: Key,
    pub reverse: bool,
}

impl Sort {
    /// Rows in this order (ties by name), sizes as `disk` says.
    pub fn cmp(&self, a: &Row, b: &Row, disk: bool) -> Ordering {
        let by = match self.key {
            Key::Size => b.size(disk).cmp(&a.size(disk)),
            Key::Name => Ordering::Equal,
            Key::Count => b.count.cmp(&a.count),
            Key::Mtime => b.mtime.cmp(&a.mtime),
        };
        let o = by.then_with(|| a.name.cmp(&b.name));
        if self.reverse {
            o.reverse()
        } else {
            o
        }
    }

    /// The same key again reverses the order; another key starts in its
    /// natural order.
    pub fn pressed(self, key: Key) -> Sort {
        Sort {
            key,
            reverse: key == self.key && !self.reverse,
        }
    }
}

/// One line of the listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub name: Vec<u8>,
    /// The subdirectory's index in its parent, or `None` for an entry.
    pub dir: Option<usize>,
    /// Apparent size.
    pub bytes: u128,
    /// Disk usage.
    pub disk: u128,
    /// Entries in the subtree (1 for a file).
    pub count: u64,
    /// The inode the walk saw (an entry's; a directory's is in its tree).
    pub ino: u64,
    pub not_regular: bool,
    /// A directory on another filesystem, not entered.
    pub other_fs: bool,
    /// The link count of a hard-linked file.
    pub nlink: Option<u64>,
    /// A directory that could not be read, whole or in part.
    pub read_error: bool,
    /// Modification time (seconds since the epoch), when known.
    pub mtime: Option<u64>,
}

/// The entries of a subtree (the directory itself included).
pub fn count(t: &Totals) -> u64 {
    t.files + t.dirs + t.symlinks + t.other
}

impl Row {
    /// The size shown: disk usage or apparent size.
    pub fn size(&self, disk: bool) -> u128 {
        if disk {
            self.disk
        } else {
            self.bytes
        }
    }

    /// The row of subdirectory `index`, `d`.
    pub fn of_dir(index: usize, d: &NcduDir) -> Row {
        let t = d.totals();
        Row {
            name: d.name(),
            dir: Some(index),
            bytes: t.bytes,
            disk: t.disk_bytes,
            count: count(t),
            ino: d.id().map_or(0, |(_, ino)| ino),
            not_regular: false,
            other_fs: false,
            nlink: None,
            read_error: d.has_read_error() || t.errors > 0,
            mtime: d.mtime(),
        }
    }

    /// The row of an entry that is not a subdirectory read.
    pub fn of_entry(e: NcduEntry) -> Row {
        Row {
            bytes: e.size.into(),
            disk: e.disk_bytes.into(),
            count: 1,
            ino: e.ino,
            not_regular: e.not_regular,
            other_fs: e.other_fs,
            nlink: e.nlink,
            read_error: false,
            mtime: e.mtime,
            dir: None,
            name: e.name,
        }
    }

    /// Whether the name starts with a dot.
    pub fn hidden(&self) -> bool {
        self.name.first() == Some(&b'.')
    }
}

/// Inserts `new` into `rows`, sorted by `sort`, in time proportional to
/// what is inserted when it is little (a binary search and a move each),
/// or to one pass over the rows when it is much. Returns how many were
/// inserted at or before `at` (so a selection at `at` can follow its row).
pub fn insert_sorted(
    rows: &mut Vec<Row>,
    mut new: Vec<Row>,
    sort: Sort,
    disk: bool,
    at: usize,
) -> usize {
    let cmp = |a: &Row, b: &Row| sort.cmp(a, b, disk);
    new.sort_by(cmp);
    let mut before = 0;
    if new.len() <= 8 {
        for row in new {
            let pos = rows.partition_point(|r| cmp(r, &row) != Ordering::Greater);
            if pos <= at + before {
                before += 1;
            }
            rows.insert(pos, row);
        }
        return before;
    }
    let old = std::mem::replace(rows, Vec::with_capacity(rows.len() + new.len()));
    let mut old = old.into_iter().peekable();
    let mut new = new.into_iter().peekable();
    let mut taken_old = 0;
    loop {
        let take_new = match (old.peek(), new.peek()) {
            (Some(o), Some(n)) => cmp(o, n) == Ordering::Greater,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if take_new {
            if taken_old <= at {
                before += 1;
            }
            rows.extend(new.next());
        } else {
            match old.next() {
                Some(o) => {
                    taken_old += 1;
                    rows.push(o);
                }
                None => break,
            }
        }
    }
    before
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, bytes: u128) -> Row {
        Row {
            name: name.as_bytes().to_vec(),
            dir: None,
            bytes,
            disk: bytes / 2,
            count: 1,
            ino: 0,
            not_regular: false,
            other_fs: false,
            nlink: None,
            read_error: false,
            mtime: None,
        }
    }

    /// Inserting in batches of every size gives what one sort of all
    /// rows gives, and the count before a position follows the row there.
    #[test]
    fn insertion_equals_a_full_sort() {
        let all: Vec<Row> = (0..200u32)
            .map(|i| row(&format!("n{}", (i * 37) % 101), u128::from((i * 7919) % 53)))
            .collect();
        for sort in [Key::Size, Key::Name].map(|key| Sort {
            key,
            reverse: false,
        }) {
            for batch in [1, 3, 8, 9, 50, 200] {
                let mut rows = Vec::new();
                for chunk in all.chunks(batch) {
                    let at = rows.len() / 2;
                    let kept = rows.get(at).cloned();
                    let before = insert_sorted(&mut rows, chunk.to_vec(), sort, false, at);
                    if let Some(kept) = kept {
                        assert_eq!(rows[at + before], kept, "batch {batch}");
                    }
                }
                let mut want = all.clone();
                want.sort_by(|a, b| sort.cmp(a, b, false));
                assert_eq!(rows, want, "batch {batch}");
            }
        }
    }

    #[test]
    fn the_same_key_again_reverses() {
        let s = Sort {
            key: Key::Size,
            reverse: false,
        };
        assert!(s.pressed(Key::Size).reverse);
        assert!(!s.pressed(Key::Size).pressed(Key::Size).reverse);
        assert!(!s.pressed(Key::Size).pressed(Key::Name).reverse);
    }
}
