//! The per-directory outputs: the lines of `-d N` and `--top N`, and the
//! ncdu export, fed by the library's [`DirVisitor`] as directories finish.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use traverse::{DirHandle, DirTotals, DirVisitor, Summary, Totals};

use crate::cli::Breakdown;
use crate::output;

/// A directory's line.
struct Line {
    path: PathBuf,
    depth: usize,
    totals: Totals,
}

/// A directory of `--top`, ranked by its size, then by its path (the
/// smaller first), so that ties always keep the same directories. Its path
/// is built only if it stays among the N at the end: building it costs
/// time in proportion to its depth, and in a deep chain every directory
/// enters the ranking (each is larger than the one below it).
struct Ranked {
    size: u128,
    dir: DirHandle,
    totals: Totals,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Ranked) -> CmpOrdering {
        self.size
            .cmp(&other.size)
            .then_with(|| other.dir.cmp(&self.dir))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Ranked) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Ranked) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Ranked {}

/// Where the export goes.
pub struct Export {
    out: Box<dyn Write + Send>,
    /// The file's name for messages ("-": stdout).
    name: String,
    /// Whether the root's tree was written, or why it was not.
    written: io::Result<bool>,
    /// For a file: the temporary name written to, renamed to the file's
    /// own name only once the export is complete.
    file: Option<Pending>,
}

/// An export file being written under a temporary name.
struct Pending {
    temporary: PathBuf,
    path: PathBuf,
}

impl Pending {
    /// Creates a new file in `path`'s directory, under a name of its own
    /// (a dot, the file's name, the process id): the rename at the end is
    /// then atomic, and a failed or cut-short export never leaves a
    /// truncated file under the name asked for.
    fn create(path: &Path) -> io::Result<(Pending, File)> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(name);
        temporary_name.push(format!(".{}.part", std::process::id()));
        let temporary = path.with_file_name(temporary_name);
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        let pending = Pending {
            temporary,
            path: path.to_owned(),
        };
        Ok((pending, file))
    }

    /// Gives the complete file its name.
    fn commit(self) -> io::Result<()> {
        std::fs::rename(&self.temporary, &self.path)
    }

    /// Removes the incomplete file.
    fn discard(self) {
        let _ = std::fs::remove_file(&self.temporary);
    }
}

/// What one root's walk keeps of its directories.
pub struct Dirs {
    max_depth: Option<usize>,
    top: Option<usize>,
    human: bool,
    disk_usage: bool,
    /// `-d N`: the directories down to depth N.
    lines: Mutex<Vec<Line>>,
    /// `--top N`: the N largest so far (the smallest on top, to go first).
    heap: Mutex<BinaryHeap<Reverse<Ranked>>>,
    export: Mutex<Option<Export>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Dirs {
    /// Opens the export's file, if one was asked for: before the walk, so
    /// a file that cannot be written costs no walk.
    pub fn open_export(b: &Breakdown) -> Result<Option<Export>, String> {
        let Some(file) = &b.export else {
            return Ok(None);
        };
        let (out, name, file): (Box<dyn Write + Send>, String, _) = match file {
            None => (
                Box::new(BufWriter::with_capacity(1 << 20, io::stdout())),
                "-".to_owned(),
                None,
            ),
            Some(path) => {
                let name = output::human_path(path);
                // A device, a fifo or a symlink (`/dev/stdout`) is written
                // through: a rename would replace it with a file.
                let plain = std::fs::symlink_metadata(path).map_or(true, |m| m.is_file());
                let (pending, file) = if plain {
                    let (pending, file) =
                        Pending::create(path).map_err(|e| format!("{name}: {e}"))?;
                    (Some(pending), file)
                } else {
                    (
                        None,
                        File::create(path).map_err(|e| format!("{name}: {e}"))?,
                    )
                };
                let out = Box::new(BufWriter::with_capacity(1 << 20, file));
                (out, name, pending)
            }
        };
        Ok(Some(Export {
            out,
            name,
            written: Ok(false),
            file,
        }))
    }

    pub fn new(b: &Breakdown, export: Option<Export>) -> Dirs {
        Dirs {
            max_depth: b.max_depth,
            top: b.top,
            human: b.human,
            disk_usage: b.disk_usage,
            lines: Mutex::new(Vec::new()),
            heap: Mutex::new(BinaryHeap::new()),
            export: Mutex::new(export),
        }
    }

    /// The size shown and ranked.
    fn size(&self, t: &Totals) -> u128 {
        if self.disk_usage {
            t.disk_bytes
        } else {
            t.bytes
        }
    }

    /// Keeps `dir` among the `n` largest if it is: its path is built only
    /// then.
    fn rank(&self, n: usize, dir: &DirTotals<'_>) {
        let size = self.size(dir.totals());
        let mut heap = lock(&self.heap);
        if heap.len() == n && heap.peek().is_some_and(|Reverse(min)| size < min.size) {
            return;
        }
        heap.push(Reverse(Ranked {
            size,
            dir: dir.handle(),
            totals: *dir.totals(),
        }));
        if heap.len() > n {
            heap.pop();
        }
    }

    /// Ends the export after the walk of `root`: the file's last bytes,
    /// flushed, and the file renamed to its name; an error naming the
    /// file when it could not be written (the incomplete file removed), or
    /// naming `root` when the walk did not finish its tree.
    pub fn finish_export(&self, root: &Path, summary: &Summary) -> Result<(), String> {
        let Some(mut export) = lock(&self.export).take() else {
            return Ok(());
        };
        let flushed = export.out.flush();
        // Closes the file before it is renamed or removed.
        drop(export.out);
        let outcome = match (export.written, flushed) {
            (Ok(true), Ok(())) => match export.file.take().map_or(Ok(()), Pending::commit) {
                Ok(()) => Ok(()),
                Err(e) => Err(format!(
                    "{}: cannot rename the export into place: {e}",
                    export.name
                )),
            },
            (Err(e), _) | (_, Err(e)) => Err(format!("{}: write error: {e}", export.name)),
            (Ok(false), _) => {
                let why = if summary.partial {
                    "the walk was interrupted"
                } else {
                    "it could not be read"
                };
                Err(format!(
                    "{}: no export written: {why}",
                    output::human_path(root)
                ))
            }
        };
        if let Some(pending) = export.file {
            pending.discard();
        }
        outcome
    }

    /// The text for `root` once its walk is over: the lines of `-d` (in
    /// du's order: children before their parent, siblings by name) or of
    /// `--top` (largest first), or the totals when only an export was
    /// asked for. A root whose own line never came (the walk was
    /// interrupted, or the root could not be read) gets it from `summary`.
    pub fn lines(&self, root: &Path, summary: &Summary, json: bool) -> String {
        if self.max_depth.is_none() && self.top.is_none() {
            return if json {
                output::json(Some(root), &summary.totals)
            } else {
                output::human(Some(root), &summary.totals, summary.partial)
            };
        }
        let mut lines = if self.top.is_some() {
            let heap = std::mem::take(&mut *lock(&self.heap));
            heap.into_sorted_vec()
                .into_iter()
                .map(|Reverse(ranked)| Line {
                    path: ranked.dir.path(),
                    depth: ranked.dir.depth(),
                    totals: ranked.totals,
                })
                .collect()
        } else {
            let mut lines = std::mem::take(&mut *lock(&self.lines));
            if !lines.iter().any(|l| l.depth == 0) {
                lines.push(Line {
                    path: root.to_owned(),
                    depth: 0,
                    totals: summary.totals,
                });
            }
            lines.sort_by(du_order);
            lines
        };
        let mut text = String::new();
        for l in lines.drain(..) {
            if json {
                text.push_str(&output::json_dir(&l.path, l.depth, &l.totals));
            } else {
                text.push_str(&output::human_dir(
                    &l.path,
                    self.size(&l.totals),
                    self.human,
                ));
            }
        }
        text
    }
}

fn line(dir: &DirTotals<'_>) -> Line {
    Line {
        path: dir.path(),
        depth: dir.depth(),
        totals: *dir.totals(),
    }
}

/// The order du prints a tree in, made deterministic: by the names below
/// the root, component by component, a directory after everything below
/// it.
fn du_order(a: &Line, b: &Line) -> CmpOrdering {
    let (na, nb) = (names_below(a), names_below(b));
    for (x, y) in na.iter().zip(&nb) {
        match x.cmp(y) {
            CmpOrdering::Equal => {}
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

impl DirVisitor for Dirs {
    fn dir(&self, dir: &DirTotals<'_>) {
        if let Some(max) = self.max_depth {
            if dir.depth() <= max {
                lock(&self.lines).push(line(dir));
            }
        }
        if let Some(n) = self.top {
            self.rank(n, dir);
        }
        if dir.depth() == 0 {
            if let Some(export) = lock(&self.export).as_mut() {
                export.written = write_ncdu(&mut export.out, dir);
            }
        }
    }

    fn ncdu(&self) -> bool {
        lock(&self.export).is_some()
    }
}

/// Writes the export file: ncdu's header, the tree, the closing bracket.
fn write_ncdu(out: &mut dyn Write, dir: &DirTotals<'_>) -> io::Result<bool> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    writeln!(
        out,
        "[1,2,{{\"progname\":\"traverse\",\"progver\":\"{}\",\"timestamp\":{now}}},",
        env!("CARGO_PKG_VERSION")
    )?;
    let written = dir.write_ncdu(out)?;
    out.write_all(b"]\n")?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(path: &str, depth: usize) -> Line {
        Line {
            path: PathBuf::from(path),
            depth,
            totals: Totals::default(),
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
