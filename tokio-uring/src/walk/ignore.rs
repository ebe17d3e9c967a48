//! Ignore rules as ripgrep and fd apply them: hidden names, `.ignore` and
//! `.gitignore` files at every level (nested, negated, and in the root's
//! parent directories), and git's global excludes file. The patterns are
//! matched by the `ignore` crate's `gitignore` matcher; only which files
//! apply where, and in which order, is decided here.

use std::ffi::{CStr, OsStr};
use std::io::Read;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

/// Which ignore rules a walk applies ([`WalkBuilder::ignore_rules`]). The
/// defaults are those of the `ignore` crate's `WalkBuilder` (and so of
/// ripgrep and fd): every rule on.
///
/// [`WalkBuilder::ignore_rules`]: super::WalkBuilder::ignore_rules
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::walk::{IgnoreRules, WalkBuilder};
///
/// let tmp = std::env::temp_dir().join(format!("ignore-rules-doc-{}", std::process::id()));
/// std::fs::create_dir_all(tmp.join("build"))?;
/// std::fs::write(tmp.join(".ignore"), "build/\n")?;
/// std::fs::write(tmp.join("kept"), "")?;
/// tokio_uring::start(async {
///     let rules = IgnoreRules::new().hidden(false);
///     let mut walk = WalkBuilder::new(&tmp).ignore_rules(rules).build();
///     let mut names = Vec::new();
///     while let Some(entry) = walk.next().await {
///         names.push(entry?.file_name().to_owned());
///     }
///     // The root, `.ignore` (not hidden from this walk) and `kept`.
///     assert_eq!(names.len(), 3);
///     Ok::<_, std::io::Error>(())
/// })?;
/// std::fs::remove_dir_all(&tmp)?;
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
    /// use tokio_uring_getdents::walk::IgnoreRules;
    /// assert_eq!(IgnoreRules::new(), IgnoreRules::default());
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

    /// Leave out entries whose name starts with a dot, unless a rule
    /// names them with `!` (ignore's `hidden`).
    ///
    /// ```
    /// use tokio_uring_getdents::walk::IgnoreRules;
    /// let dotfiles_too = IgnoreRules::new().hidden(false);
    /// assert_ne!(dotfiles_too, IgnoreRules::new());
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
    /// use tokio_uring_getdents::walk::IgnoreRules;
    /// let here_only = IgnoreRules::new().parents(false);
    /// assert_ne!(here_only, IgnoreRules::new());
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
    /// use tokio_uring_getdents::walk::IgnoreRules;
    /// let git_only = IgnoreRules::new().dot_ignore(false);
    /// assert_ne!(git_only, IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn dot_ignore(mut self, yes: bool) -> IgnoreRules {
        self.dot_ignore = yes;
        self
    }

    /// Read `.gitignore` files (ignore's `git_ignore`).
    ///
    /// ```
    /// use tokio_uring_getdents::walk::IgnoreRules;
    /// let no_git = IgnoreRules::new().git_ignore(false).git_global(false);
    /// assert_ne!(no_git, IgnoreRules::new());
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
    /// use tokio_uring_getdents::walk::IgnoreRules;
    /// let reproducible = IgnoreRules::new().git_global(false);
    /// assert_ne!(reproducible, IgnoreRules::new());
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
    /// use tokio_uring_getdents::walk::IgnoreRules;
    /// let anywhere = IgnoreRules::new().require_git(false);
    /// assert_ne!(anywhere, IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn require_git(mut self, yes: bool) -> IgnoreRules {
        self.require_git = yes;
        self
    }
}

/// The ignore files of one directory.
pub(super) struct Level {
    dot_ignore: Option<Gitignore>,
    git_ignore: Option<Gitignore>,
    /// A `.git` is here or above.
    in_git: bool,
}

/// What the walk keeps of the rules: the settings, the global file, and
/// the levels above the root that have files (nearest first).
pub(super) struct Rules {
    rules: IgnoreRules,
    global: Option<Gitignore>,
    above: Vec<Level>,
    /// A `.git` is in one of the root's parents.
    above_in_git: bool,
    /// The root made absolute, for the levels above it and the global
    /// file, whose patterns are relative to other directories.
    abs_root: PathBuf,
    root: PathBuf,
}

/// Which of a directory's names matter to the rules.
#[derive(Default)]
pub(super) struct Present {
    pub(super) dot_ignore: bool,
    pub(super) git_ignore: bool,
    pub(super) git: bool,
}

impl Present {
    pub(super) fn note(&mut self, name: &[u8]) {
        match name {
            b".ignore" => self.dot_ignore = true,
            b".gitignore" => self.git_ignore = true,
            b".git" => self.git = true,
            _ => {}
        }
    }
}

impl Rules {
    /// Reads the global file and the root's parents' files, as asked.
    pub(super) fn new(rules: IgnoreRules, root: &Path) -> Rules {
        let abs_root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let global = rules.git_global.then(|| Gitignore::global().0);
        let global = global.filter(|g| !g.is_empty());
        let (mut above, mut above_in_git) = (Vec::new(), false);
        if rules.parents {
            for dir in abs_root.ancestors().skip(1) {
                let present = Present {
                    dot_ignore: dir.join(".ignore").is_file(),
                    git_ignore: dir.join(".gitignore").is_file(),
                    git: dir.join(".git").exists(),
                };
                let read = |name: &str| std::fs::read(dir.join(name));
                let level = Level::build(&rules, dir, &present, false, read);
                above_in_git |= level.in_git;
                // Only levels with files: every entry the levels below
                // leave undecided is matched against each one, on a path
                // made absolute for it.
                if !level.is_empty() {
                    above.push(level);
                }
            }
        }
        Rules {
            rules,
            global,
            above,
            above_in_git,
            abs_root,
            root: root.to_path_buf(),
        }
    }

    /// Whether the root itself is in a git repository (its parents).
    pub(super) fn root_in_git(&self) -> bool {
        self.above_in_git
    }

    /// The level of the directory `path` (open as `fd`), from the names it
    /// holds; `in_git` says whether a parent is in a repository.
    pub(super) fn level(
        &self,
        fd: BorrowedFd<'_>,
        path: &Path,
        present: &Present,
        in_git: bool,
    ) -> Level {
        let read = |name: &str| read_at(fd, name);
        Level::build(&self.rules, path, present, in_git, read)
    }

    /// Whether `path` (named `name`, below the root) is left out, given the
    /// levels of the directories that hold it (nearest first) and whether
    /// its directory is in a git repository.
    pub(super) fn ignored<'a>(
        &self,
        levels: impl Iterator<Item = &'a Level> + Clone,
        (path, name): (&Path, &OsStr),
        is_dir: bool,
        in_git: bool,
    ) -> bool {
        let git = in_git || !self.rules.require_git;
        let mut abs: Option<PathBuf> = None;
        let mut decided = Match::None;
        // `.ignore` at every level first, then `.gitignore`, then the
        // global file: ripgrep's order of precedence.
        for dot in [true, false] {
            if !dot && !git {
                break;
            }
            decided = levels
                .clone()
                .map(|l| l.matched(dot, path, is_dir))
                .find(|m| !m.is_none())
                .unwrap_or(Match::None);
            if decided.is_none() && !self.above.is_empty() {
                let p = abs.get_or_insert_with(|| self.absolute(path));
                decided = self
                    .above
                    .iter()
                    .map(|l| l.matched(dot, p, is_dir))
                    .find(|m| !m.is_none())
                    .unwrap_or(Match::None);
            }
            if !decided.is_none() {
                break;
            }
        }
        if decided.is_none() && git {
            if let Some(global) = &self.global {
                let p = abs.get_or_insert_with(|| self.absolute(path));
                decided = global.matched(p, is_dir).map(|_| ());
            }
        }
        match decided {
            Match::Ignore(()) => true,
            Match::Whitelist(()) => false,
            Match::None => self.rules.hidden && name.as_bytes().first() == Some(&b'.'),
        }
    }

    fn absolute(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rest) if !rest.as_os_str().is_empty() => self.abs_root.join(rest),
            Ok(_) => self.abs_root.clone(),
            Err(_) => path.to_path_buf(),
        }
    }
}

impl Level {
    fn build(
        rules: &IgnoreRules,
        dir: &Path,
        present: &Present,
        in_git: bool,
        read: impl Fn(&str) -> std::io::Result<Vec<u8>>,
    ) -> Level {
        let file = |wanted: bool, there: bool, name: &str| {
            if !(wanted && there) {
                return None;
            }
            let text = read(name).ok()?;
            let mut builder = GitignoreBuilder::new(dir);
            for line in String::from_utf8_lossy(&text).lines() {
                // A bad pattern is skipped, as git skips it.
                let _ = builder.add_line(Some(dir.join(name)), line);
            }
            builder.build().ok().filter(|g| !g.is_empty())
        };
        Level {
            dot_ignore: file(rules.dot_ignore, present.dot_ignore, ".ignore"),
            git_ignore: file(rules.git_ignore, present.git_ignore, ".gitignore"),
            in_git: in_git || present.git,
        }
    }

    /// A level that needs no keeping: nothing to match, no repository.
    pub(super) fn is_empty(&self) -> bool {
        self.dot_ignore.is_none() && self.git_ignore.is_none()
    }

    pub(super) fn in_git(&self) -> bool {
        self.in_git
    }

    fn matched(&self, dot: bool, path: &Path, is_dir: bool) -> Match<()> {
        let file = if dot {
            &self.dot_ignore
        } else {
            &self.git_ignore
        };
        match file {
            Some(g) => g.matched(path, is_dir).map(|_| ()),
            None => Match::None,
        }
    }
}

/// The levels of a walk's directories, shared by the frames below them.
pub(super) type Levels = Option<Arc<LevelChain>>;

/// A directory's level and its parent's chain.
pub(super) struct LevelChain {
    pub(super) level: Level,
    pub(super) parent: Levels,
}

/// The chain's levels, nearest first.
pub(super) fn chain(levels: &Levels) -> impl Iterator<Item = &Level> + Clone {
    std::iter::successors(levels.as_deref(), |c| c.parent.as_deref()).map(|c| &c.level)
}

/// The whole of the file `name` in the directory `dir`, not following a
/// symbolic link.
fn read_at(dir: BorrowedFd<'_>, name: &str) -> std::io::Result<Vec<u8>> {
    let cname = std::ffi::CString::new(name)?;
    let file = open_file_at(dir, &cname)?;
    let mut text = Vec::new();
    std::fs::File::from(file).read_to_end(&mut text)?;
    Ok(text)
}

fn open_file_at(dir: BorrowedFd<'_>, name: &CStr) -> std::io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: `name` is NUL-terminated and outlives the call; `dir` is a
    // descriptor kept open by the borrow.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
