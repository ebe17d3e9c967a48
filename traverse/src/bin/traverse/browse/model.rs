//! What the browser shows and where the person is: the tree (the ncdu
//! export's, taken from the walk), the directory being looked at, its rows
//! sorted, the selection, and a deletion waiting for its confirmation.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use traverse::{NcduDir, Totals};

use super::delete::{Level, Outcome, Target};

/// How rows are sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// Largest first.
    Size,
    /// By name, bytewise.
    Name,
    /// Most entries first.
    Count,
}

/// One line of the listing.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: Vec<u8>,
    /// The subdirectory's index in its parent, or `None` for an entry.
    pub dir: Option<usize>,
    pub size: u128,
    /// Entries in the subtree (1 for a file).
    pub count: u64,
    /// The inode the walk saw (an entry's; a directory's is in its tree).
    pub ino: u64,
    pub not_regular: bool,
}

/// The browser's state.
pub struct Model {
    pub root_path: PathBuf,
    /// The root's tree; until the walk ends, a stand-in holding the
    /// subdirectories finished so far.
    root: NcduDir,
    /// Whether the walk is over (the root's tree is in).
    pub scanned: bool,
    /// Indices into `dirs()`, from the root to the directory shown.
    cwd: Vec<usize>,
    pub rows: Vec<Row>,
    pub selected: usize,
    /// Whether the person chose the selected row (moved to it, or came
    /// back from it). Until then the selection stays on the first row
    /// while rows arrive and re-sort during the scan, so what is selected
    /// does not depend on which directory the walk finished first.
    chosen: bool,
    pub sort: Sort,
    pub disk_usage: bool,
    /// A line for the person: an error, a refusal, what was deleted.
    pub message: Option<String>,
    /// The row waiting for `y` or `n`.
    pub confirm: Option<Row>,
}

fn count(t: &Totals) -> u64 {
    t.files + t.dirs + t.symlinks + t.other
}

impl Model {
    pub fn new(root_path: &Path, disk_usage: bool) -> Model {
        Model {
            root_path: root_path.to_owned(),
            root: NcduDir::default(),
            scanned: false,
            cwd: Vec::new(),
            rows: Vec::new(),
            selected: 0,
            chosen: false,
            sort: Sort::Size,
            disk_usage,
            message: None,
            confirm: None,
        }
    }

    fn size(&self, t: &Totals) -> u128 {
        if self.disk_usage {
            t.disk_bytes
        } else {
            t.bytes
        }
    }

    /// The directory shown.
    pub fn dir(&self) -> &NcduDir {
        let mut d = &self.root;
        for &i in &self.cwd {
            d = &d.dirs()[i];
        }
        d
    }

    /// The path of the directory shown.
    pub fn path(&self) -> PathBuf {
        let mut path = self.root_path.clone();
        let mut d = &self.root;
        for &i in &self.cwd {
            d = &d.dirs()[i];
            path.push(std::ffi::OsStr::from_bytes(&d.name()));
        }
        path
    }

    /// A subdirectory of the root, final before the walk ends.
    pub fn early_dir(&mut self, dir: NcduDir) {
        self.root.push_dir(dir);
        if self.cwd.is_empty() {
            self.refresh();
        }
    }

    /// The root's tree, at the end of the walk: the subdirectories met
    /// early go back into it, after its own (so the indices in `cwd` move
    /// by that many).
    pub fn root_done(&mut self, mut root: NcduDir) {
        let own = root.dirs().len();
        let mut early = std::mem::take(&mut self.root);
        let mut moved = Vec::with_capacity(early.dirs().len());
        while let Some(d) = early.remove_dir(early.dirs().len().wrapping_sub(1)) {
            moved.push(d);
        }
        for d in moved.into_iter().rev() {
            root.push_dir(d);
        }
        if let Some(first) = self.cwd.first_mut() {
            *first += own;
        }
        self.root = root;
        self.scanned = true;
        self.refresh();
    }

    /// The walk ended without the root's tree (it could not be read).
    pub fn root_missing(&mut self) {
        self.scanned = true;
        self.refresh();
    }

    /// The totals of the directory shown (during the walk, of what is
    /// final below the root).
    pub fn totals(&self) -> Totals {
        if self.scanned || !self.cwd.is_empty() {
            return *self.dir().totals();
        }
        let mut t = Totals::default();
        for d in self.root.dirs() {
            t += *d.totals();
        }
        t
    }

    /// The size shown for `t`.
    pub fn shown(&self, t: &Totals) -> u128 {
        self.size(t)
    }

    /// Rebuilds the rows of the directory shown, keeping the selected name
    /// if the person chose it, else the first row.
    pub fn refresh(&mut self) {
        let keep = (self.rows.get(self.selected))
            .filter(|_| self.chosen)
            .map(|r| r.name.clone());
        let dir = self.dir();
        let mut rows: Vec<Row> = dir
            .dirs()
            .iter()
            .enumerate()
            .map(|(i, d)| Row {
                name: d.name(),
                dir: Some(i),
                size: self.size(d.totals()),
                count: count(d.totals()),
                ino: 0,
                not_regular: false,
            })
            .collect();
        rows.extend(dir.entries().map(|e| Row {
            size: u128::from(if self.disk_usage {
                e.disk_bytes
            } else {
                e.size
            }),
            count: 1,
            ino: e.ino,
            not_regular: e.not_regular || e.other_fs,
            dir: None,
            name: e.name,
        }));
        match self.sort {
            Sort::Size => {
                rows.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.name.cmp(&b.name)))
            }
            Sort::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
            Sort::Count => {
                rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)))
            }
        }
        self.selected = keep
            .and_then(|name| rows.iter().position(|r| r.name == name))
            .unwrap_or(0)
            .min(rows.len().saturating_sub(1));
        self.rows = rows;
    }

    pub fn set_sort(&mut self, sort: Sort) {
        self.sort = sort;
        self.refresh();
    }

    pub fn up(&mut self) {
        self.chosen = true;
        self.selected = self.selected.saturating_sub(1);
    }

    /// The first row, which stays selected until the person moves.
    pub fn top(&mut self) {
        self.chosen = false;
        self.selected = 0;
    }

    pub fn down(&mut self, by: usize) {
        self.chosen = true;
        self.selected = self
            .selected
            .saturating_add(by)
            .min(self.rows.len().saturating_sub(1));
    }

    /// Into the selected subdirectory.
    pub fn enter(&mut self) {
        if let Some(i) = self.rows.get(self.selected).and_then(|r| r.dir) {
            self.cwd.push(i);
            self.rows.clear();
            self.chosen = false;
            self.refresh();
        }
    }

    /// Back to the parent, the directory left selected.
    pub fn leave(&mut self) {
        if let Some(left) = self.cwd.pop() {
            self.rows.clear();
            self.refresh();
            if let Some(at) = self.rows.iter().position(|r| r.dir == Some(left)) {
                self.selected = at;
                self.chosen = true;
            }
        }
    }

    /// The levels from the root to the directory shown, for a deletion.
    fn levels(&self) -> Vec<Level> {
        let mut levels = Vec::new();
        let mut d = &self.root;
        for &i in &self.cwd {
            d = &d.dirs()[i];
            levels.push((d.name(), d.id()));
        }
        levels
    }

    /// Deletes `row` of the directory shown through `delete` (which gets
    /// the levels and the target). When all of it went, takes it off the
    /// tree and its size off the totals of the directory and every
    /// ancestor; else the directory needs a rescan ([`Model::rescanned`]).
    pub fn delete(
        &mut self,
        row: &Row,
        delete: impl FnOnce(&[Level], &Target<'_>) -> Result<Outcome, String>,
    ) -> Result<Outcome, String> {
        let levels = self.levels();
        let target = match row.dir {
            Some(i) => Target::Dir {
                name: &row.name,
                id: self.dir().dirs()[i].id(),
            },
            // A file is on its directory's device.
            None => Target::Entry {
                name: &row.name,
                id: self.dir().id().map(|(dev, _)| (dev, row.ino)),
            },
        };
        let outcome = delete(&levels, &target)?;
        if outcome.left > 0 {
            return Ok(outcome);
        }
        let mut d = &mut self.root;
        for &i in &self.cwd {
            d = d.dir_mut(i).expect("the cwd indices are valid");
        }
        let lost = match row.dir {
            Some(i) => d.remove_dir(i).map(|d| *d.totals()),
            None => d.remove_entry(&row.name).map(|e| e.totals()),
        }
        .unwrap_or_default();
        let mut d = &mut self.root;
        d.subtract(&lost);
        for &i in &self.cwd {
            d = d.dir_mut(i).expect("the cwd indices are valid");
            d.subtract(&lost);
        }
        self.refresh();
        Ok(outcome)
    }

    /// The levels from the root to the directory shown, and its name.
    pub fn shown_levels(&self) -> (Vec<Level>, Vec<u8>) {
        let levels = self.levels();
        let name = levels.last().map_or_else(
            || self.root_path.as_os_str().as_bytes().to_vec(),
            |l| l.0.clone(),
        );
        (levels, name)
    }

    /// Puts `tree`, a new scan of the directory shown, in place of its
    /// old tree, and the change of its totals into every ancestor's.
    pub fn rescanned(&mut self, tree: NcduDir) {
        let Some((&last, above)) = self.cwd.split_last() else {
            self.root = tree;
            self.refresh();
            return;
        };
        let above = above.to_vec();
        let mut d = &mut self.root;
        for &i in &above {
            d = d.dir_mut(i).expect("the cwd indices are valid");
        }
        let old = d.remove_dir(last).expect("the cwd indices are valid");
        let lost = minus(old.totals(), tree.totals());
        d.push_dir(tree);
        let now = d.dirs().len() - 1;
        *self.cwd.last_mut().expect("not the root") = now;
        let mut d = &mut self.root;
        d.subtract(&lost);
        for &i in &above {
            d = d.dir_mut(i).expect("the cwd indices are valid");
            d.subtract(&lost);
        }
        self.rows.clear();
        self.refresh();
    }
}

/// What went from `old` to `new` (nothing where it grew).
fn minus(old: &Totals, new: &Totals) -> Totals {
    let (mut t, n) = (*old, *new);
    t.files = t.files.saturating_sub(n.files);
    t.dirs = t.dirs.saturating_sub(n.dirs);
    t.symlinks = t.symlinks.saturating_sub(n.symlinks);
    t.other = t.other.saturating_sub(n.other);
    t.bytes = t.bytes.saturating_sub(n.bytes);
    t.disk_bytes = t.disk_bytes.saturating_sub(n.disk_bytes);
    t.errors = t.errors.saturating_sub(n.errors);
    t
}
