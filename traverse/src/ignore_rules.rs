//! Ignore rules as ripgrep and fd apply them
//! ([`WalkBuilder::ignore_rules`](crate::WalkBuilder::ignore_rules)):
//! hidden names, `.ignore` and `.gitignore` files at every level (nested,
//! negated, and in the root's parent directories), and git's global
//! excludes file. The patterns are matched by the `ignore` crate's
//! `gitignore` matcher; only which files apply where, and in which order,
//! is decided here. Each directory's files are read once, by the first
//! worker that asks about one of its entries, and kept in its node.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use crate::node::DirNode;

/// Which ignore rules a walk applies
/// ([`WalkBuilder::ignore_rules`](crate::WalkBuilder::ignore_rules)). The
/// defaults are those of the `ignore` crate's `WalkBuilder` (and so of
/// ripgrep and fd): every rule on.
///
/// # Example
///
/// ```
/// use traverse::{Event, IgnoreRules, WalkBuilder};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("build"))?;
/// std::fs::write(dir.path().join(".ignore"), "build/\n")?;
/// std::fs::write(dir.path().join("kept"), "")?;
/// let rules = IgnoreRules::new().hidden(false);
/// let walk = WalkBuilder::new().list(true).ignore_rules(rules).build();
/// let mut names = Vec::new();
/// walk.run_with(dir.path(), |event| {
///     if let Event::Entry(e) = event {
///         names.push(e.path().to_owned());
///     }
/// });
/// // The root, `.ignore` (hidden names are not left out here) and `kept`.
/// assert_eq!(names.len(), 3);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IgnoreRules {
    hidden: bool,
    parents: bool,
    dot_ignore: bool,
    git_ignore: bool,
    git_global: bool,
    require_git: bool,
}

impl Default for IgnoreRules {
    fn default() -> IgnoreRules {
        IgnoreRules::new()
    }
}

impl IgnoreRules {
    /// Every rule on, as the `ignore` crate's defaults: hidden entries
    /// left out, `.ignore` and `.gitignore` files read at every level and
    /// in the root's parents, git's global excludes file read,
    /// `.gitignore` applied only inside a git repository.
    ///
    /// ```
    /// assert_eq!(traverse::IgnoreRules::new(), traverse::IgnoreRules::default());
    /// ```
    pub fn new() -> IgnoreRules {
        IgnoreRules {
            hidden: true,
            parents: true,
            dot_ignore: true,
            git_ignore: true,
            git_global: true,
            require_git: true,
        }
    }

    /// Leave out entries whose name starts with a dot, unless a rule names
    /// them with `!` (ignore's `hidden`).
    ///
    /// ```
    /// let dotfiles_too = traverse::IgnoreRules::new().hidden(false);
    /// assert_ne!(dotfiles_too, traverse::IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn hidden(mut self, yes: bool) -> IgnoreRules {
        self.hidden = yes;
        self
    }

    /// Also read the ignore files of the root's parent directories
    /// (ignore's `parents`).
    ///
    /// ```
    /// let here_only = traverse::IgnoreRules::new().parents(false);
    /// assert_ne!(here_only, traverse::IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn parents(mut self, yes: bool) -> IgnoreRules {
        self.parents = yes;
        self
    }

    /// Read `.ignore` files; they take precedence over `.gitignore`
    /// (ignore's `ignore`).
    ///
    /// ```
    /// let git_only = traverse::IgnoreRules::new().dot_ignore(false);
    /// assert_ne!(git_only, traverse::IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn dot_ignore(mut self, yes: bool) -> IgnoreRules {
        self.dot_ignore = yes;
        self
    }

    /// Read `.gitignore` files (ignore's `git_ignore`).
    ///
    /// ```
    /// let no_git = traverse::IgnoreRules::new().git_ignore(false).git_global(false);
    /// assert_ne!(no_git, traverse::IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn git_ignore(mut self, yes: bool) -> IgnoreRules {
        self.git_ignore = yes;
        self
    }

    /// Read git's global excludes file, `core.excludesFile` or
    /// `$XDG_CONFIG_HOME/git/ignore` (ignore's `git_global`).
    ///
    /// ```
    /// let reproducible = traverse::IgnoreRules::new().git_global(false);
    /// assert_ne!(reproducible, traverse::IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn git_global(mut self, yes: bool) -> IgnoreRules {
        self.git_global = yes;
        self
    }

    /// Apply `.gitignore` files and the global excludes only inside a git
    /// repository (a `.git` in the directory or above it), as git does
    /// (ignore's `require_git`).
    ///
    /// ```
    /// let anywhere = traverse::IgnoreRules::new().require_git(false);
    /// assert_ne!(anywhere, traverse::IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn require_git(mut self, yes: bool) -> IgnoreRules {
        self.require_git = yes;
        self
    }
}

/// The ignore files of one directory.
#[derive(Debug)]
struct Level {
    dot_ignore: Option<Gitignore>,
    git_ignore: Option<Gitignore>,
}

impl Level {
    /// The files of the directory `dir` that `rules` ask for (a file that
    /// cannot be read counts as absent, a bad pattern is skipped, as git
    /// skips it); `None` when it has none.
    fn read(rules: &IgnoreRules, dir: &Path) -> Option<Level> {
        let file = |wanted: bool, name: &str| {
            if !wanted {
                return None;
            }
            let path = dir.join(name);
            let text = std::fs::read(&path).ok()?;
            let mut builder = GitignoreBuilder::new(dir);
            for line in String::from_utf8_lossy(&text).lines() {
                let _ = builder.add_line(Some(path.clone()), line);
            }
            builder.build().ok().filter(|g| !g.is_empty())
        };
        let level = Level {
            dot_ignore: file(rules.dot_ignore, ".ignore"),
            git_ignore: file(rules.git_ignore, ".gitignore"),
        };
        (level.dot_ignore.is_some() || level.git_ignore.is_some()).then_some(level)
    }

    fn matched(&self, dot: bool, path: &Path, is_dir: bool) -> Match<()> {
        let file = if dot {
            &self.dot_ignore
        } else {
            &self.git_ignore
        };
        file.as_ref()
            .map_or(Match::None, |g| g.matched(path, is_dir).map(|_| ()))
    }
}

/// The levels that apply in a directory, nearest first.
#[derive(Debug)]
struct Chain {
    level: Level,
    parent: Option<Arc<Chain>>,
}

/// What a directory's node keeps of the rules: its path as the walk names
/// it (what the patterns are matched on), the levels that apply in it, and
/// whether it is in a git repository.
#[derive(Debug)]
pub(crate) struct DirRules {
    path: PathBuf,
    chain: Option<Arc<Chain>>,
    in_git: bool,
}

/// One root's rules: the settings, the global file, and the levels above
/// the root (nearest first, matched on absolute paths).
#[derive(Debug)]
pub(crate) struct Rules {
    rules: IgnoreRules,
    global: Option<Gitignore>,
    above: Vec<Level>,
    above_in_git: bool,
    root: PathBuf,
    abs_root: PathBuf,
}

impl Rules {
    /// Reads the global file and the files of `root`'s parents, as asked.
    pub fn new(rules: IgnoreRules, root: &Path) -> Rules {
        let abs_root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let global = rules.git_global.then(|| Gitignore::global().0);
        let mut above = Vec::new();
        let mut above_in_git = false;
        if rules.parents {
            for dir in abs_root.ancestors().skip(1) {
                above.extend(Level::read(&rules, dir));
                above_in_git |= dir.join(".git").symlink_metadata().is_ok();
            }
        }
        Rules {
            rules,
            global: global.filter(|g| !g.is_empty()),
            above,
            above_in_git,
            root: root.to_path_buf(),
            abs_root,
        }
    }

    /// The rules of `dir`, read on first use and kept in its node.
    fn of<'d>(&self, dir: &'d DirNode) -> &'d DirRules {
        dir.ignore_rules().get_or_init(|| {
            let parent = dir.parent().map(|p| self.of(p));
            let path = match parent {
                Some(p) => p.path.join(OsStr::from_bytes(dir.name().to_bytes())),
                None => self.root.clone(),
            };
            let in_git = parent.map_or(self.above_in_git, |p| p.in_git)
                || path.join(".git").symlink_metadata().is_ok();
            let up = parent.and_then(|p| p.chain.clone());
            let chain = match Level::read(&self.rules, &path) {
                Some(level) => Some(Arc::new(Chain { level, parent: up })),
                None => up,
            };
            Box::new(DirRules {
                path,
                chain,
                in_git,
            })
        })
    }

    /// Whether the entry `name` of `dir`, of type `d_type`, is left out.
    pub fn ignores(&self, dir: &DirNode, name: &[u8], d_type: u8) -> bool {
        let here = self.of(dir);
        let git = here.in_git || !self.rules.require_git;
        let hidden = || self.rules.hidden && name.first() == Some(&b'.');
        if here.chain.is_none() && self.above.is_empty() && (self.global.is_none() || !git) {
            return hidden();
        }
        let path = here.path.join(OsStr::from_bytes(name));
        let is_dir = match d_type {
            libc::DT_UNKNOWN => path.symlink_metadata().is_ok_and(|m| m.is_dir()),
            _ => d_type == libc::DT_DIR,
        };
        let mut abs = None;
        // `.ignore` at every level first, then `.gitignore` (in a
        // repository), then the global file: ripgrep's precedence.
        for dot in [true, false].into_iter().filter(|&dot| dot || git) {
            let levels = std::iter::successors(here.chain.as_deref(), |c| c.parent.as_deref());
            let mut decided = levels
                .map(|c| c.level.matched(dot, &path, is_dir))
                .find(|m| !m.is_none());
            if decided.is_none() && !self.above.is_empty() {
                let p = abs.get_or_insert_with(|| self.absolute(&path));
                decided = self
                    .above
                    .iter()
                    .map(|l| l.matched(dot, p, is_dir))
                    .find(|m| !m.is_none());
            }
            if let Some(m) = decided {
                return m.is_ignore();
            }
        }
        if let Some(global) = self.global.as_ref().filter(|_| git) {
            let p = abs.get_or_insert_with(|| self.absolute(&path));
            match global.matched(p, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        hidden()
    }

    fn absolute(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rest) => self.abs_root.join(rest),
            Err(_) => path.to_path_buf(),
        }
    }
}
