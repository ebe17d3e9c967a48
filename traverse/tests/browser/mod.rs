//! What the browser's tests share: a browser in a tmux pane, its rows read
//! off the screen, and the rows du and find give.

#![allow(dead_code)] // each test file uses part of it

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::testenv::*;

/// `traverse ARGS` in a pane of `width` columns, in a shell that prints
/// its exit status and stays, or `None` (a note printed) where tmux is
/// missing.
pub fn start_sized(name: &str, width: u16, args: &str) -> Option<Pane> {
    start_line(name, width, &format!("{} {args}", bin().display()))
}

/// A shell `line` (the program under test behind `env` or `setpriv`, say)
/// in a pane of `width` columns, as [`start_sized`] runs it.
pub fn start_line(name: &str, width: u16, line: &str) -> Option<Pane> {
    let script = format!("{line}; echo EXIT=$?; sleep 60");
    Pane::start(&format!("browse-{name}"), (width, 30), &[script.as_ref()])
}

/// As [`start_sized`], 120 columns.
pub fn start_browser(name: &str, args: &str) -> Option<Pane> {
    start_sized(name, 120, args)
}

/// A row of the listing: size as shown, entries, name (with `/` for a
/// directory), and its flag (`H` hard link, `@` not a regular file, `!`
/// unreadable, `*` marked: the first two columns).
#[derive(Debug, PartialEq, Eq)]
pub struct Row {
    pub size: String,
    pub count: u64,
    pub name: String,
}

/// The rows of a screen: the lines between the title and the first one
/// without a bar.
pub fn rows(screen: &str) -> Vec<Row> {
    screen
        .lines()
        .skip(1)
        .take_while(|l| l.contains('[') && l.contains("%"))
        .map(|l| {
            let (size, rest) = l.split_once('[').unwrap();
            let (_, rest) = rest.split_once(']').unwrap();
            let mut words = rest.split_whitespace();
            let _share = words.next().unwrap();
            Row {
                size: size[2..].trim().to_owned(),
                count: words.next().unwrap().parse().unwrap(),
                name: words.next().unwrap().to_owned(),
            }
        })
        .collect()
}

/// The first two columns of each row (mark and flag).
pub fn flags(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip(1)
        .take_while(|l| l.contains('[') && l.contains("%"))
        .map(|l| l.chars().take(2).collect())
        .collect()
}

/// A size as the browser shows it, three significant digits in powers of
/// 1 024 (19.4M), computed here without the browser's code: the digits
/// of the value scaled to the unit, rounded half up.
pub fn three_digits(n: u64) -> String {
    if n < 1000 {
        return format!("{n}B");
    }
    let mut unit = 0;
    let mut scaled = n as f64 / 1024.0;
    while scaled >= 999.5 {
        scaled /= 1024.0;
        unit += 1;
    }
    let letter = ["K", "M", "G", "T", "P", "E"][unit];
    let decimals = if scaled < 9.995 {
        2
    } else if scaled < 99.95 {
        1
    } else {
        0
    };
    format!("{scaled:.decimals$}{letter}")
}

/// The row du and find give for `path`: disk usage (`du -sB1`), or the
/// apparent size (`du -sb`) with `apparent`; entries as `find | wc -l`;
/// named as the browser names it.
pub fn reference_row_as(path: &Path, apparent: bool) -> Row {
    let bytes = du(path, &[if apparent { "-sb" } else { "-sB1" }]);
    let mut name = path.file_name().unwrap().to_str().unwrap().to_owned();
    if path.symlink_metadata().unwrap().is_dir() {
        name.push('/');
    }
    Row {
        size: three_digits(bytes),
        count: find_count(path, &[]),
        name,
    }
}

/// The reference row of `path`, disk usage.
pub fn reference_row(path: &Path) -> Row {
    reference_row_as(path, false)
}

/// The reference rows of `dir`'s entries, in name order.
pub fn reference_rows_as(dir: &Path, apparent: bool) -> Vec<Row> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| reference_row_as(p, apparent))
        .collect()
}

pub fn reference_rows(dir: &Path) -> Vec<Row> {
    reference_rows_as(dir, false)
}

/// The reference rows of `dir`, largest first by `du -sB1`, ties by name.
pub fn reference_rows_by_size(dir: &Path) -> Vec<Row> {
    let mut want = reference_rows(dir);
    let bytes = |r: &Row| du(&dir.join(r.name.trim_end_matches('/')), &["-sB1"]);
    want.sort_by(|a, b| bytes(b).cmp(&bytes(a)).then_with(|| a.name.cmp(&b.name)));
    want
}

/// The title's totals: "SIZE in N entries", checked against du and find.
pub fn assert_title(screen: &str, dir: &Path) {
    let want = reference_row(dir);
    let title = screen.lines().next().unwrap();
    let expect = format!("{}  {} in {} entries", dir.display(), want.size, want.count);
    assert!(
        title.starts_with(&expect),
        "want {expect:?}, screen:\n{screen}"
    );
}

pub fn scanned(screen: &str) -> bool {
    screen.contains("scanned in")
}

/// Selects `name` in the listing sorted by name (the rows of `dir`).
pub fn select(pane: &Pane, dir: &Path, name: &str) {
    // "n" again would reverse the order.
    if !pane.screen().contains("(sort: name)") {
        pane.keys(&["n"]);
    }
    pane.keys(&["Home"]);
    pane.wait("sorted by name", |s| s.contains("(sort: name)"));
    let at = reference_rows(dir)
        .iter()
        .position(|r| r.name.trim_end_matches('/') == name)
        .unwrap();
    for _ in 0..at {
        pane.keys(&["j"]);
    }
}

/// Whether `command` is installed (for the tests that need it).
pub fn have(command: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {command}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A character on screen with its colours (indices of the 256-colour
/// palette, `u32::MAX` for a 24-bit one; `None`: the terminal's default)
/// and whether it is in reverse video.
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    pub ch: char,
    pub fg: Option<u32>,
    pub bg: Option<u32>,
    pub reverse: bool,
}

/// The lines of a screen captured with its escape sequences
/// ([`Pane::styled_screen`]), each character with the style the
/// sequences before it set. Read here as a terminal reads SGR sequences
/// (`ESC [ params m`), not with the browser's code; tmux carries a style
/// over from one line to the next, so the state is too.
pub fn cells(styled: &str) -> Vec<Vec<Cell>> {
    let mut state = Cell {
        ch: ' ',
        fg: None,
        bg: None,
        reverse: false,
    };
    let mut lines = vec![Vec::new()];
    let mut chars = styled.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => lines.push(Vec::new()),
            '\x1b' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut body = String::new();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        if c == 'm' {
                            apply_sgr(&mut state, &body);
                        }
                        break;
                    }
                    body.push(c);
                }
            }
            c => lines.last_mut().unwrap().push(Cell { ch: c, ..state }),
        }
    }
    lines
}

/// Applies the parameters of one SGR sequence to `state`.
fn apply_sgr(state: &mut Cell, body: &str) {
    let params: Vec<u32> = if body.is_empty() {
        vec![0]
    } else {
        body.split([';', ':'])
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    let mut it = params.into_iter();
    while let Some(p) = it.next() {
        match p {
            0 => {
                (state.fg, state.bg, state.reverse) = (None, None, false);
            }
            7 => state.reverse = true,
            27 => state.reverse = false,
            30..=37 => state.fg = Some(p - 30),
            90..=97 => state.fg = Some(p - 90 + 8),
            40..=47 => state.bg = Some(p - 40),
            100..=107 => state.bg = Some(p - 100 + 8),
            39 => state.fg = None,
            49 => state.bg = None,
            38 | 48 => {
                let colour = match it.next() {
                    Some(5) => it.next(),
                    Some(2) => {
                        it.nth(2);
                        Some(u32::MAX)
                    }
                    _ => None,
                };
                if p == 38 {
                    state.fg = colour;
                } else {
                    state.bg = colour;
                }
            }
            _ => {}
        }
    }
}

/// The text of a line of cells.
pub fn text(line: &[Cell]) -> String {
    line.iter().map(|c| c.ch).collect()
}

/// The name on the row drawn in reverse video (the selection), or `None`.
pub fn selected_name(styled: &str) -> Option<String> {
    cells(styled)
        .iter()
        .skip(1)
        .take_while(|l| text(l).contains('%'))
        .find(|l| l.iter().any(|c| !c.ch.is_whitespace() && c.reverse))
        .map(|l| text(l).split_whitespace().last().unwrap().to_owned())
}
