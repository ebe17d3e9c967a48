//! What the browser shows and where the person is: the tree (the ncdu
//! export's, taken from the walk or read from a file), the directory being
//! looked at, its rows sorted and filtered, the selection and the marks.
//! Directories finished during the scan are inserted into the sorted rows
//! (see `rows::insert_sorted`), never by rebuilding them.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use traverse::{NcduDir, Totals};

use super::delete::Level;
use super::rows::{self, Key, Row, Sort};

/// The browser's state.
pub struct Model {
    pub root_path: PathBuf,
    /// The root's tree; until the walk ends, a stand-in holding the
    /// subdirectories finished so far.
    root: NcduDir,
    /// The sum of those subdirectories' totals, kept as they come.
    early: Totals,
    /// Whether the walk is over (the root's tree is in).
    pub scanned: bool,
    /// Indices into `dirs()`, from the root to the directory shown.
    cwd: Vec<usize>,
    /// The rows shown (hidden and filtered ones left out), sorted.
    pub rows: Vec<Row>,
    pub selected: usize,
    /// The first row on screen (the view keeps the selection in sight).
    pub offset: usize,
    /// Rows on a screen, as last drawn (a page for PgUp/PgDn).
    pub page: usize,
    /// Whether the person chose the selected row (moved to it, or came
    /// back from it). Until then the selection stays on the first row
    /// while rows arrive during the scan, so what is selected does not
    /// depend on which directory the walk finished first.
    chosen: bool,
    pub sort: Sort,
    /// Sizes are disk usage (the default), else apparent sizes.
    pub disk_usage: bool,
    /// Names starting with a dot are left out.
    pub hide_hidden: bool,
    /// Only names holding this (ASCII case folded) are shown.
    pub filter: Option<String>,
    /// Columns shown besides size, share and name.
    pub show_count: bool,
    pub show_mtime: bool,
    /// Names marked with space in the directory shown.
    pub marks: BTreeSet<Vec<u8>>,
    /// A line for the person: an error, a refusal, what was deleted.
    pub message: Option<String>,
}

impl Model {
    pub fn new(root_path: &Path, disk_usage: bool) -> Model {
        Model {
            root_path: root_path.to_owned(),
            root: NcduDir::default(),
            early: Totals::default(),
            scanned: false,
            cwd: Vec::new(),
            rows: Vec::new(),
            selected: 0,
            offset: 0,
            page: 20,
            chosen: false,
            sort: Sort {
                key: Key::Size,
                reverse: false,
            },
            disk_usage,
            hide_hidden: false,
            filter: None,
            show_count: true,
            show_mtime: false,
            marks: BTreeSet::new(),
            message: None,
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

    fn dir_mut(&mut self) -> &mut NcduDir {
        let mut d = &mut self.root;
        for &i in &self.cwd {
            d = d.dir_mut(i).expect("the cwd indices are valid");
        }
        d
    }

    /// Where the person is: indices from the root.
    pub fn cwd(&self) -> &[usize] {
        &self.cwd
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

    /// Whether `row` is shown under the hidden-file and name filters.
    fn shows(&self, row: &Row) -> bool {
        if self.hide_hidden && row.hidden() {
            return false;
        }
        self.filter.as_ref().is_none_or(|f| {
            let name = String::from_utf8_lossy(&row.name).to_ascii_lowercase();
            name.contains(f.as_str())
        })
    }

    /// Subdirectories of the root, final before the walk ends: each adds
    /// its row to the sorted rows, in time proportional to the batch.
    pub fn early_dirs(&mut self, dirs: Vec<NcduDir>) {
        let mut new = Vec::new();
        for dir in dirs {
            self.early += *dir.totals();
            let index = self.root.dirs().len();
            if self.cwd.is_empty() {
                let row = Row::of_dir(index, &dir);
                if self.shows(&row) {
                    new.push(row);
                }
            }
            self.root.push_dir(dir);
        }
        if new.is_empty() {
            return;
        }
        let before = rows::insert_sorted(
            &mut self.rows,
            new,
            self.sort,
            self.disk_usage,
            self.selected,
        );
        if self.chosen {
            self.selected += before;
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
            *self.dir().totals()
        } else {
            self.early
        }
    }

    /// The size shown for `t`.
    pub fn shown(&self, t: &Totals) -> u128 {
        if self.disk_usage {
            t.disk_bytes
        } else {
            t.bytes
        }
    }

    /// The largest size among the rows (bars are scaled to it).
    pub fn largest(&self) -> u128 {
        match (self.sort.key, self.sort.reverse) {
            (Key::Size, false) => self.rows.first(),
            (Key::Size, true) => self.rows.last(),
            _ => self.rows.iter().max_by_key(|r| r.size(self.disk_usage)),
        }
        .map_or(0, |r| r.size(self.disk_usage))
    }

    /// Rebuilds the rows of the directory shown, keeping the selected name
    /// if the person chose it, else the first row.
    pub fn refresh(&mut self) {
        let keep = (self.rows.get(self.selected))
            .filter(|_| self.chosen)
            .map(|r| r.name.clone());
        self.rebuild(keep);
    }

    /// Rebuilds the rows, the selection on `keep` when it is still there.
    fn rebuild(&mut self, keep: Option<Vec<u8>>) {
        let dir = self.dir();
        let mut rows: Vec<Row> = dir
            .dirs()
            .iter()
            .enumerate()
            .map(|(i, d)| Row::of_dir(i, d))
            .chain(dir.entries().map(Row::of_entry))
            .filter(|r| self.shows(r))
            .collect();
        let (sort, disk) = (self.sort, self.disk_usage);
        rows.sort_by(|a, b| sort.cmp(a, b, disk));
        self.selected = keep
            .and_then(|name| rows.iter().position(|r| r.name == name))
            .unwrap_or(0)
            .min(rows.len().saturating_sub(1));
        self.rows = rows;
    }

    /// Sorts by `key`, or reverses the order when it is the key already.
    pub fn set_sort(&mut self, key: Key) {
        self.sort = self.sort.pressed(key);
        self.refresh();
    }

    /// Apparent size or disk usage.
    pub fn toggle_disk(&mut self) {
        self.disk_usage = !self.disk_usage;
        self.refresh();
    }

    /// Hidden files shown or left out.
    pub fn toggle_hidden(&mut self) {
        self.hide_hidden = !self.hide_hidden;
        self.refresh();
    }

    /// Only names holding `filter` (none: all).
    pub fn set_filter(&mut self, filter: Option<String>) {
        self.filter = filter
            .filter(|f| !f.is_empty())
            .map(|f| f.to_ascii_lowercase());
        self.refresh();
    }

    pub fn selected_row(&self) -> Option<&Row> {
        self.rows.get(self.selected)
    }

    pub fn up(&mut self, by: usize) {
        self.chosen = true;
        self.selected = self.selected.saturating_sub(by);
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

    /// Marks or unmarks the selected row, and moves down.
    pub fn toggle_mark(&mut self) {
        if let Some(name) = self.selected_row().map(|r| r.name.clone()) {
            if !self.marks.remove(&name) {
                self.marks.insert(name);
            }
            self.down(1);
        }
    }

    /// The marked rows, or the selected one when none is marked.
    pub fn chosen_rows(&self) -> Vec<Row> {
        if self.marks.is_empty() {
            return self.selected_row().cloned().into_iter().collect();
        }
        self.rows
            .iter()
            .filter(|r| self.marks.contains(&r.name))
            .cloned()
            .collect()
    }

    /// Into the selected subdirectory.
    pub fn enter(&mut self) {
        if let Some(i) = self.selected_row().and_then(|r| r.dir) {
            self.cwd.push(i);
            self.marks.clear();
            self.rows.clear();
            self.chosen = false;
            self.offset = 0;
            self.refresh();
        }
    }

    /// Back to the parent, the directory left selected.
    pub fn leave(&mut self) {
        if let Some(left) = self.cwd.pop() {
            self.marks.clear();
            self.rows.clear();
            self.refresh();
            if let Some(at) = self.rows.iter().position(|r| r.dir == Some(left)) {
                self.selected = at;
                self.chosen = true;
            }
        }
    }

    /// The levels from the root to the directory shown, for a deletion.
    pub fn levels(&self) -> Vec<Level> {
        let mut levels = Vec::new();
        let mut d = &self.root;
        for &i in &self.cwd {
            d = &d.dirs()[i];
            levels.push((d.name(), d.id()));
        }
        levels
    }

    /// The (device, inode) the walk saw for `row` of the directory shown:
    /// a subdirectory's own, a file's inode on its directory's device.
    pub fn id_of(&self, row: &Row) -> Option<(u64, u64)> {
        match row.dir {
            Some(i) => self.dir().dirs().get(i).and_then(NcduDir::id),
            None => self.dir().id().map(|(dev, _)| (dev, row.ino)),
        }
    }

    /// Takes `deleted` (rows of the directory shown) off the tree and
    /// their sizes off the totals of the directory and every ancestor. The
    /// selection goes to the row after the selected one when that was
    /// deleted, never back to the top.
    pub fn remove(&mut self, deleted: &[Row]) {
        let gone: BTreeSet<&[u8]> = deleted.iter().map(|r| r.name.as_slice()).collect();
        let next = self.rows[self.selected.min(self.rows.len())..]
            .iter()
            .chain(self.rows[..self.selected.min(self.rows.len())].iter().rev())
            .find(|r| !gone.contains(r.name.as_slice()))
            .map(|r| r.name.clone());
        let mut dirs: Vec<usize> = deleted.iter().filter_map(|r| r.dir).collect();
        dirs.sort_unstable();
        let mut lost = Totals::default();
        let d = self.dir_mut();
        for i in dirs.into_iter().rev() {
            lost += d.remove_dir(i).map(|d| *d.totals()).unwrap_or_default();
        }
        for row in deleted.iter().filter(|r| r.dir.is_none()) {
            lost += d
                .remove_entry(&row.name)
                .map(|e| e.totals())
                .unwrap_or_default();
        }
        self.root.subtract(&lost);
        let mut d = &mut self.root;
        for &i in &self.cwd {
            d = d.dir_mut(i).expect("the cwd indices are valid");
            d.subtract(&lost);
        }
        for row in deleted {
            self.marks.remove(&row.name);
        }
        self.chosen = true;
        self.rebuild(next);
    }

    /// The directory shown, scanned again: `tree` replaces what it held,
    /// and every ancestor's totals change by the difference.
    pub fn rescanned(&mut self, cwd: &[usize], tree: NcduDir) {
        if cwd != self.cwd {
            return;
        }
        let old = *self.dir().totals();
        let new = *tree.totals();
        self.dir_mut().replace_contents(tree);
        if let Some((_, above)) = cwd.split_last() {
            let mut d = &mut self.root;
            d.subtract(&old);
            d.add(&new);
            for &i in above {
                d = d.dir_mut(i).expect("the cwd indices are valid");
                d.subtract(&old);
                d.add(&new);
            }
        }
        self.marks.clear();
        self.refresh();
    }

    /// The tree read from a saved scan, browsed as a finished one (its
    /// root named as the scan named it).
    pub fn imported(&mut self, root: NcduDir) {
        self.root_path = PathBuf::from(std::ffi::OsStr::from_bytes(&root.name()));
        self.root = root;
        self.scanned = true;
        self.refresh();
    }
}

#[cfg(test)]
mod tests;
