//! The walk's ignore rules ([`WalkBuilder::ignore_rules`](crate::WalkBuilder::ignore_rules)),
//! from `walk-ignore-rules`, kept in the tree's nodes: each directory's
//! files are read once, by the first worker that asks about one of its
//! entries, relative to the descriptor it reads the directory with.

use std::ffi::{CString, OsStr};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use walk_ignore_rules::{IgnoreRules, Names, Scope};

use crate::node::DirNode;
use crate::sys;

/// What a directory's node keeps of the rules: its path as the walk names
/// it (what the patterns are matched on) and its scope.
#[derive(Debug)]
pub(crate) struct DirRules {
    path: PathBuf,
    scope: Scope,
}

/// One root's rules.
#[derive(Debug)]
pub(crate) struct Rules(walk_ignore_rules::Rules);

impl Rules {
    /// Reads the global file and the files of `root`'s parents, as asked.
    pub fn new(rules: IgnoreRules, root: &Path) -> Rules {
        Rules(walk_ignore_rules::Rules::new(rules, root))
    }

    /// The rules of `dir`, open as `fd`: read on first use and kept in its
    /// node.
    fn of<'d>(&self, dir: &'d DirNode, fd: BorrowedFd<'_>) -> &'d DirRules {
        dir.ignore_rules().get_or_init(|| {
            // A directory is queued only once its name passed `ignores` in
            // its parent, which read the parent's rules first.
            let above = dir.parent().and_then(|p| p.ignore_rules().get());
            let (path, above) = match above {
                Some(p) => (
                    p.path.join(OsStr::from_bytes(dir.name().to_bytes())),
                    p.scope.clone(),
                ),
                None => (dir.path(), self.0.root_scope()),
            };
            // Not every engine has the whole listing yet: the names are
            // looked up.
            let scope = self.0.enter(&above, &fd, &path, &Names::probe(&fd));
            Box::new(DirRules { path, scope })
        })
    }

    /// Whether the entry `name` of `dir` (open as `fd`), of type `d_type`,
    /// is left out.
    pub fn ignores(&self, dir: &DirNode, fd: BorrowedFd<'_>, name: &[u8], d_type: u8) -> bool {
        let here = self.of(dir, fd);
        if let Some(by_name) = self.0.ignored_by_name(&here.scope, name) {
            return by_name;
        }
        let is_dir = match d_type {
            libc::DT_UNKNOWN => CString::new(name)
                .ok()
                .and_then(|c| sys::statx(Some(fd), &c, libc::STATX_TYPE).ok())
                .is_some_and(|st| st.is_dir()),
            _ => d_type == libc::DT_DIR,
        };
        let path = here.path.join(OsStr::from_bytes(name));
        self.0.ignored(&here.scope, &path, name, is_dir)
    }
}
