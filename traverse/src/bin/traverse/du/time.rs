//! `du --time[=WORD]` and `--time-style=STYLE`: which time a line shows
//! (the latest in its subtree), and how it is written, as GNU du reads
//! the words (argmatch: a unique prefix will do) and writes the times
//! (local time, `TZ`, with fprintftime's `%N` and `%:z`).

use std::ffi::CString;

use traverse::{TimeField, Timestamp};

/// GNU du's words for `--time=WORD`; a bare `--time` is the modification
/// time, which has no word.
const WORDS: [(&str, TimeField); 5] = [
    ("atime", TimeField::Access),
    ("access", TimeField::Access),
    ("use", TimeField::Access),
    ("ctime", TimeField::StatusChange),
    ("status", TimeField::StatusChange),
];

/// The styles of `--time-style` and their formats.
const STYLES: [(&str, &str); 3] = [
    ("full-iso", "%Y-%m-%d %H:%M:%S.%N %z"),
    ("long-iso", "%Y-%m-%d %H:%M"),
    ("iso", "%Y-%m-%d"),
];

/// The time shown on each line, and its format (strftime's, with `%N`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Times {
    pub field: TimeField,
    pub format: String,
}

/// argmatch: `arg` exactly, else the one value of every word it begins.
fn argmatch<T: Copy + PartialEq>(arg: &str, words: &[(&str, T)]) -> Result<T, &'static str> {
    if let Some((_, v)) = words.iter().find(|(w, _)| *w == arg) {
        return Ok(*v);
    }
    let mut found = words.iter().filter(|(w, _)| w.starts_with(arg));
    let Some((_, first)) = found.next() else {
        return Err("invalid");
    };
    if found.all(|(_, v)| v == first) {
        Ok(*first)
    } else {
        Err("ambiguous")
    }
}

/// argmatch's complaint: the argument, then the valid ones, those of one
/// value on one line.
fn refusal<T: Copy + PartialEq>(
    kind: &str,
    arg: &str,
    context: &str,
    words: &[(&str, T)],
) -> String {
    let mut text = format!("{kind} argument '{arg}' for '{context}'\nValid arguments are:");
    let mut last: Option<T> = None;
    for (word, value) in words {
        if last == Some(*value) {
            text.push_str(&format!(", '{word}'"));
        } else {
            text.push_str(&format!("\n  - '{word}'"));
        }
        last = Some(*value);
    }
    text
}

impl Times {
    /// The settings of `--time[=WORD]` (`word`: `None` for a bare
    /// `--time`) and `--time-style` (`style`), else from `TIME_STYLE`
    /// (`env`) as du reads it; du's complaint for a word it refuses.
    pub fn new(
        word: Option<&str>,
        style: Option<&str>,
        env: Option<&str>,
    ) -> Result<Times, String> {
        let field = match word {
            None => TimeField::Modification,
            Some(w) => argmatch(w, &WORDS).map_err(|kind| refusal(kind, w, "--time", &WORDS))?,
        };
        let style = match (style, env) {
            (Some(style), _) => style.to_owned(),
            (None, None) | (None, Some("locale")) => "long-iso".to_owned(),
            // As ls: anything after a newline is the format of recent
            // files, which du has no use for.
            (None, Some(env)) if env.starts_with('+') => {
                env.split('\n').next().unwrap_or_default().to_owned()
            }
            (None, Some(mut env)) => {
                while let Some(rest) = env.strip_prefix("posix-") {
                    env = rest;
                }
                env.to_owned()
            }
        };
        let format = match style.strip_prefix('+') {
            Some(format) => format.to_owned(),
            None => {
                let styles: Vec<(&str, &str)> = STYLES.iter().map(|&(s, _)| (s, s)).collect();
                let chosen = argmatch(&style, &styles)
                    .map_err(|kind| refusal(kind, &style, "time style", &styles))?;
                let (_, format) = STYLES.iter().find(|(s, _)| *s == chosen).expect("a style");
                (*format).to_owned()
            }
        };
        Ok(Times { field, format })
    }

    /// `time` in local time (`TZ`) as the format says; the seconds alone,
    /// and `Err` with them, when the year does not fit `struct tm`.
    pub fn show(&self, time: Timestamp) -> Result<String, String> {
        let Some(tm) = local(time.sec) else {
            return Err(time.sec.to_string());
        };
        let format = expand_gnu(&self.format, time.nsec, tm.tm_gmtoff);
        Ok(strftime(&format, &tm))
    }
}

/// The broken-down local time of `sec`, `None` when out of range
/// (localtime_r reads `TZ` itself, in glibc and musl).
fn local(sec: i64) -> Option<libc::tm> {
    let t: libc::time_t = sec;
    let mut tm = std::mem::MaybeUninit::<libc::tm>::zeroed();
    // SAFETY: both pointers are valid for the call; localtime_r writes
    // only into `tm` and returns it, or NULL when the year overflows.
    let done = unsafe { libc::localtime_r(&t, tm.as_mut_ptr()) };
    // SAFETY: zeroed is a valid `tm`, and filled in when `done` is set.
    (!done.is_null()).then(|| unsafe { tm.assume_init() })
}

/// The conversions strftime lacks, done here: `%N` (nanoseconds, `%3N`
/// the first 3 digits), `%:z` and `%::z` (the offset with colons); every
/// other `%` conversion left to strftime.
fn expand_gnu(format: &str, nsec: u32, gmtoff: i64) -> String {
    let mut out = String::new();
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let spec = &rest[at + 1..];
        let digits = spec.len() - spec.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let colons = spec.len() - spec.trim_start_matches(':').len();
        if spec[digits..].starts_with('N') {
            let width = spec[..digits].parse().unwrap_or(9).clamp(1, 9);
            out.push_str(&format!("{nsec:09}")[..width]);
            rest = &spec[digits + 1..];
        } else if (1..=2).contains(&colons) && spec[colons..].starts_with('z') {
            let sign = if gmtoff < 0 { '-' } else { '+' };
            let off = gmtoff.unsigned_abs();
            let (h, m, s) = (off / 3600, off / 60 % 60, off % 60);
            out.push_str(&format!("{sign}{h:02}:{m:02}"));
            if colons == 2 {
                out.push_str(&format!(":{s:02}"));
            }
            rest = &spec[colons + 1..];
        } else {
            // `%%` and the others, whole, for strftime.
            let len = spec.chars().next().map_or(0, char::len_utf8);
            out.push('%');
            out.push_str(&spec[..len]);
            rest = &spec[len..];
        }
    }
    out.push_str(rest);
    out
}

/// strftime of `tm` with `format` (which may give an empty text).
fn strftime(format: &str, tm: &libc::tm) -> String {
    // A leading byte tells an empty result from a buffer too small.
    let Ok(cformat) = CString::new(format!("x{format}")) else {
        return String::new();
    };
    let mut size = 256;
    loop {
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has `size` writable bytes, `cformat` is
        // NUL-terminated and `tm` a valid broken-down time.
        let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), size, cformat.as_ptr(), tm) };
        if n > 0 {
            return String::from_utf8_lossy(&buf[1..n]).into_owned();
        }
        if size > 1 << 20 {
            return String::new();
        }
        size *= 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_styles_are_read_as_gnu_du_reads_them() {
        let t = |w, s, e| Times::new(w, s, e).map(|t| (t.field, t.format));
        let long = "%Y-%m-%d %H:%M".to_owned();
        assert_eq!(
            t(None, None, None),
            Ok((TimeField::Modification, long.clone()))
        );
        assert_eq!(
            t(Some("a"), None, None),
            Ok((TimeField::Access, long.clone()))
        );
        assert_eq!(
            t(Some("s"), None, None),
            Ok((TimeField::StatusChange, long.clone()))
        );
        assert_eq!(
            t(None, None, Some("locale")),
            Ok((TimeField::Modification, long))
        );
        let iso = "%Y-%m-%d".to_owned();
        assert_eq!(t(None, None, Some("posix-iso")).unwrap().1, iso);
        assert_eq!(t(None, Some("i"), None).unwrap().1, iso);
        assert_eq!(t(None, None, Some("+%Y\n%m")).unwrap().1, "%Y");
        assert!(t(None, Some("posix-iso"), None).is_err());
        let refused = t(Some("mtime"), None, None).unwrap_err();
        assert_eq!(
            refused,
            "invalid argument 'mtime' for '--time'\nValid arguments are:\n  - 'atime', 'access', 'use'\n  - 'ctime', 'status'"
        );
        assert!(t(Some(""), None, None)
            .unwrap_err()
            .starts_with("ambiguous argument ''"));
    }

    #[test]
    fn gnu_conversions_are_expanded() {
        assert_eq!(expand_gnu("%s.%N", 5, 0), "%s.000000005");
        assert_eq!(expand_gnu("%3N %%N", 123_456_789, 0), "123 %%N");
        assert_eq!(
            expand_gnu("%:z|%::z", 0, -(5 * 3600 + 30 * 60)),
            "-05:30|-05:30:00"
        );
    }
}
