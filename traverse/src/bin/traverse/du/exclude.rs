//! `--exclude PATTERN` and `-X FILE` as du matches them: the shell
//! pattern against the whole path of each entry (the PATH given
//! included), or against any tail of it that follows a `/`; `*` and `?`
//! match `/` too (fnmatch without `FNM_PATHNAME`). So `--exclude=x`
//! leaves out every entry named `x`, `--exclude=a/b` the entries whose
//! path ends in `a/b`, `--exclude='*/b'` every `b` below a directory, and
//! an excluded PATH is not walked at all.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The patterns, as one matcher.
#[derive(Clone, Debug)]
pub struct Exclude(GlobSet);

impl Exclude {
    /// The matcher of `patterns`; `None` when there are none. A pattern
    /// fnmatch would take literally (an unclosed `[`) is taken literally.
    pub fn new(patterns: &[String]) -> Option<Exclude> {
        if patterns.is_empty() {
            return None;
        }
        let mut set = GlobSetBuilder::new();
        for pattern in patterns {
            let glob = GlobBuilder::new(pattern)
                .literal_separator(false)
                .backslash_escape(true)
                .build()
                .or_else(|_| GlobBuilder::new(&globset::escape(pattern)).build());
            if let Ok(glob) = glob {
                set.add(glob);
            }
        }
        set.build().ok().map(Exclude)
    }

    /// Whether the entry at `path` is left out.
    pub fn matches(&self, path: &[u8]) -> bool {
        let is_match = |tail: &[u8]| self.0.is_match(OsStr::from_bytes(tail));
        if is_match(path) {
            return true;
        }
        path.iter()
            .enumerate()
            .any(|(i, &b)| b == b'/' && path.get(i + 1) != Some(&b'/') && is_match(&path[i + 1..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(patterns: &[&str]) -> Exclude {
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        Exclude::new(&patterns).unwrap()
    }

    /// The cases of coreutils' tests/du/exclude.sh and slash.sh.
    #[test]
    fn patterns_match_paths_as_du_matches_them() {
        assert!(ex(&["x"]).matches(b"a/x"));
        assert!(!ex(&["x"]).matches(b"a/xy"));
        assert!(ex(&["a"]).matches(b"a"));
        assert!(ex(&["a/u"]).matches(b"a/u"));
        assert!(!ex(&["a/u"]).matches(b"a/u/v"));
        assert!(ex(&["*/b"]).matches(b"top/a/b"));
        assert!(ex(&["[^/]*"]).matches(b"/usr"));
        assert!(!ex(&["[^/]*"]).matches(b"/"));
        assert!(ex(&["*.o"]).matches(b"src/x/main.o"));
        assert!(ex(&["[z"]).matches(b"d/[z"));
        assert!(Exclude::new(&[]).is_none());
    }
}
