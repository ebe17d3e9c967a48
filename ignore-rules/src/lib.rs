//! Ignore rules for a directory walk, as ripgrep and fd apply them:
//! hidden names, `.ignore` and `.gitignore` files at every level (nested,
//! negated, and in the root's parent directories), and git's global
//! excludes file. The patterns are matched by the `ignore` crate's
//! `gitignore` matcher; only which files apply where, and in which order,
//! is decided here.
//!
//! A walk builds one [`Rules`] per root, keeps one [`Scope`] per
//! directory (from its parent's, with [`Rules::enter`], once the directory
//! is open) and asks [`Rules::ignored`] about each entry. The files are
//! read relative to the directory's descriptor, never by path: a symbolic
//! link named `.gitignore` is not followed and a FIFO is not waited on.
//!
//! ```
//! use std::fs::File;
//! use walk_ignore_rules::{IgnoreRules, Names, Rules};
//!
//! let tmp = tempfile::tempdir()?;
//! let root = tmp.path();
//! std::fs::write(root.join(".ignore"), "*.log\n")?;
//! let rules = Rules::new(IgnoreRules::new().git_global(false), root);
//! let dir = File::open(root)?;
//! let mut names = Names::default();
//! names.note(b".ignore");
//! let scope = rules.enter(&rules.root_scope(), &dir, root, &names);
//! assert!(rules.ignored(&scope, &root.join("run.log"), b"run.log", false));
//! assert!(!rules.ignored(&scope, &root.join("run.txt"), b"run.txt", false));
//! # Ok::<_, std::io::Error>(())
//! ```

mod level;
mod rules;

pub use level::Names;
pub use rules::{Rules, Scope};

/// Which ignore rules a walk applies. The defaults are those of the
/// `ignore` crate's `WalkBuilder` (and so of ripgrep and fd): every rule
/// on.
///
/// # Example
///
/// ```
/// use walk_ignore_rules::{IgnoreRules, Rules};
///
/// let tmp = tempfile::tempdir()?;
/// let rules = Rules::new(IgnoreRules::new().hidden(false), tmp.path());
/// let scope = rules.root_scope();
/// // No ignore file read yet: only the names could decide, and hidden
/// // names are kept.
/// assert!(!rules.ignored(&scope, &tmp.path().join(".env"), b".env", false));
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
    /// use walk_ignore_rules::IgnoreRules;
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
    /// use walk_ignore_rules::IgnoreRules;
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
    /// use walk_ignore_rules::IgnoreRules;
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
    /// use walk_ignore_rules::IgnoreRules;
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
    /// use walk_ignore_rules::IgnoreRules;
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
    /// use walk_ignore_rules::IgnoreRules;
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
    /// use walk_ignore_rules::IgnoreRules;
    /// let anywhere = IgnoreRules::new().require_git(false);
    /// assert_ne!(anywhere, IgnoreRules::new());
    /// ```
    #[must_use = "a setter returns the changed rules"]
    pub fn require_git(mut self, yes: bool) -> IgnoreRules {
        self.require_git = yes;
        self
    }
}
