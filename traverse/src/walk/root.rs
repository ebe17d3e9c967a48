//! One root of a walk: opened once (by name, or as `.` of a directory the
//! caller holds), counted, checked against the roots before it, then handed
//! to the engine with the rest of the tree.

use super::*;
use crate::ignore_rules::Rules;
use crate::sort::Order;

impl Walk {
    pub(super) fn walk_root(
        &self,
        at: Option<BorrowedFd<'_>>,
        root: &Path,
        visitors: &dyn VisitorBuilder,
        dirs: Option<Arc<dyn DirVisitor>>,
    ) -> Summary {
        let mut acc = Accumulator::new(self.config.count_links, self.config.latest_time);
        let mut visitor = visitors.build();
        let croot = match CString::new(root.as_os_str().as_bytes()) {
            Ok(c) => c,
            Err(_) => {
                let cause = std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the path contains a NUL byte",
                );
                visitor.error(Error::new(root, Op::Stat, cause).with_depth(0));
                acc.totals.errors += 1;
                return self.finish(acc);
            }
        };
        // The root is opened once, never through a symlink, and kept for
        // the whole walk: every later open is relative to it, so a rename
        // of PATH (or of a directory above it) during the walk cannot lead
        // the walk into another tree.
        // From an open directory: a new open of its `.` (own offset).
        let (at, croot_or_dot) = match at {
            Some(fd) => (Some(fd), c"."),
            None => (None, croot.as_c_str()),
        };
        // With `follow_root_links`, through a symlink.
        let follow = self.config.follow_root_links;
        let open = if follow {
            sys::open_dir_follow(at, croot_or_dot)
        } else {
            sys::open_dir(at, croot_or_dot)
        };
        let stat_by_name = || {
            let mask = self.config.statx_mask();
            if follow {
                sys::statx_follow(at, croot_or_dot, mask)
            } else {
                sys::statx(at, croot_or_dot, mask)
            }
        };
        let (opened, st) = match open {
            Ok(fd) => match sys::fstatx(fd.as_fd(), self.config.statx_mask()) {
                Ok(st) => (Ok(fd), st),
                Err(cause) => {
                    visitor.error(Error::new(root, Op::Stat, cause).with_depth(0));
                    acc.totals.errors += 1;
                    return self.finish(acc);
                }
            },
            // Why: a stat by name tells a missing PATH, a file or a
            // symlink from a directory that cannot be opened.
            Err(cause) => match stat_by_name() {
                Ok(st) => (Err(cause), st),
                Err(cause) => {
                    visitor.error(Error::new(root, Op::Stat, cause).with_depth(0));
                    acc.totals.errors += 1;
                    return self.finish(acc);
                }
            },
        };
        if !st.is_dir() {
            // A file, or a symbolic link (not followed): the walk's one
            // entry, as walkdir yields it and du counts it.
            if self.config.counts_types_only() {
                acc.add_type(FileType::from_mode(st.mode).d_type());
            } else {
                acc.add(&st);
            }
            self.list_root(&mut *visitor, root, &st);
            self.progress.add(1, st.size);
            return self.finish(acc);
        }
        let counted_before = self
            .config
            .count_once
            .then(|| Arc::clone(&self.dirs_seen.lock().unwrap_or_else(|p| p.into_inner())));
        if counted_before
            .as_ref()
            .is_some_and(|set| set.contains(&st.id()))
        {
            return Summary {
                repeated: true,
                ..Summary::default()
            };
        }
        if counted_before.is_some() {
            acc.dirs.push(st.id());
        }
        if self.config.counts_types_only() {
            acc.add_type(FileType::from_mode(st.mode).d_type());
        } else {
            acc.add(&st);
        }
        // Contents first, the root comes last, once its walk is done.
        let root_last = self.config.contents_first && opened.is_ok() && self.config.reads(0);
        if !root_last {
            self.list_root(&mut *visitor, root, &st);
        }
        self.progress.add(1, st.size);
        let fd = match opened {
            Ok(fd) => fd,
            Err(cause) => {
                // A directory that cannot be opened (no permission): counted,
                // as du counts it, and reported.
                visitor.error(Error::new(root, Op::Open, cause).with_depth(0));
                acc.totals.errors += 1;
                return self.finish(acc);
            }
        };
        drop(visitor);
        if !self.interrupt.load(Ordering::Relaxed) {
            let breakdown = dirs
                .filter(|_| !self.config.list)
                .map(|dirs| Arc::new(Breakdown::new(dirs)));
            let tally = breakdown
                .as_ref()
                .map(|b| Tally::new(Some(&st), croot.to_bytes(), b.ncdu, self.config.latest_time));
            let shared = Arc::new(Shared {
                config: self.config.clone(),
                root_dev: st.dev,
                root_mnt: st.mnt_id,
                root_ids_unique: sys::fs_type(fd.as_fd()).is_ok_and(crate::links::trusts_d_ino),
                budget: FdBudget::new(self.config.max_jobs, self.limit),
                interrupt: Arc::clone(&self.interrupt),
                progress: Arc::clone(&self.progress),
                breakdown,
                counted_before,
                skipped: self.config.count_once.then(Mutex::default),
                files_before: self
                    .config
                    .count_once
                    .then(|| Arc::clone(&self.files_seen.lock().unwrap_or_else(|p| p.into_inner())))
                    .filter(|set| !set.is_empty()),
                // With `count_links`, du counts every name: none is left out.
                reached: (self.config.follow_links && !self.config.count_links)
                    .then(|| Arc::clone(&self.reached)),
                mount_names: Arc::clone(
                    &self.mount_names.lock().unwrap_or_else(|p| p.into_inner()),
                ),
                spares: Arc::clone(&self.spares),
                order: (self.config.list)
                    .then(|| Order::new(self.config.sort.clone(), self.config.contents_first))
                    .flatten(),
                ignore: self.config.ignore.map(|rules| Rules::new(rules, root)),
            });
            if let Some(order) = shared.order.as_ref().filter(|_| root_last) {
                self.hold_root(order, root, &st);
            }
            // Reached: a link back to it is passed over.
            shared.first_reach(&st);
            let root = DirNode::root(croot, fd, st.id(), tally);
            if let (Some(breakdown), Some(_)) = (&shared.breakdown, &shared.reached) {
                // Under -L no line goes out before the end (see `Breakdown::settle`).
                breakdown.dir_walked(&root, st.id());
            }
            if shared.reads(0) {
                acc.merge(dispatch::walk(&shared, root, visitors));
            } else {
                // `max_depth(0)`: the root, counted above, is not read.
                shared.read_done(&root);
            }
            if let Some(breakdown) = &shared.breakdown {
                if !self.interrupt.load(Ordering::Relaxed) {
                    let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
                    breakdown.settle(&seen);
                }
            }
            if let Some(skipped) = &shared.skipped {
                let skipped =
                    std::mem::take(&mut *skipped.lock().unwrap_or_else(|p| p.into_inner()));
                let mut all = self.skipped.lock().unwrap_or_else(|p| p.into_inner());
                all.extend(skipped);
            }
        }
        self.finish(acc)
    }
}
