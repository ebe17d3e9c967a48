//! `--tree`: the largest subtrees as a picture a person reads at a
//! glance. One line each, largest first among siblings:
//!
//! ```text
//!  100M ██████████ 100% t
//!   50M █████░░░░░  50% ├─ src
//!   30M ██████░░░░  60% │  ├─ core
//!   10M ██░░░░░░░░  20% │  └─ util
//!   40M ████░░░░░░  40% ├─ data
//!   10M █░░░░░░░░░  10% └─ docs
//! ```
//!
//! The size (as `du -h`, or the entry count with `--inodes`), a bar and a
//! percentage for its share of its parent, then the name in the tree. The
//! lines shown are the largest ones, as many as the terminal has rows (or
//! `--top N`), which the breakdown picks as `--top` does: a parent is
//! never smaller than its child, so every line comes with its parent.

use std::io::{self, IsTerminal};
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::line::Line;
use crate::output;

/// How the picture fits the screen.
#[derive(Clone, Debug)]
pub struct Fit {
    /// Columns.
    pub width: usize,
    /// Lines at most.
    pub lines: usize,
    /// Levels below the root at most (`-d N`).
    pub depth: Option<usize>,
    /// ANSI colours: on a terminal, unless `NO_COLOR` is set.
    pub color: bool,
}

/// Below this width no name would fit.
const MIN_WIDTH: usize = 20;

/// Lines of a picture that does not go to a terminal.
const LINES_OFF_TERMINAL: usize = 40;

impl Fit {
    /// The width: `--width`, else `$COLUMNS` (as ls reads it), else the
    /// terminal's, else 80. The lines: `--top N`, else the terminal's rows
    /// less one for the prompt, else 40.
    pub fn new(width: Option<u16>, depth: Option<usize>, top: Option<u64>) -> Fit {
        let terminal = io::stdout().is_terminal().then(terminal_size).flatten();
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
        let width = width
            .map(usize::from)
            .or(columns)
            .or(terminal.map(|(cols, _)| cols))
            .unwrap_or(80)
            .max(MIN_WIDTH);
        let lines = top
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .or(terminal.map(|(_, rows)| rows.saturating_sub(1)))
            .unwrap_or(LINES_OFF_TERMINAL)
            .max(1);
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Fit {
            width,
            lines,
            depth,
            color: io::stdout().is_terminal() && !no_color,
        }
    }

    /// Whether lines at `depth` belong in the picture.
    pub fn shows(&self, depth: usize) -> bool {
        self.depth.is_none_or(|max| depth <= max)
    }
}

/// The columns and rows of the terminal on stdout.
fn terminal_size() -> Option<(usize, usize)> {
    // SAFETY: an all-zero winsize is a valid value for the kernel to fill.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize through the pointer, which
    // points to a live local of that type.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0 && size.ws_row > 0)
        .then(|| (usize::from(size.ws_col), usize::from(size.ws_row)))
}

/// SGR codes: the bars' colours by depth, the empty part of a bar and the
/// tree's lines, a directory's name.
const BAR_COLORS: [&str; 5] = ["36", "32", "33", "35", "34"];
const FAINT: &str = "90";
const DIR_NAME: &str = "1;34";

fn paint(out: &mut String, color: bool, code: &str, text: &str) {
    if color && !text.is_empty() {
        out.push_str("\x1b[");
        out.push_str(code);
        out.push('m');
        out.push_str(text);
        out.push_str("\x1b[0m");
    } else {
        out.push_str(text);
    }
}

/// The picture of `lines` (the root's among them, at depth 0), each
/// ranked by `size`; `counts`: sizes are entry counts, else bytes. A line
/// whose parent is not among them is left out.
pub fn picture(lines: &[Line], size: impl Fn(&Line) -> u128, counts: bool, fit: &Fit) -> String {
    let Some(root) = lines.iter().position(|l| l.depth == 0) else {
        return String::new();
    };
    let index: FxHashMap<&Path, usize> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.path.as_path(), i))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); lines.len()];
    for (i, l) in lines.iter().enumerate() {
        if l.depth == 0 {
            continue;
        }
        if let Some(&parent) = l.path.parent().and_then(|p| index.get(p)) {
            children[parent].push(i);
        }
    }
    let sizes: Vec<u128> = lines.iter().map(&size).collect();
    for kids in &mut children {
        kids.sort_by(|&a, &b| {
            sizes[b]
                .cmp(&sizes[a])
                .then_with(|| lines[a].path.cmp(&lines[b].path))
        });
    }
    let label = |n: u128| {
        if counts {
            n.to_string()
        } else {
            output::human_size(n)
        }
    };
    let labels: Vec<String> = sizes.iter().map(|&n| label(n)).collect();
    let label_width = labels.iter().map(String::len).max().unwrap_or(1);
    let bar = (fit.width / 4).clamp(5, 30);
    // The size, a space, the bar, a space, "100%", a space: the rest is
    // the tree and the names.
    let names_width = fit.width.saturating_sub(label_width + bar + 7);
    let mut out = String::new();
    // (line, its parent's size, the tree's lines before its name, and
    // before its children's).
    let mut stack: Vec<(usize, Option<u128>, String, String)> =
        vec![(root, None, String::new(), String::new())];
    while let Some((i, parent, lead, below)) = stack.pop() {
        let kids = &children[i];
        for (k, &kid) in kids.iter().enumerate().rev() {
            let last = k + 1 == kids.len();
            let (branch, next) = if last {
                ("└─ ", "   ")
            } else {
                ("├─ ", "│  ")
            };
            stack.push((
                kid,
                Some(sizes[i]),
                format!("{below}{branch}"),
                format!("{below}{next}"),
            ));
        }
        let l = &lines[i];
        let (cells, percent) = share(sizes[i], parent, bar);
        out.push_str(&format!("{:>label_width$} ", labels[i]));
        let color = BAR_COLORS[l.depth % BAR_COLORS.len()];
        paint(&mut out, fit.color, color, &"█".repeat(cells));
        paint(&mut out, fit.color, FAINT, &"░".repeat(bar - cells));
        out.push_str(&format!(" {percent:>3}% "));
        let name = if l.depth == 0 {
            output::human_path(&l.path)
        } else {
            output::human_path(Path::new(l.path.file_name().unwrap_or_default()))
        };
        let (lead, name) = fit_names(&lead, &name, names_width);
        paint(&mut out, fit.color, FAINT, &lead);
        let name_color = if l.totals.dirs > 0 { DIR_NAME } else { "0" };
        paint(&mut out, fit.color && l.totals.dirs > 0, name_color, &name);
        out.push('\n');
    }
    out
}

/// The bar's filled cells out of `bar` and the rounded percentage of
/// `size` in `parent` (the root: full).
fn share(size: u128, parent: Option<u128>, bar: usize) -> (usize, u128) {
    let Some(parent) = parent.filter(|&p| p > 0) else {
        return if parent.is_some() { (0, 0) } else { (bar, 100) };
    };
    // Both cut to 100 bits, so that size * 100 cannot overflow.
    let shift = (u128::BITS - parent.leading_zeros()).saturating_sub(100);
    let (size, parent) = (size.min(parent) >> shift, parent >> shift);
    let part = |scale: u128| (size * scale + parent / 2) / parent;
    let cells = usize::try_from(part(bar as u128)).unwrap_or(bar).min(bar);
    (cells, part(100))
}

/// The tree's lines `lead` and `name` cut to `width` characters: the
/// name first, ending with "…".
fn fit_names(lead: &str, name: &str, width: usize) -> (String, String) {
    let lead_len = lead.chars().count();
    if lead_len >= width {
        return (lead.chars().take(width).collect(), String::new());
    }
    let room = width - lead_len;
    if name.chars().count() <= room {
        return (lead.to_owned(), name.to_owned());
    }
    let mut cut: String = name.chars().take(room.saturating_sub(1)).collect();
    cut.push('…');
    (lead.to_owned(), cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(path: &str, depth: usize, bytes: u128, dirs: u64) -> Line {
        let mut totals = traverse::Totals::default();
        (totals.bytes, totals.dirs) = (bytes, dirs);
        Line {
            path: std::path::PathBuf::from(path),
            depth,
            totals,
            inodes: 0,
            order: None,
        }
    }

    fn fit(width: usize) -> Fit {
        Fit {
            width,
            lines: 100,
            depth: None,
            color: false,
        }
    }

    #[test]
    fn shares_round_to_the_nearest_cell_and_percent() {
        assert_eq!(share(5, None, 10), (10, 100));
        assert_eq!(share(1, Some(3), 10), (3, 33));
        assert_eq!(share(2, Some(3), 10), (7, 67));
        assert_eq!(share(0, Some(0), 10), (0, 0));
        assert_eq!(share(u128::MAX, Some(u128::MAX), 10), (10, 100));
    }

    #[test]
    fn long_names_are_cut_to_the_width() {
        assert_eq!(fit_names("├─ ", "abcdef", 6), ("├─ ".into(), "ab…".into()));
        assert_eq!(fit_names("│  └─ ", "x", 4), ("│  └".into(), String::new()));
        assert_eq!(fit_names("", "abc", 3), (String::new(), "abc".into()));
    }

    #[test]
    fn an_orphan_is_left_out_and_siblings_go_largest_first() {
        let lines = [
            line("r/b", 1, 10, 1),
            line("r", 0, 40, 1),
            line("r/a", 1, 20, 1),
            line("r/gone/x", 2, 5, 1),
        ];
        let text = picture(&lines, |l| l.totals.bytes, false, &fit(40));
        let names: Vec<&str> = text
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(names, ["r", "a", "b"], "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
    }
}
