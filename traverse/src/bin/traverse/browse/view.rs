//! Drawing the browser with ratatui: a title line (the directory, its
//! totals, the order), the rows on screen (marks, size, a bar scaled to
//! the largest row, the share of the directory, optional count and mtime
//! columns, the name cut to fit), a footer with both totals, and a status
//! line (the walk's progress, a message, a question); the help, a row's
//! details and a confirmation over them. Only the rows on screen are
//! formatted, so a frame costs the same for ten rows or a million.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;
use traverse::Progress;

use super::info::{self, KEYS};
use super::keys::{Browser, Mode};
use super::model::Model;
use super::rows::{Key, Row};
use super::status::size3;
use crate::output::human_path;

/// The width of the bar inside its brackets.
const BAR: usize = 10;

/// Whether colour is wanted (<https://no-color.org>: any non-empty
/// `NO_COLOR` turns it off).
fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, b: &mut Browser, progress: Option<&Progress>) {
    let area = frame.area();
    let line = status_line(b, progress, usize::from(area.width));
    // The status line wraps, so a question or an error shows in full (up
    // to half the screen).
    let width = usize::from(area.width.max(1));
    // Columns, not characters (wide ones take two); a line more when it
    // wraps, as words move whole to the next line.
    let lines = Line::from(line.as_str()).width().div_ceil(width).max(1);
    let lines = if lines > 1 { lines + 1 } else { lines };
    let lines = u16::try_from(lines)
        .unwrap_or(u16::MAX)
        .min(area.height / 2)
        .max(1);
    let [title, body, footer, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(lines),
    ])
    .areas(area);
    let m = &mut b.model;
    let totals = m.totals();
    let count = super::rows::count(&totals);
    let order = match m.sort.key {
        Key::Size => "size",
        Key::Name => "name",
        Key::Count => "count",
        Key::Mtime => "mtime",
    };
    let head = format!(
        "{}  {} in {} entries  (sort: {order}{})",
        human_path(&m.path()),
        size3(m.shown(&totals)),
        count,
        if m.sort.reverse { ", reversed" } else { "" }
    );
    let bold = Style::new().add_modifier(Modifier::BOLD);
    frame.render_widget(Paragraph::new(head).style(bold), title);
    draw_rows(frame, m, body);
    let (shown, other) = if m.disk_usage {
        ("disk usage", "apparent size")
    } else {
        ("apparent size", "disk usage")
    };
    let (shown_size, other_size) = if m.disk_usage {
        (totals.disk_bytes, totals.bytes)
    } else {
        (totals.bytes, totals.disk_bytes)
    };
    let mut foot = format!(
        "{shown} {} (shown)  {other} {}",
        size3(shown_size),
        size3(other_size)
    );
    if let Some(f) = &m.filter {
        foot.push_str(&format!("  filter: {f}"));
    }
    if m.hide_hidden {
        foot.push_str("  hidden files left out");
    }
    if !m.marks.is_empty() {
        foot.push_str(&format!("  {} marked", m.marks.len()));
    }
    frame.render_widget(Paragraph::new(foot), footer);
    let reversed = Style::new().add_modifier(Modifier::REVERSED);
    let status_text = Paragraph::new(line).wrap(Wrap { trim: false });
    frame.render_widget(status_text.style(reversed), status);
    match &b.mode {
        Mode::Help => {
            let lines = KEYS.iter().map(|(k, what)| format!("{k:<26} {what}"));
            popup(frame, "keys (any key closes)", lines.collect());
        }
        Mode::Info(lines) => popup(frame, "details (any key closes)", lines.clone()),
        Mode::Confirm(rows) if rows.len() > 1 => {
            let lines = rows.iter().map(|r| {
                format!(
                    "{:>6}  {}",
                    size3(r.size(b.model.disk_usage)),
                    display_name(r)
                )
            });
            popup(frame, "delete these? (y/n)", lines.collect());
        }
        _ => {}
    }
}

/// The status line: a question, the filter being typed, or the scan's
/// state and the last message (or a reminder of the keys).
fn status_line(b: &Browser, progress: Option<&Progress>, width: usize) -> String {
    match &b.mode {
        Mode::Confirm(rows) => match rows.as_slice() {
            // The full path (escaped), size and entry count of what goes.
            [one] => {
                let path = b.model.path().join(OsStr::from_bytes(&one.name));
                let what = if one.dir.is_some() {
                    "/ and everything in it"
                } else {
                    ""
                };
                format!(
                    "Delete {}{what}: {} in {} entries? (y/n)",
                    human_path(&path),
                    size3(one.size(b.model.disk_usage)),
                    one.count
                )
            }
            all => {
                let size: u128 = all.iter().map(|r| r.size(b.model.disk_usage)).sum();
                format!("Delete these {} items ({})? (y/n)", all.len(), size3(size))
            }
        },
        Mode::Filter(text) => format!("filter: {text}_  (Enter keeps it, Esc clears it)"),
        Mode::Deleting => "deleting... (q quits)".to_owned(),
        _ => {
            let scan = b.scan.line(progress, width);
            let rest = match &b.model.message {
                Some(m) => m.as_str(),
                None => "? help, arrows move, Enter open, d delete, q quit",
            };
            if scan.is_empty() {
                rest.to_owned()
            } else {
                format!("{scan} | {rest}")
            }
        }
    }
}

/// A name as shown: escaped, `/` after a directory.
fn display_name(r: &Row) -> String {
    let mut name = info::name(&r.name);
    if r.dir.is_some() {
        name.push('/');
    }
    name
}

/// `name` cut to `room` columns with an ellipsis, keeping a directory's
/// trailing `/`.
pub fn fit_name(name: &str, room: usize) -> String {
    let width = |s: &str| Span::raw(s).width();
    if width(name) <= room {
        return name.to_owned();
    }
    let (stem, slash) = match name.strip_suffix('/') {
        Some(stem) => (stem, "/"),
        None => (name, ""),
    };
    let budget = room.saturating_sub(1 + slash.len());
    let mut out = String::new();
    let mut used = 0;
    for c in stem.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    format!("{out}…{slash}")
}

/// The rows on screen, the selection kept in sight.
fn draw_rows(frame: &mut Frame<'_>, m: &mut Model, area: Rect) {
    let height = usize::from(area.height);
    m.page = height;
    if m.selected < m.offset {
        m.offset = m.selected;
    } else if m.selected >= m.offset + height {
        m.offset = m.selected + 1 - height;
    }
    m.offset = m.offset.min(m.rows.len().saturating_sub(height));
    let width = usize::from(area.width);
    let bar = width >= 60;
    let show_count = m.show_count && width >= 50;
    let total = m.shown(&m.totals());
    let largest = m.largest();
    let color = colour();
    let mut lines = Vec::with_capacity(height);
    for (i, r) in m.rows.iter().enumerate().skip(m.offset).take(height) {
        let size = r.size(m.disk_usage);
        let mark = if m.marks.contains(&r.name) { '*' } else { ' ' };
        let flag = if r.read_error {
            '!'
        } else if r.other_fs {
            '>'
        } else if r.nlink.is_some() {
            'H'
        } else if r.not_regular {
            '@'
        } else {
            ' '
        };
        let mut spans = vec![Span::raw(format!("{mark}{flag}{:>6} ", size3(size)))];
        if bar {
            let filled = usize::try_from(
                (size.saturating_mul(BAR as u128) + largest / 2)
                    .checked_div(largest)
                    .unwrap_or(0),
            )
            .unwrap_or(BAR)
            .min(BAR);
            let style = if color {
                Style::new().fg(Color::Green)
            } else {
                Style::new()
            };
            spans.push(Span::raw("["));
            spans.push(Span::styled("#".repeat(filled), style));
            spans.push(Span::raw(format!("{}] ", " ".repeat(BAR - filled))));
        }
        #[allow(clippy::cast_precision_loss)]
        let share = if total == 0 {
            0.0
        } else {
            size as f64 * 100.0 / total as f64
        };
        spans.push(Span::raw(format!("{share:>5.1}% ")));
        if show_count {
            spans.push(Span::raw(format!("{:>8} ", r.count)));
        }
        if m.show_mtime {
            let t = r.mtime.map_or_else(|| "?".to_owned(), info::time);
            spans.push(Span::raw(format!("{t:>16} ")));
        }
        let used: usize = spans.iter().map(Span::width).sum();
        let name = fit_name(&display_name(r), width.saturating_sub(used));
        let style = match (color, r.dir.is_some()) {
            (true, true) => Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD),
            (false, true) => Style::new().add_modifier(Modifier::BOLD),
            _ => Style::new(),
        };
        spans.push(Span::styled(name, style));
        let mut line = Line::from(spans);
        if i == m.selected {
            line = line.style(Style::new().add_modifier(Modifier::REVERSED));
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// A box in the middle of the screen with `lines`.
fn popup(frame: &mut Frame<'_>, title: &str, lines: Vec<String>) {
    let area = frame.area();
    let width = lines
        .iter()
        .map(|l| Span::raw(l.as_str()).width())
        .max()
        .unwrap_or(0)
        .max(title.len())
        + 4;
    let w = u16::try_from(width).unwrap_or(u16::MAX).min(area.width);
    let h = u16::try_from(lines.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let at = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    frame.render_widget(Clear, at);
    let text: Vec<Line<'_>> = lines.into_iter().map(Line::from).collect();
    frame.render_widget(
        Paragraph::new(text).block(Block::bordered().title(title.to_owned())),
        at,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_keeping_the_slash() {
        assert_eq!(fit_name("short/", 10), "short/");
        assert_eq!(fit_name("a-long-directory/", 8), "a-long…/");
        assert_eq!(fit_name("a-long-file", 8), "a-long-…");
        assert_eq!(fit_name("日本語の名前", 7), "日本語…");
    }
}
