//! A line of the per-directory outputs (`-d N`, `--top N`, `--tree`),
//! and the order `du` prints them in. Apart from the outputs that make
//! them (`dirs`) and the picture that draws them (`tree`), which both use
//! it.

use std::cmp::Ordering;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use traverse::{ListingOrder, Totals};

/// The text of `lines`: each a JSON object, or a du line of `size(line)`
/// (`human`: as `du -h`).
pub fn text(lines: Vec<Line>, json: bool, human: bool, size: impl Fn(&Line) -> u128) -> String {
    let mut text = String::new();
    for l in lines {
        if json {
            text.push_str(&crate::output::json_dir(&l.path, l.depth, &l.totals));
        } else {
            text.push_str(&crate::output::human_dir(&l.path, size(&l), human));
        }
    }
    text
}

/// A directory's line, or a file's (`-a`).
pub struct Line {
    pub path: PathBuf,
    pub depth: usize,
    pub totals: Totals,
    /// Entries as `du --inodes` counts them.
    pub inodes: u64,
    /// Where du prints it, when the walk said (not for a root's line made
    /// from the totals alone).
    pub order: Option<ListingOrder>,
}

/// The order du prints a tree in: a directory after everything below it,
/// the entries of a directory in the order fts reads them
/// ([`ListingOrder`]). A line the walk gave no order (a root's) goes by
/// its names below the root: by name, after everything below it.
pub fn du_order(a: &Line, b: &Line) -> Ordering {
    if let (Some(x), Some(y)) = (&a.order, &b.order) {
        return x.cmp(y);
    }
    let (na, nb) = (names_below(a), names_below(b));
    for (x, y) in na.iter().zip(&nb) {
        match x.cmp(y) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    nb.len().cmp(&na.len())
}

/// The names of `line`'s path below its root (its last `depth` ones).
fn names_below(line: &Line) -> Vec<&[u8]> {
    let mut names: Vec<&[u8]> = line
        .path
        .as_os_str()
        .as_bytes()
        .rsplit(|&b| b == b'/')
        .take(line.depth)
        .collect();
    names.reverse();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(path: &str, depth: usize) -> Line {
        Line {
            path: PathBuf::from(path),
            depth,
            totals: Totals::default(),
            inodes: 0,
            order: None,
        }
    }

    #[test]
    fn du_order_puts_children_first_and_siblings_by_name() {
        let mut lines = [
            l("r/x", 0),
            l("r/x/b", 1),
            l("r/x/a/z", 2),
            l("r/x/a", 1),
            l("r/x/a/c", 2),
        ];
        lines.sort_by(du_order);
        let paths: Vec<_> = lines.iter().map(|l| l.path.to_str().unwrap()).collect();
        assert_eq!(paths, ["r/x/a/c", "r/x/a/z", "r/x/a", "r/x/b", "r/x"]);
    }
}
