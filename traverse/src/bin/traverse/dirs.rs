//! The per-directory outputs: the lines of `-d N`, `--top N` and
//! `--tree`, and the ncdu export ([`Export`]), fed by the library's
//! [`DirVisitor`] as directories finish.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use traverse::{DirHandle, DirTotals, DirVisitor, FileTotals, ListingOrder, Summary, Totals};

use crate::cli::Breakdown;
use crate::export::Export;
use crate::line::{self, du_order, Line};
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
        order: ListingOrder,
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
                order,
                totals,
                inodes,
            } => Line {
                path: dir.path(),
                depth: dir.depth(),
                totals,
                inodes,
                order: Some(order),
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
    /// A directory's line keeps as `totals.latest` the latest time of the
    /// directory and its entries that are not directories (`du -S --time`).
    times_here: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Dirs {
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
            times_here: false,
        }
    }

    /// Lines whose `totals.latest` leaves out their subdirectories (see
    /// [`DirTotals::latest_here`](traverse::DirTotals::latest_here)).
    pub fn times_here(mut self, yes: bool) -> Dirs {
        self.times_here = yes;
        self
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

    /// Ends the export, if there is one, after the walk of `root` (see
    /// [`Export::finish`]).
    pub fn finish_export(&self, root: &Path, summary: &Summary) -> Result<(), String> {
        match lock(&self.export).take() {
            Some(export) => export.finish(root, summary),
            None => Ok(()),
        }
    }

    /// The text for `root` once its walk is over: the lines of `-d` (in
    /// du's order: children before their parent, siblings in the order
    /// du lists them) or of
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
        let lines = if self.top.is_some() {
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
        line::text(lines, json, self.human, |l| self.size(l))
    }
}

impl Dirs {
    /// The lines of `-d` for `root` once its walk is over, unsorted, the
    /// root's own included (from `summary` when it never came).
    pub fn take_lines(&self, root: &Path, summary: &Summary) -> Vec<Line> {
        let mut lines = std::mem::take(&mut *lock(&self.lines));
        if !lines.iter().any(|l| l.depth == 0) {
            lines.push(root_line(root, summary));
        }
        lines
    }

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

fn source(dir: &DirTotals<'_>, times_here: bool) -> Source {
    let mut totals = *dir.totals();
    if times_here {
        totals.latest = dir.latest_here();
    }
    Source::Dir {
        dir: dir.handle(),
        order: dir.listing_order(),
        totals,
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
        order: None,
    }
}

impl DirVisitor for Dirs {
    fn dir(&self, dir: &DirTotals<'_>) {
        let size = self.measure(dir.totals(), dir.inodes());
        self.take(dir.depth(), size, || source(dir, self.times_here));
        if dir.depth() == 0 {
            *lock(&self.root_size) = Some(size);
            if let Some(export) = lock(&self.export).as_mut() {
                export.write_root(dir);
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
                order: Some(file.listing_order()),
            })
        };
        let size = self.measure(file.totals(), 1);
        self.take(file.depth(), size, line);
    }
}
