//! One directory's ignore files, read relative to its descriptor.

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd};
use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use crate::IgnoreRules;

/// Which of the names that matter to the rules (`.ignore`, `.gitignore`,
/// `.git`) a directory holds: noted from its listing, or looked up when
/// the walk asks before it has the whole listing ([`Names::probe`]). A
/// file not noted is not opened.
///
/// # Example
///
/// ```
/// use walk_ignore_rules::Names;
///
/// let mut names = Names::default();
/// for name in [&b"src"[..], b".gitignore", b"Cargo.toml"] {
///     names.note(name);
/// }
/// assert_ne!(names, Names::default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Names {
    dot_ignore: bool,
    git_ignore: bool,
    git: bool,
}

impl Names {
    /// Notes the entry `name` of the directory.
    ///
    /// ```
    /// let mut names = walk_ignore_rules::Names::default();
    /// names.note(b"README.md");
    /// assert_eq!(names, walk_ignore_rules::Names::default());
    /// ```
    pub fn note(&mut self, name: &[u8]) {
        match name {
            b".ignore" => self.dot_ignore = true,
            b".gitignore" => self.git_ignore = true,
            b".git" => self.git = true,
            _ => {}
        }
    }

    /// The names of the directory open as `dir`, for a walk that has not
    /// listed it whole: `.git` is looked up (not following a link), and
    /// both ignore files count as there, for their open to tell (a
    /// missing one costs the one failed lookup a stat would).
    ///
    /// ```
    /// let tmp = tempfile::tempdir()?;
    /// std::fs::create_dir(tmp.path().join(".git"))?;
    /// let names = walk_ignore_rules::Names::probe(&std::fs::File::open(tmp.path())?);
    /// let mut listed = walk_ignore_rules::Names::default();
    /// for name in [&b".git"[..], b".ignore", b".gitignore"] {
    ///     listed.note(name);
    /// }
    /// assert_eq!(names, listed);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn probe(dir: &impl AsFd) -> Names {
        Names {
            dot_ignore: true,
            git_ignore: true,
            git: stat_at(dir.as_fd(), c".git").is_ok(),
        }
    }
}

/// The ignore files of one directory, and whether it is in a git
/// repository.
#[derive(Debug)]
pub(crate) struct Level {
    dot_ignore: Option<Gitignore>,
    git_ignore: Option<Gitignore>,
    in_git: bool,
}

impl Level {
    /// The files `rules` ask for among `names` of the directory open as
    /// `dir`, whose patterns are relative to `path`: a file that is not a
    /// regular one or cannot be read counts as absent, a bad pattern is
    /// skipped (as git skips it). `in_git`: its parent is in a repository.
    pub(crate) fn read(
        rules: &IgnoreRules,
        dir: BorrowedFd<'_>,
        path: &Path,
        names: &Names,
        in_git: bool,
    ) -> Level {
        let file = |wanted: bool, there: bool, name: &CStr| {
            if !(wanted && there) {
                return None;
            }
            let text = read_at(dir, name).ok()?;
            let mut builder = GitignoreBuilder::new(path);
            let from = path.join(name.to_str().ok()?);
            for line in String::from_utf8_lossy(&text).lines() {
                let _ = builder.add_line(Some(from.clone()), line);
            }
            builder.build().ok().filter(|g| !g.is_empty())
        };
        Level {
            dot_ignore: file(rules.dot_ignore, names.dot_ignore, c".ignore"),
            git_ignore: file(rules.git_ignore, names.git_ignore, c".gitignore"),
            in_git: in_git || names.git,
        }
    }

    /// No file to match.
    pub(crate) fn is_empty(&self) -> bool {
        self.dot_ignore.is_none() && self.git_ignore.is_none()
    }

    pub(crate) fn in_git(&self) -> bool {
        self.in_git
    }

    /// What the `.ignore` file (`dot`) or the `.gitignore` file says of
    /// `path`.
    pub(crate) fn matched(&self, dot: bool, path: &Path, is_dir: bool) -> Match<()> {
        let file = if dot {
            &self.dot_ignore
        } else {
            &self.git_ignore
        };
        file.as_ref()
            .map_or(Match::None, |g| g.matched(path, is_dir).map(|_| ()))
    }
}

/// The whole of the regular file `name` in the directory `dir`: not
/// through a symbolic link, and without waiting on a FIFO (opened
/// non-blocking, then refused as not a regular file).
fn read_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: `name` is NUL-terminated and outlives the call; `dir` is a
    // descriptor kept open by the borrow.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    let mut file = unsafe { File::from_raw_fd(fd) };
    if !file.metadata()?.is_file() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut text = Vec::new();
    file.read_to_end(&mut text)?;
    Ok(text)
}

/// `fstatat` of `name` in `dir`, not following a symbolic link.
fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `st` has room for a `stat`, `dir`
    // is kept open by the borrow.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatat succeeded, so it filled `st`.
    Ok(unsafe { st.assume_init() })
}
