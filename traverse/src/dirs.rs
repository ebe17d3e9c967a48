//! The per-directory outputs: the lines of `-d N` and `--top N`, and the
//! ncdu export, fed by the library's [`DirVisitor`] as directories finish.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use traverse::{DirHandle, DirTotals, DirVisitor, FileTotals, Summary, Totals};

use crate::cli::Breakdown;
use crate::line::{du_order, Line};
use crate::output;
use crate::tree::{self, Fit};

/// A line of `--top` or `--tree`, ranked by its size, then by its path
/// (the smaller first), so that ties always keep the same lines.
struct Ranked {
    size: u128,
    source: Source,
}

/// What a ranked line is built from. A directory's path is built only if
/// it stays among the N at the end: building it costs time in proportion
/// to its depth, and in a deep chain every directory enters the ranking
/// (each is larger than the one below it). A file's line (`-a`) comes
/// built.
enum Source {
    Dir {
        dir: DirHandle,
        totals: Totals,
        inodes: u64,
    },
    File(Line),
}

impl Source {
    fn line(self) -> Line {
        match self {
            Source::Dir {
                dir,
                totals,
                inodes,
            } => Line {
                path: dir.path(),
                depth: dir.depth(),
                totals,
                inodes,
            },
            Source::File(line) => line,
        }
    }

    /// As the paths compare; two directories without building them.
    fn cmp_path(&self, other: &Source) -> CmpOrdering {
        match (self, other) {
            (Source::Dir { dir: a, .. }, Source::Dir { dir: b, .. }) => a.cmp(b),
            _ => self.path().cmp(&other.path()),
        }
    }

    fn path(&self) -> std::borrow::Cow<'_, Path> {
        match self {
            Source::Dir { dir, .. } => dir.path().into(),
            Source::File(line) => line.path.as_path().into(),
        }
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Ranked) -> CmpOrdering {
        self.size
            .cmp(&other.size)
            .then_with(|| other.source.cmp_path(&self.source))
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
    all: bool,
    inodes: bool,
    threshold: Option<i64>,
    tree: Option<Fit>,
    /// `-d N`: the directories down to depth N.
    lines: Mutex<Vec<Line>>,
    /// `--top N`: the N largest so far (the smallest on top, to go first).
    heap: Mutex<BinaryHeap<Reverse<Ranked>>>,
    export: Mutex<Option<Export>>,
    /// The root's size as shown, once its line came.
    root_size: Mutex<Option<u128>>,
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
            // The picture is the largest subtrees: as many as it has lines
            // (a parent is never smaller than its child, and wins a tie by
            // its shorter path, so they always come with their parents).
            top: b.tree.as_ref().map_or(b.top, |fit| Some(fit.lines)),
            human: b.human,
            disk_usage: b.disk_usage,
            all: b.all,
            inodes: b.inodes,
            threshold: b.threshold,
            tree: b.tree.clone(),
            lines: Mutex::new(Vec::new()),
            heap: Mutex::new(BinaryHeap::new()),
            export: Mutex::new(export),
            root_size: Mutex::new(None),
        }
    }

    /// The size shown and ranked: bytes, disk bytes or entries.
    fn size(&self, l: &Line) -> u128 {
        self.measure(&l.totals, l.inodes)
    }

    /// The size shown of `totals`, whose entries `du --inodes` counts as
    /// `inodes`.
    fn measure(&self, totals: &Totals, inodes: u64) -> u128 {
        if self.inodes {
            u128::from(inodes)
        } else if self.disk_usage {
            totals.disk_bytes
        } else {
            totals.bytes
        }
    }

    /// Whether a line of this size passes `-t`.
    fn passes(&self, size: u128) -> bool {
        match self.threshold {
            None => true,
            Some(t) if t < 0 => size <= u128::from(t.unsigned_abs()),
            Some(t) => size >= u128::from(t.unsigned_abs()),
        }
    }

    /// Takes the line of a directory, or of a file with `-a`, at `depth`
    /// and of `size`, into the lines of `-d` or the ranking of `--top`
    /// and `--tree` if it belongs there; `source` is made only then.
    fn take(&self, depth: usize, size: u128, source: impl FnOnce() -> Source) {
        if !self.passes(size) {
            return;
        }
        if self.max_depth.is_some_and(|max| depth <= max) {
            lock(&self.lines).push(source().line());
        } else if let Some(n) = self.top {
            if self.tree.as_ref().is_none_or(|fit| fit.shows(depth)) {
                self.rank(n, size, source);
            }
        }
    }

    /// Keeps a line among the `n` largest if it is.
    fn rank(&self, n: usize, size: u128, source: impl FnOnce() -> Source) {
        let mut heap = lock(&self.heap);
        if heap.len() == n && heap.peek().is_some_and(|Reverse(min)| size < min.size) {
            return;
        }
        heap.push(Reverse(Ranked {
            size,
            source: source(),
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
        if let Some(fit) = &self.tree {
            let mut lines: Vec<Line> = std::mem::take(&mut *lock(&self.heap))
                .into_iter()
                .map(|Reverse(ranked)| ranked.source.line())
                .collect();
            if !lines.iter().any(|l| l.depth == 0) {
                lines.push(root_line(root, summary));
            }
            return tree::picture(&lines, |l| self.size(l), self.inodes, fit);
        }
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
                .map(|Reverse(ranked)| ranked.source.line())
                .collect()
        } else {
            let mut lines = std::mem::take(&mut *lock(&self.lines));
            if !lines.iter().any(|l| l.depth == 0)
                && self.passes(self.size(&root_line(root, summary)))
            {
                lines.push(root_line(root, summary));
            }
            lines.sort_by(du_order);
            lines
        };
        let mut text = String::new();
        for l in lines.drain(..) {
            if json {
                text.push_str(&output::json_dir(&l.path, l.depth, &l.totals));
            } else {
                text.push_str(&output::human_dir(&l.path, self.size(&l), self.human));
            }
        }
        text
    }
}

impl Dirs {
    /// The root's size as its line shows it (before `-t`), for `-c`; from
    /// `summary` when its line never came.
    pub fn root_size(&self, root: &Path, summary: &Summary) -> u128 {
        lock(&self.root_size).unwrap_or_else(|| self.size(&root_line(root, summary)))
    }

    /// The line of `-c` after every root: `size` as the lines show it
    /// (the picture's sizes as `-h`, its counts in full).
    pub fn total_line(&self, size: u128) -> String {
        let human = self.human || (self.tree.is_some() && !self.inodes);
        output::human_dir(Path::new("total"), size, human)
    }
}

fn source(dir: &DirTotals<'_>) -> Source {
    Source::Dir {
        dir: dir.handle(),
        totals: *dir.totals(),
        inodes: dir.inodes(),
    }
}

/// The root's line from the totals of its walk, when the walk did not
/// hand it over (interrupted, or the root unreadable). Hard-linked names
/// are not settled then: each counts as an entry.
fn root_line(root: &Path, summary: &Summary) -> Line {
    let t = &summary.totals;
    Line {
        path: root.to_owned(),
        depth: 0,
        totals: *t,
        inodes: t.files + t.dirs + t.symlinks + t.other,
    }
}

impl DirVisitor for Dirs {
    fn dir(&self, dir: &DirTotals<'_>) {
        let size = self.measure(dir.totals(), dir.inodes());
        self.take(dir.depth(), size, || source(dir));
        if dir.depth() == 0 {
            *lock(&self.root_size) = Some(size);
            if let Some(export) = lock(&self.export).as_mut() {
                export.written = write_ncdu(&mut export.out, dir);
            }
        }
    }

    fn ncdu(&self) -> bool {
        lock(&self.export).is_some()
    }

    fn files_to(&self) -> Option<usize> {
        let deepest = match (&self.tree, self.max_depth) {
            (Some(fit), _) => fit.depth.unwrap_or(usize::MAX),
            (None, Some(max)) => max,
            (None, None) => usize::MAX,
        };
        self.all.then_some(deepest)
    }

    fn file(&self, file: &FileTotals<'_>) {
        let line = || {
            Source::File(Line {
                path: file.path().to_owned(),
                depth: file.depth(),
                totals: *file.totals(),
                inodes: 1,
            })
        };
        let size = self.measure(file.totals(), 1);
        self.take(file.depth(), size, line);
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
