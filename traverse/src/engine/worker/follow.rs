//! Following symlinks ([`WalkBuilder::follow_links`](crate::WalkBuilder::follow_links)),
//! the directories found again below themselves (loops), reported with
//! the ancestor they repeat, and those counted under an earlier root.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Shared, Worker};
use crate::error::{Error, Op};
use crate::node::{push_name, DirNode, ListingPlace};
use crate::sys::{self, Stat};

impl Worker<'_> {
    /// With links followed: the stat of what the entry `name` stat'ed as
    /// `st` stands for (its target's when a symlink), or `None` when the
    /// link cannot be followed (dangling, or a chain too long: reported,
    /// and not counted, as `du -L` does).
    pub(super) fn resolve(
        &mut self,
        name: &[u8],
        st: Option<&Stat>,
        mask: u32,
    ) -> Option<Option<Stat>> {
        let Some(st) = st else {
            return Some(None);
        };
        if !st.is_symlink() {
            return Some(Some(*st));
        }
        match self.follow(name, mask) {
            Ok(target) => Some(Some(target)),
            Err(cause) => {
                self.entry_error(name, Op::Stat, cause);
                None
            }
        }
    }

    /// Under -L with a breakdown: hands the name `name` of `st`, reached
    /// for the walk's `first` time or again, to the breakdown, which
    /// counts it once, where du does (see [`crate::breakdown`]). A
    /// directory reached first is handed over once it has its node
    /// ([`walked`](Self::walked)).
    pub(super) fn follow_name(&mut self, name: &[u8], st: &Stat, first: bool) {
        if !self.follow_names || (st.is_dir() && first) {
            return;
        }
        if st.is_dir() {
            if let (Some(dir), Ok(name)) = (self.dir.clone(), CString::new(name)) {
                self.reached_again(st, (&dir, self.place), &name);
            }
            return;
        }
        // The path only for a line of it (`-a`), at any depth: its
        // directory may move up.
        self.entry_path.clear();
        if self
            .breakdown
            .as_ref()
            .is_some_and(|b| b.files_to.is_some())
        {
            self.entry_path_of(name);
        }
        let time = self.acc.time_of(st);
        if let (Some(breakdown), Some(dir)) = (&self.breakdown, &self.dir) {
            breakdown.followed((dir, self.place), &self.entry_path, st, (time, first));
        }
    }

    /// Checks the directory being read, stat'ed through its descriptor
    /// once open (not by name before), against its ancestors: false, with
    /// the error reported, when it is one of them (a loop). Records its
    /// identity for the checks below it.
    pub fn opened_dir(&mut self, shared: &Shared, st: &Stat) -> bool {
        let Some(dir) = self.dir.clone() else {
            return true;
        };
        if self.counted_before(st) {
            // Counted under an earlier root: du leaves it out silently,
            // line included.
            if let Some(tally) = dir.tally() {
                tally.leave_out();
            }
            return false;
        }
        let same = shared.may_loop(st).then(|| dir.parent()).flatten();
        if let Some(same) = same.and_then(|p| p.same_as(st.id())) {
            self.dir_loop(same);
            if let Some(parent) = dir.parent() {
                self.reached_again(st, (parent, dir.place()), dir.name());
            }
            return false;
        }
        if !shared.first_reach(st) {
            self.leave_out_dir();
            if let Some(parent) = dir.parent() {
                self.reached_again(st, (parent, dir.place()), dir.name());
            }
            return false;
        }
        dir.set_id(st.id());
        self.walked(&dir, Some(st));
        true
    }

    /// Under -L with a breakdown: the directory `dir`, stat'ed as `st`,
    /// is read here, at its first reach.
    pub(super) fn walked(&self, dir: &Arc<DirNode>, st: Option<&Stat>) {
        if let (true, Some(breakdown), Some(st)) = (self.follow_names, &self.breakdown, st) {
            breakdown.dir_walked(dir, st.id());
        }
    }

    /// Under -L with a breakdown: the directory `st` reached again, as
    /// `name` at `place` of `parent`.
    fn reached_again(&self, st: &Stat, at: (&Arc<DirNode>, ListingPlace), name: &CStr) {
        if let (true, Some(breakdown)) = (self.follow_names, &self.breakdown) {
            breakdown.dir_again(st.id(), at, name);
        }
    }

    /// Stats what the symlink `name` of the current directory points to,
    /// by its path (links are rare; the path leads where the link does).
    fn follow(&mut self, name: &[u8], mask: u32) -> io::Result<Stat> {
        self.entry_path_of(name);
        let path = CString::new(self.entry_path.clone())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        sys::statx_follow(None, &path, mask)
    }

    /// Sets `entry_path` to the path of the entry `name` of the current
    /// directory.
    fn entry_path_of(&mut self, name: &[u8]) {
        self.build_dir_path();
        self.entry_path.clear();
        self.entry_path.extend_from_slice(self.dir_path.bytes());
        push_name(&mut self.entry_path, name);
    }

    /// The directory being read, opened, is its ancestor `same`: reported,
    /// and left out of the breakdown's lines (not counted, so no line of
    /// its own, as du prints none).
    pub(super) fn dir_loop(&mut self, same: &DirNode) {
        let ancestor = same.path();
        self.build_dir_path();
        let path = Path::new(OsStr::from_bytes(self.dir_path.bytes())).to_owned();
        self.report(Error::in_loop(path, ancestor));
        self.here_failed = true;
        self.leave_out_dir();
    }

    /// The subdirectory `name` of the current directory is its ancestor
    /// at `ancestor`: reported, not descended into.
    pub(super) fn entry_loop(&mut self, name: &[u8], ancestor: PathBuf) {
        self.entry_path_of(name);
        let path = Path::new(OsStr::from_bytes(&self.entry_path)).to_owned();
        self.report(Error::in_loop(path, ancestor));
    }

    /// Leaves the directory being read out of the breakdown's lines: it
    /// could not be stat'ed, or is a loop, so nothing of it is counted (du
    /// prints no line for it); its error still counts in its parent.
    pub fn leave_out_dir(&self) {
        if let Some(tally) = self.dir.as_ref().and_then(|dir| dir.tally()) {
            tally.leave_out();
        }
    }

    /// Whether `st` was counted under an earlier root: a directory, or a
    /// file given as a root.
    pub(super) fn counted_before(&self, st: &Stat) -> bool {
        let set = if st.is_dir() {
            &self.counted_before
        } else {
            &self.files_before
        };
        set.as_ref().is_some_and(|set| set.contains(&st.id()))
    }

    /// Counts and hands over an error of the current directory or one of
    /// its entries.
    fn report(&mut self, err: Error) {
        self.acc.totals.errors += 1;
        self.here.errors += 1;
        self.visitor.error(err);
    }
}
