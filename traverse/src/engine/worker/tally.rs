//! With a breakdown: what a worker counts in the current directory's
//! tally, and the files handed to the breakdown's visitor.

use super::Worker;
use crate::file_totals::FileTotals;
use crate::ncdu_export::ncdu_entry;
use crate::node::push_name;
use crate::sys::Stat;

impl Worker<'_> {
    /// With a breakdown: counts a stat'ed entry `name` (the current
    /// directory itself when `None`) in the current directory. A further
    /// name of a hard-linked inode waits to be settled (see
    /// [`crate::breakdown`]), and under -L every file; with
    /// `--count-links` every name counts.
    pub(super) fn tally(&mut self, count_links: bool, name: Option<&[u8]>, st: &Stat) {
        let Some(ncdu) = self.breakdown.as_ref().map(|b| b.ncdu) else {
            return;
        };
        if let Some(name) = name.filter(|_| self.follow_names && !st.is_dir()) {
            self.follow_name(name, st, true);
        } else if !count_links && st.is_hard_linked() {
            self.here.add_kind(st.mode);
            self.build_dir_path();
            self.entry_path.clear();
            self.entry_path.extend_from_slice(self.dir_path.bytes());
            if let Some(name) = name {
                push_name(&mut self.entry_path, name);
            }
            if let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) {
                breakdown.link(
                    (dir, self.place),
                    &self.entry_path,
                    st,
                    self.acc.time_of(st),
                );
            }
        } else {
            self.here.add_stat(st, self.acc.time_field());
            if let Some(name) = name.filter(|_| !st.is_dir()) {
                self.file(name, st);
            }
        }
        if ncdu {
            match name {
                Some(name) => ncdu_entry(&mut self.here_ncdu, name, st, false),
                None => {
                    if let Some(dir) = &self.dir {
                        if let Some(mut tree) = dir.tally().and_then(|t| t.tree()) {
                            tree.set_info(dir.name().to_bytes(), st);
                        }
                    }
                }
            }
        }
    }

    /// With a breakdown that asks for them: hands the entry `name` of the
    /// current directory, not a directory, to its visitor (the path built
    /// only then).
    fn file(&mut self, name: &[u8], st: &Stat) {
        let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) else {
            return;
        };
        if breakdown.files_to.is_none_or(|max| dir.depth() + 1 > max) {
            return;
        }
        self.build_dir_path();
        self.entry_path.clear();
        self.entry_path.extend_from_slice(self.dir_path.bytes());
        push_name(&mut self.entry_path, name);
        if let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) {
            let (sizes, time) = ((st.size, st.blocks), self.acc.time_of(st));
            let file = FileTotals::new(&self.entry_path, (dir, self.place), st.mode, sizes, time);
            breakdown.file(&file);
        }
    }
}
