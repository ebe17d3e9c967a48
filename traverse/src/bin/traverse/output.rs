//! How paths and totals are printed.
//!
//! Paths are bytes; neither a terminal nor JSON can show every byte string
//! as is, so both outputs escape, losslessly and unambiguously:
//!
//! - human output: UTF-8 text as is, except `\` as `\\`, control
//!   characters as `\n`, `\t`, `\r` or `\xHH`, invisible and reordering
//!   characters (zero-width spaces and joiners, bidirectional marks and
//!   overrides: Unicode's format characters, and the line and paragraph
//!   separators) as the `\xHH` of their UTF-8 bytes, so that `cache` and
//!   `cache<U+200B>` never look the same, and bytes that are not UTF-8 as
//!   `\xHH`;
//! - JSON: standard JSON escapes for valid UTF-8, and each byte that is not
//!   UTF-8 as the lone surrogate `\udcHH` (Python's "surrogateescape":
//!   `json.loads(line)["path"].encode("utf-8", "surrogateescape")` gives the
//!   original bytes back). Valid UTF-8 never holds a surrogate, so the
//!   escape cannot be confused with a real character.

use std::fmt::Write as _;
use std::path::Path;

use std::os::unix::ffi::OsStrExt;

use traverse::Totals;

/// `path` for a terminal or a log.
pub fn human_path(path: &Path) -> String {
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() || invisible(c) => {
                    let mut buf = [0; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Whether `c` shows as nothing or changes how the text around it shows:
/// Unicode's format characters (general category Cf, Unicode 16), and the
/// line and paragraph separators.
fn invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

/// `path` as a JSON string, quotes included.
pub fn json_path(path: &Path) -> String {
    let mut out = String::from("\"");
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if u32::from(c) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\udc{b:02x}");
        }
    }
    out.push('"');
    out
}

/// The human lines for one root (`None`: the total of several): disk
/// usage first, as du's; the apparent size (every entry's `st_size`) on
/// the second line.
pub fn human(path: Option<&Path>, t: &Totals, partial: bool) -> String {
    let name = path.map_or_else(|| "total".to_owned(), human_path);
    let mark = if partial { " (partial)" } else { "" };
    format!(
        "{} files, {} bytes on disk\t{name}{mark}\n  {} dirs, {} symlinks, {} other, {} bytes apparent, {} errors\n",
        t.files, t.disk_bytes, t.dirs, t.symlinks, t.other, t.bytes, t.errors
    )
}

/// The JSON line for one root (`None`: the total, with `"path": null`).
pub fn json(path: Option<&Path>, t: &Totals) -> String {
    let mut line = json_fields(path, t);
    line.push_str("}\n");
    line
}

/// The JSON line of a directory of a breakdown: the keys of [`json`] and
/// its `depth`.
pub fn json_dir(path: &Path, depth: usize, t: &Totals) -> String {
    let mut line = json_fields(Some(path), t);
    let _ = writeln!(line, ",\"depth\":{depth}}}");
    line
}

/// A JSON object's opening brace and its keys for a root or a directory.
fn json_fields(path: Option<&Path>, t: &Totals) -> String {
    let name = path.map_or_else(|| "null".to_owned(), json_path);
    format!(
        "{{\"path\":{name},\"files\":{},\"dirs\":{},\"symlinks\":{},\"other\":{},\"bytes\":{},\"disk_bytes\":{},\"errors\":{}",
        t.files, t.dirs, t.symlinks, t.other, t.bytes, t.disk_bytes, t.errors
    )
}

/// The human line of a directory of a breakdown: `SIZE<TAB>PATH`, as du
/// prints it.
pub fn human_dir(path: &Path, size: u128, human: bool) -> String {
    let size = if human {
        human_size(size)
    } else {
        size.to_string()
    };
    format!("{size}\t{}\n", human_path(path))
}

/// `n` bytes as `du -h` writes them ("4.0K", "1.5M", "12G").
pub fn human_size(n: u128) -> String {
    autoscale(n, 1024)
}

/// The unit letters after K, in order.
pub const UNIT_LETTERS: [char; 10] = ['K', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y', 'R', 'Q'];

/// `n` as `du -h` (`base` 1024) or `du --si` (1000) writes it: below
/// `base` as is; else in the largest power of `base` that leaves at least
/// 1, rounded up, with one decimal below 10 (`4.0K`, `1.5M`, `12G`; `k`
/// for 1000).
pub fn autoscale(n: u128, base: u128) -> String {
    let letter = |unit: usize| {
        if base == 1000 && unit == 0 {
            'k'
        } else {
            UNIT_LETTERS[unit]
        }
    };
    if n < base {
        return n.to_string();
    }
    let mut unit = 0;
    let mut scale = base;
    while unit + 1 < UNIT_LETTERS.len() && n / scale >= base {
        scale *= base;
        unit += 1;
    }
    let (whole, rest) = (n / scale, n % scale);
    if whole < 10 {
        // Tenths, rounded up: rest * 10 fits, scale being at most 2^100.
        let tenths = (rest * 10).div_ceil(scale);
        let value = whole * 10 + tenths;
        if value < 100 {
            return format!("{}.{}{}", value / 10, value % 10, letter(unit));
        }
        return format!("10{}", letter(unit));
    }
    let whole = whole + u128::from(rest > 0);
    if whole == base && unit + 1 < UNIT_LETTERS.len() {
        return format!("1.0{}", letter(unit + 1));
    }
    format!("{whole}{}", letter(unit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn p(bytes: &[u8]) -> &Path {
        Path::new(OsStr::from_bytes(bytes))
    }

    #[test]
    fn human_escapes_are_unambiguous() {
        assert_eq!(human_path(p(b"a\nb")), "a\\nb");
        assert_eq!(human_path(p(b"a\\nb")), "a\\\\nb");
        assert_eq!(human_path(p(b"\xff\xfe")), "\\xff\\xfe");
        assert_eq!(human_path(p(b"\\xff")), "\\\\xff");
        assert_eq!(human_path(p("é\u{7f}".as_bytes())), "é\\x7f");
    }

    #[test]
    fn invisible_and_reordering_characters_are_escaped() {
        assert_eq!(
            human_path(p("cache\u{200b}".as_bytes())),
            "cache\\xe2\\x80\\x8b"
        );
        assert_eq!(human_path(p("a\u{202e}b".as_bytes())), "a\\xe2\\x80\\xaeb");
        for c in [
            '\u{200f}', '\u{2066}', '\u{2069}', '\u{2060}', '\u{feff}', '\u{2028}',
        ] {
            assert!(
                human_path(p(c.to_string().as_bytes())).starts_with("\\x"),
                "{c:?}"
            );
        }
        // Visible text stays as it is.
        assert_eq!(
            human_path(p("été 日本 \u{2010}".as_bytes())),
            "été 日本 \u{2010}"
        );
        // Every format character Python's unicodedata knows (an older
        // Unicode than the table here, so a subset of it).
        let listed = std::process::Command::new("python3")
            .args(["-c", "import sys, unicodedata as u\nfor c in range(sys.maxunicode + 1):\n    if u.category(chr(c)) == 'Cf': print(c)"])
            .output();
        let Some(listed) = listed.ok().filter(|o| o.status.success()) else {
            eprintln!("skipped the comparison with Python: no python3");
            return;
        };
        let listed = String::from_utf8(listed.stdout).unwrap();
        assert!(listed.lines().count() > 150, "{listed}");
        for n in listed.lines() {
            let c = char::from_u32(n.parse().unwrap()).unwrap();
            assert!(invisible(c), "U+{:04X} is a format character", u32::from(c));
        }
    }

    #[test]
    fn json_escapes_non_utf8_as_surrogates() {
        assert_eq!(json_path(p(b"a\"b\\c\x01")), "\"a\\\"b\\\\c\\u0001\"");
        assert_eq!(json_path(p(b"x\xffy")), "\"x\\udcffy\"");
        assert_eq!(json_path(p("é".as_bytes())), "\"é\"");
    }

    #[test]
    fn json_line_has_exactly_the_keys() {
        let mut t = Totals::default();
        (t.files, t.dirs, t.symlinks, t.other) = (1, 2, 3, 4);
        (t.bytes, t.disk_bytes, t.errors) = (5, 6, 7);
        assert_eq!(
            json(Some(p(b"d")), &t),
            "{\"path\":\"d\",\"files\":1,\"dirs\":2,\"symlinks\":3,\"other\":4,\"bytes\":5,\"disk_bytes\":6,\"errors\":7}\n"
        );
        assert!(json(None, &t).starts_with("{\"path\":null,"));
    }
}
