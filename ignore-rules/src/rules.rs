//! One root's rules and what each directory keeps of them.

use std::fs::OpenOptions;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::Gitignore;
use ignore::Match;

use crate::level::{Level, Names};
use crate::IgnoreRules;

/// What a directory keeps of the rules: the levels that apply in it
/// (its own and its ancestors' that have files, nearest first) and
/// whether it is in a git repository. Cheap to clone: the levels are
/// shared with the directories below.
///
/// # Example
///
/// ```
/// use walk_ignore_rules::{IgnoreRules, Names, Rules};
///
/// let tmp = tempfile::tempdir()?;
/// std::fs::create_dir(tmp.path().join("sub"))?;
/// std::fs::write(tmp.path().join(".ignore"), "*.o\n")?;
/// let rules = Rules::new(IgnoreRules::new().git_global(false), tmp.path());
/// let dir = std::fs::File::open(tmp.path())?;
/// let top = rules.enter(&rules.root_scope(), &dir, tmp.path(), &Names::probe(&dir));
/// // `sub` has no file of its own: the root's still apply in it.
/// let sub_path = tmp.path().join("sub");
/// let sub_dir = std::fs::File::open(&sub_path)?;
/// let sub = rules.enter(&top, &sub_dir, &sub_path, &Names::probe(&sub_dir));
/// assert!(rules.ignored(&sub, &sub_path.join("a.o"), b"a.o", false));
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Scope {
    levels: Option<Arc<Link>>,
    in_git: bool,
}

/// A level and the levels above it.
#[derive(Debug)]
struct Link {
    level: Level,
    up: Option<Arc<Link>>,
}

impl Drop for Link {
    /// Drops the chain no one else holds one link at a time: the default
    /// drop would recurse once per level, and a tree with ignore files
    /// thousands of levels deep would overflow a thread's stack.
    fn drop(&mut self) {
        let mut up = self.up.take();
        while let Some(link) = up {
            up = Arc::into_inner(link).and_then(|mut link| link.up.take());
        }
    }
}

impl Scope {
    /// The levels, nearest first.
    fn levels(&self) -> impl Iterator<Item = &Level> + Clone {
        std::iter::successors(self.levels.as_deref(), |l| l.up.as_deref()).map(|l| &l.level)
    }
}

/// One root's rules: the settings, git's global excludes file, and the
/// levels above the root that have files (nearest first, matched on
/// absolute paths, as their patterns are relative to those directories).
///
/// # Example
///
/// ```
/// use walk_ignore_rules::{IgnoreRules, Rules};
///
/// let tmp = tempfile::tempdir()?;
/// std::fs::write(tmp.path().join(".ignore"), "target/\n")?;
/// let root = tmp.path().join("crate");
/// std::fs::create_dir(&root)?;
/// // The root's parent's `.ignore` applies below the root.
/// let rules = Rules::new(IgnoreRules::new().git_global(false), &root);
/// assert!(rules.ignored(&rules.root_scope(), &root.join("target"), b"target", true));
/// assert!(!rules.ignored(&rules.root_scope(), &root.join("target"), b"target", false));
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Rules {
    rules: IgnoreRules,
    global: Option<Gitignore>,
    above: Vec<Level>,
    /// A `.git` is in one of the root's parents.
    above_in_git: bool,
    /// The walk's root as the walk names it: the paths asked about start
    /// with it.
    root: PathBuf,
    /// The root made absolute, for the levels above it and the global
    /// file.
    abs_root: PathBuf,
}

impl Rules {
    /// The rules of a walk from `root`: reads git's global excludes file
    /// and the files of `root`'s parents, as `rules` ask (a parent that
    /// cannot be opened has none).
    ///
    /// ```
    /// use walk_ignore_rules::{IgnoreRules, Rules};
    /// let rules = Rules::new(IgnoreRules::new().parents(false).git_global(false), ".");
    /// assert!(!rules.ignored(&rules.root_scope(), "./src".as_ref(), b"src", true));
    /// ```
    pub fn new(rules: IgnoreRules, root: impl AsRef<Path>) -> Rules {
        let root = root.as_ref();
        let abs_root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
        let global = rules.git_global.then(|| Gitignore::global().0);
        let (mut above, mut above_in_git) = (Vec::new(), false);
        if rules.parents {
            let mut open = OpenOptions::new();
            open.read(true).custom_flags(libc::O_DIRECTORY);
            for path in abs_root.ancestors().skip(1) {
                let Ok(dir) = open.open(path) else { continue };
                let names = Names::probe(&dir);
                let level = Level::read(&rules, dir.as_fd(), path, &names, false);
                above_in_git |= level.in_git();
                // Only levels with files: each is matched, on a path made
                // absolute, against every entry the levels below leave
                // undecided.
                if !level.is_empty() {
                    above.push(level);
                }
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

    /// The scope the root is entered from: no level of the walk's own yet,
    /// in a repository if one of the root's parents is.
    ///
    /// ```
    /// use walk_ignore_rules::{IgnoreRules, Rules};
    /// let rules = Rules::new(IgnoreRules::new().git_global(false), "/");
    /// assert!(!rules.ignored(&rules.root_scope(), "/tmp".as_ref(), b"tmp", true));
    /// ```
    pub fn root_scope(&self) -> Scope {
        Scope {
            levels: None,
            in_git: self.above_in_git,
        }
    }

    /// The scope of the directory open as `dir`, named `path` as the walk
    /// names it (the root's path, then the names below it), holding
    /// `names`; `above` is its parent's scope ([`root_scope`](Self::root_scope)
    /// for the root). Its ignore files are read here, relative to `dir`.
    ///
    /// ```
    /// use walk_ignore_rules::{IgnoreRules, Names, Rules};
    ///
    /// let tmp = tempfile::tempdir()?;
    /// std::fs::write(tmp.path().join(".ignore"), "*.o\n")?;
    /// let rules = Rules::new(IgnoreRules::new().git_global(false), tmp.path());
    /// let dir = std::fs::File::open(tmp.path())?;
    /// // The listing did not hold `.ignore`: it is not read.
    /// let scope = rules.enter(&rules.root_scope(), &dir, tmp.path(), &Names::default());
    /// assert!(!rules.ignored(&scope, &tmp.path().join("a.o"), b"a.o", false));
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn enter(&self, above: &Scope, dir: &impl AsFd, path: &Path, names: &Names) -> Scope {
        let level = Level::read(&self.rules, dir.as_fd(), path, names, above.in_git);
        let in_git = level.in_git();
        let levels = if level.is_empty() {
            above.levels.clone()
        } else {
            Some(Arc::new(Link {
                level,
                up: above.levels.clone(),
            }))
        };
        Scope { levels, in_git }
    }

    /// Whether the entry `name` of a directory of `scope` is left out,
    /// when its name alone decides (no pattern can apply there): `None`
    /// when its path is needed, for [`ignored`](Self::ignored).
    ///
    /// ```
    /// use walk_ignore_rules::{IgnoreRules, Rules};
    /// let rules = Rules::new(IgnoreRules::new().parents(false).git_global(false), ".");
    /// assert_eq!(rules.ignored_by_name(&rules.root_scope(), b".cache"), Some(true));
    /// ```
    pub fn ignored_by_name(&self, scope: &Scope, name: &[u8]) -> Option<bool> {
        let git = scope.in_git || !self.rules.require_git;
        let patterns =
            scope.levels.is_some() || !self.above.is_empty() || (git && self.global.is_some());
        (!patterns).then(|| self.hidden(name))
    }

    /// Whether the entry at `path` (named `name`, a directory if `is_dir`)
    /// of a directory of `scope` is left out: `.ignore` at every level
    /// first, then `.gitignore` (in a repository), then the global file,
    /// nearest level first; the hidden rule for a path none decides.
    ///
    /// ```
    /// use walk_ignore_rules::{IgnoreRules, Names, Rules};
    ///
    /// let tmp = tempfile::tempdir()?;
    /// std::fs::write(tmp.path().join(".ignore"), "*.o\n!keep.o\n")?;
    /// let rules = Rules::new(IgnoreRules::new().git_global(false), tmp.path());
    /// let dir = std::fs::File::open(tmp.path())?;
    /// let scope = rules.enter(&rules.root_scope(), &dir, tmp.path(), &Names::probe(&dir));
    /// assert!(rules.ignored(&scope, &tmp.path().join("a.o"), b"a.o", false));
    /// assert!(!rules.ignored(&scope, &tmp.path().join("keep.o"), b"keep.o", false));
    /// assert!(rules.ignored(&scope, &tmp.path().join(".ignore"), b".ignore", false));
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn ignored(&self, scope: &Scope, path: &Path, name: &[u8], is_dir: bool) -> bool {
        if let Some(by_name) = self.ignored_by_name(scope, name) {
            return by_name;
        }
        let git = scope.in_git || !self.rules.require_git;
        let mut abs: Option<PathBuf> = None;
        for dot in [true, false].into_iter().filter(|&dot| dot || git) {
            let mut decided = scope
                .levels()
                .map(|l| l.matched(dot, path, is_dir))
                .find(|m| !m.is_none());
            if decided.is_none() && !self.above.is_empty() {
                let p = abs.get_or_insert_with(|| self.absolute(path));
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
            let p = abs.get_or_insert_with(|| self.absolute(path));
            match global.matched(p, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        self.hidden(name)
    }

    fn hidden(&self, name: &[u8]) -> bool {
        self.rules.hidden && name.first() == Some(&b'.')
    }

    /// `path`, below the root, made absolute.
    fn absolute(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rest) if !rest.as_os_str().is_empty() => self.abs_root.join(rest),
            Ok(_) => self.abs_root.clone(),
            Err(_) => path.to_path_buf(),
        }
    }
}
