//! du's words: a system error as `strerror` says it, and a file name
//! quoted as coreutils quotes it in messages (`'a b'`, `"it's"`,
//! `'a'$'\n''b'`) and, on a terminal, in its lines.

use std::io;

/// The system's text for `e` without Rust's " (os error N)".
pub fn strerror(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if e.raw_os_error().is_some() => text[..at].to_owned(),
        _ => text,
    }
}

/// Whether `b` can stand in a shell word without quotes.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"%+,-./:=@_^".contains(&b)
}

/// `name` quoted as coreutils' `shell-escape-always` style does (its
/// messages' `quoteaf`): in single quotes; in double quotes when it holds
/// a `'` and nothing a shell would expand; control bytes and bytes that
/// are not UTF-8 as `$'\n'`, `$'\377'` outside the quotes.
pub fn quote(name: &[u8]) -> String {
    quote_as(name, true)
}

/// `name` as coreutils' `shell-escape` style writes it (du's lines on a
/// terminal): as is when nothing in it needs quotes, else as
/// [`quote`].
pub fn quote_if_needed(name: &[u8]) -> String {
    quote_as(name, false)
}

fn quote_as(name: &[u8], always: bool) -> String {
    let text = std::str::from_utf8(name).ok();
    let printable = text.is_some_and(|t| !t.chars().any(char::is_control));
    if !always && printable && !name.is_empty() && name.iter().all(|&b| plain(b) || b >= 0x80) {
        return String::from_utf8_lossy(name).into_owned();
    }
    if let (true, Some(t)) = (printable, text) {
        if !t.contains('\'') {
            return format!("'{t}'");
        }
        if !t.contains(['"', '$', '`', '\\', '!']) {
            return format!("\"{t}\"");
        }
    }
    // Piece by piece: printable runs in single quotes (a `'` as `\'`
    // between them), every other byte as `$'\OOO'`.
    let mut out = String::from("'");
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' => out.push_str("'\\''"),
                c if c.is_control() => {
                    let mut buf = [0; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&escape(b));
                    }
                }
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            out.push_str(&escape(b));
        }
    }
    out.push('\'');
    // No empty quotes around a leading or trailing escape.
    let out = out.strip_prefix("''").unwrap_or(&out);
    out.strip_suffix("''").unwrap_or(out).to_owned()
}

/// One byte as `'$'\n''` (closing and reopening the single quotes).
fn escape(b: u8) -> String {
    let code = match b {
        b'\n' => "\\n".to_owned(),
        b'\t' => "\\t".to_owned(),
        b'\r' => "\\r".to_owned(),
        b => format!("\\{b:03o}"),
    };
    format!("'$'{code}''")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_as_coreutils_quotes_them() {
        assert_eq!(quote(b"d/no-x"), "'d/no-x'");
        assert_eq!(quote(b"q name"), "'q name'");
        assert_eq!(quote(b"it's"), "\"it's\"");
        assert_eq!(quote(b"a\nb"), "'a'$'\\n''b'");
        assert_eq!(quote(b"\xff"), "$'\\377'");
        assert_eq!(quote_if_needed(b"plain/name.txt"), "plain/name.txt");
        assert_eq!(quote_if_needed(b"q name"), "'q name'");
    }

    #[test]
    fn os_errors_read_as_strerror() {
        let e = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(strerror(&e), "Permission denied");
        assert_eq!(strerror(&io::Error::other("x")), "x");
    }
}
