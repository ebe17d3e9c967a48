//! Drawing the browser with ratatui: a title line (the directory and its
//! totals), the rows (size, share of the directory as a bar, entries,
//! name), and a status line (the walk's progress, a message, a question).

use std::os::unix::ffi::OsStrExt;

use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;
use traverse::Progress;

use super::model::{Model, Sort};
use crate::output::{human_path, human_size};

/// The walk's state, for the status line.
pub enum Scan<'a> {
    Running(&'a Progress),
    /// Over: how long it took, and how many errors it met.
    Done {
        secs: f64,
        errors: u64,
    },
}

/// The width of the share bar.
const BAR: usize = 10;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, model: &Model, scan: &Scan<'_>) {
    let line = status_line(model, scan);
    // The status line wraps, so a question or an error shows in full
    // (up to half the screen).
    let area = frame.area();
    let width = usize::from(area.width.max(1));
    // Columns, not characters (wide ones take two); a line more when it
    // wraps, as words move whole to the next line.
    let lines = Line::from(line.as_str()).width().div_ceil(width).max(1);
    let lines = if lines > 1 { lines + 1 } else { lines };
    let lines = u16::try_from(lines)
        .unwrap_or(u16::MAX)
        .min(area.height / 2)
        .max(1);
    let [title, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(lines),
    ])
    .areas(area);
    let totals = model.totals();
    let total = model.shown(&totals);
    let count = totals.files + totals.dirs + totals.symlinks + totals.other;
    let head = format!(
        "{}  {} in {} entries  (sort: {})",
        human_path(&model.path()),
        human_size(total),
        count,
        match model.sort {
            Sort::Size => "size",
            Sort::Name => "name",
            Sort::Count => "count",
        }
    );
    frame.render_widget(
        Paragraph::new(head).style(Style::new().add_modifier(Modifier::BOLD)),
        title,
    );
    let items: Vec<ListItem<'_>> = model
        .rows
        .iter()
        .map(|r| {
            let filled = r
                .size
                .saturating_mul(BAR as u128)
                .checked_div(total)
                .map_or(0, |n| usize::try_from(n).unwrap_or(BAR).min(BAR));
            let name = human_path(std::path::Path::new(std::ffi::OsStr::from_bytes(&r.name)));
            let mark = match (r.dir.is_some(), r.not_regular) {
                (true, _) => "/",
                (false, true) => "@",
                (false, false) => "",
            };
            ListItem::new(Line::from(format!(
                "{:>7} [{}{}] {:>9}  {name}{mark}",
                human_size(r.size),
                "#".repeat(filled),
                " ".repeat(BAR - filled),
                r.count,
            )))
        })
        .collect();
    let empty = items.is_empty();
    let list = List::new(items).highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = ListState::default().with_selected((!empty).then_some(model.selected));
    frame.render_stateful_widget(list, body, &mut state);
    frame.render_widget(
        Paragraph::new(line)
            .wrap(Wrap { trim: false })
            .style(Style::new().add_modifier(Modifier::REVERSED)),
        status,
    );
}

/// The status line: the question of a deletion (its full path, size and
/// entry count), else the walk's state and a message or the keys.
fn status_line(model: &Model, scan: &Scan<'_>) -> String {
    if let Some(row) = &model.confirm {
        let path = model.path().join(std::ffi::OsStr::from_bytes(&row.name));
        let what = if row.dir.is_some() {
            "/ and everything in it"
        } else {
            ""
        };
        format!(
            "Delete {}{what}: {} in {} entries? (y/n)",
            human_path(&path),
            human_size(row.size),
            row.count
        )
    } else {
        let scan = match scan {
            Scan::Running(p) => format!(
                "scanning: {} entries, {} bytes...",
                p.entries(),
                human_size(u128::from(p.bytes()))
            ),
            Scan::Done { secs, errors: 0 } => format!("scanned in {secs:.2} s"),
            Scan::Done { secs, errors } => {
                format!("scanned in {secs:.2} s, {errors} errors")
            }
        };
        match &model.message {
            Some(m) => format!("{scan} | {m}"),
            None => format!(
                "{scan} | arrows/jk move, Enter open, Backspace up, s/n/c sort, d delete, q quit"
            ),
        }
    }
}
