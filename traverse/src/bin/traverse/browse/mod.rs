//! `--interactive`: a browser in the terminal (ratatui on crossterm).
//!
//! The walk runs on a thread of its own with a breakdown that builds the
//! ncdu export's tree; each subdirectory of the root is taken from it as
//! soon as its totals are final and shown at once, so the first answers
//! come before the scan ends. At the end the root's tree (its files, and
//! the subdirectories taken go back into it) is browsed: the same memory
//! as `--export`. Keys and walk events come to one loop over a channel.

mod confirmed;
mod delete;
mod model;
mod view;

use std::ffi::CString;
use std::io::{self, IsTerminal};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use traverse::{
    DirTotals, DirVisitor, Entry, Error, NcduDir, Summary, Visitor, VisitorBuilder, Walk,
};

use crate::output::human_path;
use model::{Model, Sort};
use view::Scan;

/// What the browser is asked for besides the walk's settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Sizes are disk usage rather than apparent sizes.
    pub disk_usage: bool,
    /// Quit once the screen after the scan is drawn (for measurements).
    pub exit_when_scanned: bool,
}

/// The shortest time between two screens during the scan.
const FRAME: Duration = Duration::from_millis(50);
/// How often the scan's progress is redrawn.
const PROGRESS: Duration = Duration::from_millis(200);

/// What reaches the loop.
enum Msg {
    Input(Event),
    /// A subdirectory of the root, its tree final.
    Dir(NcduDir),
    /// The root's tree.
    Root(NcduDir),
    Error(String),
    Done(Summary),
}

/// The breakdown's side: finished directories of the first level, then
/// the root.
struct Trees(Mutex<Sender<Msg>>);

impl DirVisitor for Trees {
    fn dir(&self, dir: &DirTotals<'_>) {
        let msg = match dir.depth() {
            0 => dir.take_tree().map(Msg::Root),
            1 => dir.take_tree().map(Msg::Dir),
            _ => None,
        };
        if let Some(msg) = msg {
            // The loop is gone only when the person quit.
            let _ = lock(&self.0).send(msg);
        }
    }

    fn ncdu(&self) -> bool {
        true
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Errors of the walk go to the status line rather than to stderr, which
/// the screen covers.
struct Errors(Mutex<Sender<Msg>>);

struct ErrorSender(Sender<Msg>);

impl Visitor for ErrorSender {
    fn visit_entry(&mut self, _: &Entry<'_>) {}

    fn error(&mut self, err: Error) {
        let text = format!("{}: {}: {}", human_path(err.path()), err.op(), err.cause());
        let _ = self.0.send(Msg::Error(text));
    }
}

impl VisitorBuilder for Errors {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(ErrorSender(lock(&self.0).clone()))
    }
}

/// Browses `root`, walked by `walk` (which stops when `interrupt` is
/// set). Exit status 0 when the person quits; 2 without a terminal.
pub fn run(root: &Path, walk: &Walk, interrupt: &AtomicBool, opts: Options) -> ExitCode {
    // The screen goes to stdout; keys come from the terminal (crossterm
    // opens /dev/tty when stdin is not one).
    if !io::stdout().is_terminal() {
        eprintln!("traverse: --interactive needs a terminal");
        return ExitCode::from(2);
    }
    // The one open of PATH: the walk runs from it and deletions start
    // from it, so what is deleted is what is shown, whatever happens to
    // PATH (a symlink in it swapped, an ancestor renamed) meanwhile.
    let root_fd = CString::new(root.as_os_str().as_bytes())
        .map_err(|_| "a path with a NUL byte".to_owned())
        .and_then(|c| io_uring_getdents::syscall::open_dir_at(None, &c).map_err(|e| e.to_string()))
        .map_err(|why| format!("{}: {why}", human_path(root)));
    let (tx, rx) = mpsc::channel();
    let input = tx.clone();
    // Not joined: it waits for the next key when the loop ends, and the
    // process ends with it.
    std::thread::spawn(move || {
        while let Ok(ev) = event::read() {
            if input.send(Msg::Input(ev)).is_err() {
                break;
            }
        }
    });
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("traverse: cannot set up the terminal: {e}");
            return ExitCode::from(1);
        }
    };
    let trees = Arc::new(Trees(Mutex::new(tx.clone())));
    let errors = Errors(Mutex::new(tx.clone()));
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            let trees = trees as Arc<dyn DirVisitor>;
            let summary = match &root_fd {
                Ok(fd) => walk.run_dirs_at(fd.as_fd(), root, &errors, trees),
                // The walk says why PATH cannot be read; nothing can be
                // deleted.
                Err(_) => walk.run_dirs(root, &errors, trees),
            };
            let _ = tx.send(Msg::Done(summary));
        });
        let result = browse(&mut terminal, root, &root_fd, walk, &rx, opts);
        ratatui::restore();
        // Quitting during the scan stops the walk, which the scope waits
        // for.
        interrupt.store(true, Ordering::Relaxed);
        result
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("traverse: the terminal failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// The loop: draw, wait for a key or an event of the walk, apply it.
fn browse(
    terminal: &mut ratatui::DefaultTerminal,
    root: &Path,
    root_fd: &Result<OwnedFd, String>,
    walk: &Walk,
    rx: &mpsc::Receiver<Msg>,
    opts: Options,
) -> io::Result<()> {
    let start = Instant::now();
    let mut model = Model::new(root, opts.disk_usage);
    let mut done: Option<(f64, u64)> = None;
    let mut errors = 0;
    // During the scan, directories may finish faster than a terminal
    // shows them: a new screen at most every FRAME, except after a key
    // or at the end.
    let mut last_draw: Option<Instant> = None;
    let (mut pending, mut now_please) = (true, false);
    loop {
        let due = last_draw.is_none_or(|t| t.elapsed() >= FRAME);
        if pending && (now_please || done.is_some() || due) {
            let scan = match done {
                Some((secs, errors)) => Scan::Done { secs, errors },
                None => Scan::Running(walk.progress()),
            };
            terminal.draw(|frame| view::draw(frame, &model, &scan))?;
            if opts.exit_when_scanned && done.is_some() {
                return Ok(());
            }
            last_draw = Some(Instant::now());
            (pending, now_please) = (false, false);
        }
        let wait = match (done, last_draw) {
            (Some(_), _) => Duration::from_secs(3600),
            (None, Some(t)) if pending => FRAME.saturating_sub(t.elapsed()),
            (None, _) => PROGRESS,
        };
        let mut msg = match rx.recv_timeout(wait) {
            Ok(msg) => msg,
            Err(RecvTimeoutError::Timeout) => {
                // The progress line moves on during the scan.
                pending |= done.is_none();
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        };
        pending = true;
        // Everything already waiting, before the next drawing.
        loop {
            match msg {
                Msg::Input(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                    now_please = true;
                    if !on_key(&mut model, key, root, root_fd, walk) {
                        return Ok(());
                    }
                }
                Msg::Input(_) => now_please = true,
                Msg::Dir(dir) => model.early_dir(dir),
                Msg::Root(tree) => model.root_done(tree),
                Msg::Error(text) => {
                    errors += 1;
                    model.message = Some(text);
                }
                Msg::Done(summary) => {
                    if !model.scanned {
                        model.root_missing();
                    }
                    errors = errors.max(summary.totals.errors);
                    done = Some((start.elapsed().as_secs_f64(), errors));
                }
            }
            match rx.try_recv() {
                Ok(next) => msg = next,
                Err(_) => break,
            }
        }
    }
}

/// Applies a key; `false` to quit.
fn on_key(
    model: &mut Model,
    key: KeyEvent,
    root: &Path,
    root_fd: &Result<OwnedFd, String>,
    walk: &Walk,
) -> bool {
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        return false;
    }
    if let Some(row) = model.confirm.take() {
        model.message = Some(if key.code == KeyCode::Char('y') {
            confirmed::delete(model, &row, root, root_fd, walk)
        } else {
            "not deleted".to_owned()
        });
        return true;
    }
    match key.code {
        KeyCode::Char('q') => return false,
        KeyCode::Up | KeyCode::Char('k') => model.up(),
        KeyCode::Down | KeyCode::Char('j') => model.down(1),
        KeyCode::PageDown => model.down(20),
        KeyCode::PageUp => (0..20).for_each(|_| model.up()),
        KeyCode::Home => model.top(),
        KeyCode::End => model.down(usize::MAX),
        KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => model.enter(),
        KeyCode::Backspace | KeyCode::Left | KeyCode::Char('h') => model.leave(),
        KeyCode::Char('s') => model.set_sort(Sort::Size),
        KeyCode::Char('n') => model.set_sort(Sort::Name),
        KeyCode::Char('c') => model.set_sort(Sort::Count),
        KeyCode::Char('d') => {
            if !model.scanned {
                model.message =
                    Some("the scan is still running: deleting waits for its end".into());
            } else if let Some(row) = model.rows.get(model.selected) {
                model.confirm = Some(row.clone());
            }
        }
        _ => {}
    }
    true
}
