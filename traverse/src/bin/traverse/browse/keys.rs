//! The browser's state besides the rows (what the screen asks of the
//! person, the scan's state) and what each key does: the keys of ncdu and
//! gdu, where the two agree.

use std::os::fd::OwnedFd;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::model::Model;
use super::rows::{Key, Row};
use super::status::Scan;
use super::{confirmed, info, Msg};
use crate::output::human_path;

/// What the screen shows over the rows, and what keys mean meanwhile.
pub enum Mode {
    Browse,
    /// Rows waiting for `y`.
    Confirm(Vec<Row>),
    /// The key table (`?`).
    Help,
    /// What is known of one row (`i`).
    Info(Vec<String>),
    /// A name filter being typed (`/`).
    Filter(String),
    /// A deletion running: only quitting acts.
    Deleting,
}

/// What the loop does after a key, besides changing the state.
pub enum Action {
    None,
    Quit,
    /// `Q`: quit and print the directory shown.
    QuitPrint,
    Shell,
    Rescan,
    Delete(Vec<Row>),
}

/// The browser's state.
pub struct Browser {
    pub model: Model,
    pub mode: Mode,
    pub scan: Scan,
    /// The root's descriptor, which deletions start from (`None` for a
    /// saved scan: nothing is deleted there).
    pub root_fd: Option<OwnedFd>,
    /// Browsing a saved scan.
    pub imported: bool,
}

impl Browser {
    pub fn new(model: Model, root_fd: Option<OwnedFd>, imported: bool) -> Browser {
        let mut scan = Scan::new();
        if imported {
            scan.done = Some(0.0);
        }
        Browser {
            model,
            mode: Mode::Browse,
            scan,
            root_fd,
            imported,
        }
    }

    /// A message of the walk or of a deletion (directories are taken by
    /// the loop: see `Model::early_dirs`); `true` when the directory shown
    /// needs a rescan (a deletion left something).
    pub fn on_msg(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Wake | Msg::Dir(_) => {}
            Msg::Root(tree) => self.model.root_done(tree),
            Msg::Error(text) => {
                self.scan.errors += 1;
                self.model.message = Some(text);
            }
            Msg::Done(summary) => {
                if !self.model.scanned {
                    self.model.root_missing();
                }
                self.scan.finish(summary.totals.errors);
                if self.model.message.as_deref() == Some(WAITS) {
                    self.model.message = None;
                }
            }
            Msg::Rescanned(cwd, tree) => {
                self.scan.rescanning = false;
                match tree {
                    Ok(tree) if cwd == self.model.cwd() => {
                        self.model.rescanned(&cwd, tree);
                        let path = human_path(&self.model.path());
                        let text = format!("rescanned {path}");
                        self.model.message = Some(match self.model.message.take() {
                            // What a deletion left stays in view.
                            Some(m) if m.contains("left") => format!("{m} | {text}"),
                            _ => text,
                        });
                    }
                    Ok(_) => self.model.message = Some("moved away: not rescanned".to_owned()),
                    Err(why) => self.model.message = Some(format!("not rescanned: {why}")),
                }
            }
            Msg::Deleted(done) => {
                if matches!(self.mode, Mode::Deleting) {
                    self.mode = Mode::Browse;
                }
                self.model.message = Some(confirmed::message(self.model.disk_usage, &done));
                let gone: Vec<Row> = (done.iter())
                    .filter(|(_, r)| r.as_ref().is_ok_and(|o| o.left == 0))
                    .map(|(row, _)| row.clone())
                    .collect();
                self.model.remove(&gone);
                return done
                    .iter()
                    .any(|(_, r)| r.as_ref().is_ok_and(|o| o.left > 0));
            }
        }
        false
    }

    /// Applies a key.
    pub fn key(&mut self, key: KeyEvent) -> Action {
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl_c {
            return Action::Quit;
        }
        match std::mem::replace(&mut self.mode, Mode::Browse) {
            Mode::Browse => self.browse_key(key),
            Mode::Confirm(rows) => {
                if key.code == KeyCode::Char('y') {
                    return Action::Delete(rows);
                }
                self.model.message = Some("not deleted".to_owned());
                Action::None
            }
            // Any key closes them.
            Mode::Help | Mode::Info(_) => Action::None,
            Mode::Filter(mut text) => {
                match key.code {
                    KeyCode::Enter => {}
                    KeyCode::Esc => self.model.set_filter(None),
                    KeyCode::Backspace => {
                        text.pop();
                        self.model.set_filter(Some(text.clone()));
                        self.mode = Mode::Filter(text);
                    }
                    KeyCode::Char(c) => {
                        text.push(c);
                        self.model.set_filter(Some(text.clone()));
                        self.mode = Mode::Filter(text);
                    }
                    _ => self.mode = Mode::Filter(text),
                }
                Action::None
            }
            Mode::Deleting => {
                self.mode = Mode::Deleting;
                match key.code {
                    KeyCode::Char('q') => Action::Quit,
                    KeyCode::Char('Q') => Action::QuitPrint,
                    _ => Action::None,
                }
            }
        }
    }

    fn browse_key(&mut self, key: KeyEvent) -> Action {
        let m = &mut self.model;
        let page = m.page.max(1);
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('Q') => return Action::QuitPrint,
            KeyCode::Up | KeyCode::Char('k') => m.up(1),
            KeyCode::Down | KeyCode::Char('j') => m.down(1),
            KeyCode::PageDown => m.down(page),
            KeyCode::PageUp => m.up(page),
            KeyCode::Home | KeyCode::Char('g') => m.top(),
            KeyCode::End | KeyCode::Char('G') => m.down(usize::MAX),
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => m.enter(),
            KeyCode::Backspace | KeyCode::Left | KeyCode::Char('h') | KeyCode::Char('<') => {
                m.leave()
            }
            KeyCode::Char('s') => m.set_sort(Key::Size),
            KeyCode::Char('n') => m.set_sort(Key::Name),
            KeyCode::Char('C') => m.set_sort(Key::Count),
            KeyCode::Char('M') => m.set_sort(Key::Mtime),
            KeyCode::Char('c') => m.show_count = !m.show_count,
            KeyCode::Char('m') => m.show_mtime = !m.show_mtime,
            KeyCode::Char('a') => m.toggle_disk(),
            KeyCode::Char('e') | KeyCode::Char('.') => m.toggle_hidden(),
            KeyCode::Char('/') => {
                let text = m.filter.clone().unwrap_or_default();
                self.mode = Mode::Filter(text);
            }
            KeyCode::Char(' ') => m.toggle_mark(),
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('i') => {
                if let Some(row) = m.selected_row() {
                    self.mode = Mode::Info(info::lines(m, row));
                }
            }
            KeyCode::Char('b') => return Action::Shell,
            KeyCode::Char('r') => return self.rescan(),
            KeyCode::Char('d') => self.ask_delete(),
            _ => {}
        }
        Action::None
    }

    fn rescan(&mut self) -> Action {
        let why = if self.imported {
            "a saved scan: nothing to rescan"
        } else if !self.model.scanned {
            "the scan is still running"
        } else if self.scan.rescanning {
            "a rescan is running already"
        } else {
            self.scan.rescanning = true;
            self.model.message = Some(format!("rescanning {}", human_path(&self.model.path())));
            return Action::Rescan;
        };
        self.model.message = Some(why.to_owned());
        Action::None
    }

    fn ask_delete(&mut self) {
        let refusal = if self.imported {
            Some("a saved scan: deleting is disabled (as in ncdu)")
        } else if !self.model.scanned {
            Some(WAITS)
        } else if self.scan.rescanning {
            Some("a rescan is running: deleting waits for its end")
        } else {
            None
        };
        if let Some(why) = refusal {
            self.model.message = Some(why.to_owned());
            return;
        }
        let rows = self.model.chosen_rows();
        if !rows.is_empty() {
            self.mode = Mode::Confirm(rows);
        }
    }
}

/// The refusal of a deletion during the scan (cleared when it ends).
const WAITS: &str = "the scan is still running: deleting waits for its end";
