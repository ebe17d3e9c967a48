//! What the browser tells besides the rows: a row's details (`i`), the
//! key table (`?`), names as shown, and a saved scan read from a file.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use traverse::NcduDir;

use super::model::Model;
use super::rows::Row;
use super::status::size3;
use crate::output::human_path;

/// The key table, as `?` shows it (and the README and the man page).
pub const KEYS: &[(&str, &str)] = &[
    ("up/down, j/k", "move"),
    (
        "PgUp/PgDn, g/G, Home/End",
        "a page, the first row, the last",
    ),
    ("Enter, right, l", "into the directory"),
    ("Backspace, left, h, <", "up to the parent"),
    (
        "s  n  C  M",
        "sort by size, name, count, mtime (again: reversed)",
    ),
    ("a", "apparent size / disk usage"),
    ("c  m", "the count column, the mtime column"),
    ("e  .", "hidden files shown or not"),
    ("/", "filter by name (Enter keeps it, Esc clears it)"),
    ("i", "details of the row"),
    ("space", "mark (d deletes the marked rows)"),
    ("d", "delete, after a confirmation listing what"),
    ("r", "scan the directory again"),
    ("b", "a shell in the directory ($SHELL)"),
    ("q, Ctrl-C", "quit"),
    ("Q", "quit and print the directory's path"),
    ("?", "this help"),
];

/// A name as the screen shows it (control characters escaped).
pub fn name(bytes: &[u8]) -> String {
    human_path(Path::new(std::ffi::OsStr::from_bytes(bytes)))
}

/// The details of `row` of the directory shown: what the scan saw, and
/// the times as the file has them now (when it is still there).
pub fn lines(model: &Model, row: &Row) -> Vec<String> {
    let path = model.path().join(std::ffi::OsStr::from_bytes(&row.name));
    let kind = match (row.dir, row.not_regular, row.other_fs) {
        (Some(_), _, _) => "directory",
        (None, _, true) => "directory on another filesystem (not counted)",
        (None, true, _) => "not a regular file (symlink, fifo, socket or device)",
        _ => "regular file",
    };
    let mut lines = vec![
        format!("path:          {}", human_path(&path)),
        format!("type:          {kind}"),
        format!("disk usage:    {} ({} bytes)", size3(row.disk), row.disk),
        format!("apparent size: {} ({} bytes)", size3(row.bytes), row.bytes),
    ];
    if row.dir.is_some() {
        lines.push(format!("entries:       {}", row.count));
    }
    lines.push(format!("inode:         {}", row.ino));
    if let Some(n) = row.nlink {
        lines.push(format!("links:         {n} (its sizes count once)"));
    }
    if row.read_error {
        lines.push("errors:        could not be read, whole or in part".to_owned());
    }
    if let Some(t) = row.mtime {
        lines.push(format!("modified:      {} (at the scan)", time(t)));
    }
    match std::fs::symlink_metadata(&path) {
        Ok(meta) => {
            let secs = |s: i64| u64::try_from(s).map_or_else(|_| s.to_string(), time);
            lines.push(format!("links now:     {}", meta.nlink()));
            lines.push(format!("modified now:  {}", secs(meta.mtime())));
            lines.push(format!("changed now:   {}", secs(meta.ctime())));
            lines.push(format!("accessed now:  {}", secs(meta.atime())));
        }
        Err(e) => lines.push(format!("now:           {e}")),
    }
    lines
}

/// Seconds since the epoch as a UTC date and time.
pub fn time(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(i64::MAX / 2) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// A saved scan: the file's tree, or why it cannot be read. `-` is
/// stdin.
pub fn import(file: &Path) -> Result<NcduDir, String> {
    let mut text = Vec::new();
    if file.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut text)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_end(&mut text))
    }
    .map_err(|e| e.to_string())?;
    NcduDir::read_export(&text).map_err(|why| format!("not a saved scan: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_dates() {
        // As `date -u -d @N "+%F %H:%M"` prints them.
        assert_eq!(time(0), "1970-01-01 00:00");
        assert_eq!(time(951_782_400), "2000-02-29 00:00");
        assert_eq!(time(1_795_000_000), "2026-11-18 11:06");
    }
}
