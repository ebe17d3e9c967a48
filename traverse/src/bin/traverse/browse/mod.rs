//! `--interactive`: a browser in the terminal (ratatui on crossterm).
//!
//! The walk runs on a thread of its own with a breakdown that builds the
//! ncdu export's tree; each subdirectory of the root is taken from it as
//! soon as its totals are final and shown at once, so the first answers
//! come before the scan ends. At the end the root's tree (its files, and
//! the subdirectories taken go back into it) is browsed: the same memory
//! as `--export`. Keys come on a channel of their own and are handled
//! before any walk message; walk messages are taken for a bounded time
//! between two looks at the keys, and the directories among them go into
//! the rows at most once a frame, so a key acts within a frame whatever
//! the walk sends. Deletions run on a thread of their own, so quitting
//! never waits for one.

mod confirmed;
mod delete;
mod info;
mod input;
mod keys;
mod model;
mod rows;
mod status;
mod view;

use std::ffi::CString;
use std::io::{self, IsTerminal, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::Scope;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{Event, KeyEventKind};
use traverse::{
    DirTotals, DirVisitor, Entry, Error, NcduDir, Summary, Visitor, VisitorBuilder, Walk,
};

use crate::output::human_path;
use input::Input;
use keys::{Action, Mode};
use model::Model;
use rows::Row;

pub use info::KEYS;

/// What the browser is asked for besides the walk's settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Sizes are disk usage rather than apparent sizes.
    pub disk_usage: bool,
    /// Quit once the screen after the scan is drawn (for measurements).
    pub exit_when_scanned: bool,
    /// PATH is a saved scan in ncdu's export format, not a directory.
    pub import: bool,
}

/// The shortest time between two screens during the scan.
const FRAME: Duration = Duration::from_millis(50);
/// How often the scan's progress is redrawn.
const PROGRESS: Duration = Duration::from_millis(200);
/// The longest time walk messages are taken without a look at the keys.
const BUDGET: Duration = Duration::from_millis(10);

/// What reaches the loop besides keys.
pub enum Msg {
    /// A key is waiting on the keys' channel.
    Wake,
    /// A subdirectory of the root, its tree final.
    Dir(NcduDir),
    /// The root's tree.
    Root(NcduDir),
    Error(String),
    Done(Summary),
    /// The directory at these indices, scanned again.
    Rescanned(Vec<usize>, Result<NcduDir, String>),
    /// What a deletion did to each row.
    Deleted(Vec<(Row, Result<delete::Outcome, String>)>),
}

/// The breakdown's side: finished directories of the first level, then
/// the root. A `Sender` is shared without a lock, so workers never wait
/// for each other here (a wait would look like one for the disk).
struct Trees(Sender<Msg>);

impl DirVisitor for Trees {
    fn dir(&self, dir: &DirTotals<'_>) {
        let msg = match dir.depth() {
            0 => dir.take_tree().map(Msg::Root),
            1 => dir.take_tree().map(Msg::Dir),
            _ => None,
        };
        if let Some(msg) = msg {
            // The loop is gone only when the person quit.
            let _ = self.0.send(msg);
        }
    }

    fn ncdu(&self) -> bool {
        true
    }
}

/// Errors of the walk go to the status line rather than to stderr, which
/// the screen covers.
struct Errors(Sender<Msg>);

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
        Box::new(ErrorSender(self.0.clone()))
    }
}

/// How the person left.
enum Quit {
    Plain,
    /// `Q`: print the directory shown.
    PrintPath(PathBuf),
}

/// Browses `root`, walked by `walk` (which stops when `interrupt` is
/// set), or the saved scan in the file `root` with `opts.import`. Exit
/// status 0 when the person quits; 1 when PATH cannot be browsed; 2
/// without a terminal.
pub fn run(root: &Path, walk: &Walk, interrupt: &AtomicBool, opts: Options) -> ExitCode {
    let mut model = Model::new(root, opts.disk_usage);
    let root_fd = if opts.import {
        match info::import(root) {
            Ok(tree) => model.imported(tree),
            Err(why) => {
                eprintln!("traverse: {}: {why}", human_path(root));
                return ExitCode::from(1);
            }
        }
        None
    } else {
        // Kept from the start: deletions start from it, so a rename of
        // the root's ancestors cannot lead them elsewhere. A PATH that is
        // not a directory is refused before the screen is set up.
        match open_root(root) {
            Ok(fd) => Some(fd),
            Err(why) => {
                eprintln!(
                    "traverse: {}: cannot open directory: {why}",
                    human_path(root)
                );
                return ExitCode::from(1);
            }
        }
    };
    // The screen goes to stdout; keys come from the terminal (crossterm
    // opens /dev/tty when stdin is not one).
    if !io::stdout().is_terminal() {
        eprintln!("traverse: --interactive needs a terminal");
        return ExitCode::from(2);
    }
    let (tx, rx) = mpsc::channel();
    let input = Input::start(tx.clone(), || Msg::Wake);
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("traverse: cannot set up the terminal: {e}");
            return ExitCode::from(1);
        }
    };
    let mut browser = keys::Browser::new(model, root_fd, opts.import);
    let result = std::thread::scope(|scope| {
        // The walk runs from the root's descriptor (a duplicate: the same
        // open), so what is deleted is what is shown, whatever happens to
        // PATH meanwhile.
        if let Some(fd) = browser.root_fd.as_ref().and_then(|fd| fd.try_clone().ok()) {
            let tx = tx.clone();
            scope.spawn(move || {
                let trees = Arc::new(Trees(tx.clone()));
                let errors = Errors(tx.clone());
                let dirs = trees as Arc<dyn DirVisitor>;
                let summary = walk.run_dirs_at(fd.as_fd(), root, &errors, dirs);
                let _ = tx.send(Msg::Done(summary));
            });
        }
        let mut looping = Loop {
            terminal: &mut terminal,
            input: &input,
            rx: &rx,
            tx: &tx,
            walk,
            opts,
        };
        let result = looping.run(scope, &mut browser);
        ratatui::restore();
        // Quitting during the scan stops the walk, which the scope waits
        // for.
        interrupt.store(true, Ordering::Relaxed);
        result
    });
    match result {
        Ok(Quit::Plain) => ExitCode::SUCCESS,
        Ok(Quit::PrintPath(path)) => {
            let mut out = io::stdout().lock();
            let _ = out
                .write_all(path.as_os_str().as_bytes())
                .and_then(|()| out.write_all(b"\n"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("traverse: the terminal failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// Opens `root` as the walk opens it: a directory, never through a final
/// symlink.
fn open_root(root: &Path) -> Result<OwnedFd, String> {
    let c = CString::new(root.as_os_str().as_bytes()).map_err(|_| "a path with a NUL byte")?;
    io_uring_getdents::syscall::open_dir_at(None, &c).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => "a symbolic link, not followed (add a trailing / to follow it)".into(),
        _ => e.to_string(),
    })
}

/// What the loop works with.
struct Loop<'a, 'env> {
    terminal: &'a mut ratatui::DefaultTerminal,
    input: &'a Input,
    rx: &'a Receiver<Msg>,
    tx: &'a Sender<Msg>,
    walk: &'env Walk,
    opts: Options,
}

impl<'env> Loop<'_, 'env> {
    /// Draw, take keys, take walk messages for a bounded time, wait.
    fn run<'scope>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        b: &mut keys::Browser,
    ) -> io::Result<Quit> {
        // Directories finished but not yet in the rows.
        let mut early: Vec<NcduDir> = Vec::new();
        let mut last_draw: Option<Instant> = None;
        let (mut pending, mut now_please) = (true, false);
        loop {
            let due = last_draw.is_none_or(|t| t.elapsed() >= FRAME);
            if pending && (now_please || b.scan.done.is_some() || due) {
                b.model.early_dirs(std::mem::take(&mut early));
                let progress = b.scan.running().then(|| self.walk.progress());
                self.terminal.draw(|frame| view::draw(frame, b, progress))?;
                if self.opts.exit_when_scanned && b.scan.done.is_some() {
                    return Ok(Quit::Plain);
                }
                last_draw = Some(Instant::now());
                (pending, now_please) = (false, false);
            }
            let wait = match last_draw {
                Some(t) if pending => FRAME.saturating_sub(t.elapsed()),
                _ if b.scan.running() => PROGRESS,
                _ => Duration::from_secs(3600),
            };
            let mut next = match self.rx.recv_timeout(wait) {
                Ok(msg) => Some(msg),
                Err(RecvTimeoutError::Timeout) => {
                    // The progress line moves on during the scan.
                    pending |= b.scan.running();
                    None
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(Quit::Plain),
            };
            let until = Instant::now() + BUDGET;
            loop {
                // Every key waiting, before the next walk message.
                while let Ok(ev) = self.input.keys.try_recv() {
                    b.model.early_dirs(std::mem::take(&mut early));
                    (pending, now_please) = (true, true);
                    if let Some(quit) = self.on_event(scope, b, ev)? {
                        return Ok(quit);
                    }
                }
                let Some(msg) = next.take() else { break };
                pending = true;
                match msg {
                    Msg::Wake => {}
                    Msg::Dir(dir) => early.push(dir),
                    other => {
                        b.model.early_dirs(std::mem::take(&mut early));
                        if b.on_msg(other) {
                            self.rescan(scope, b);
                        }
                    }
                }
                if Instant::now() < until {
                    next = self.rx.try_recv().ok();
                }
            }
        }
    }

    /// A terminal event: a key acted on (a shell, a rescan, a deletion
    /// started), or the screen redrawn; `Some` to quit.
    fn on_event<'scope>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        b: &mut keys::Browser,
        ev: Event,
    ) -> io::Result<Option<Quit>> {
        let Event::Key(key) = ev else {
            return Ok(None);
        };
        if key.kind == KeyEventKind::Release {
            return Ok(None);
        }
        match b.key(key) {
            Action::None => {}
            Action::Quit => return Ok(Some(Quit::Plain)),
            Action::QuitPrint => return Ok(Some(Quit::PrintPath(b.model.path()))),
            Action::Shell => self.shell(&b.model.path(), b)?,
            Action::Rescan => self.rescan(scope, b),
            Action::Delete(chosen) => self.delete(b, chosen),
        }
        Ok(None)
    }

    /// Scans the directory shown again on a thread of the scope, from
    /// the root's descriptor; its end comes back as [`Msg::Rescanned`].
    fn rescan<'scope>(&mut self, scope: &'scope Scope<'scope, 'env>, b: &mut keys::Browser) {
        let Some(fd) = b.root_fd.as_ref().and_then(|fd| fd.try_clone().ok()) else {
            return;
        };
        b.scan.rescanning = true;
        let (levels, cwd) = (b.model.levels(), b.model.cwd().to_vec());
        let (root, tx, walk) = (b.model.root_path.clone(), self.tx.clone(), self.walk);
        scope.spawn(move || {
            let errors = Errors(tx.clone());
            let tree = confirmed::rescan(walk, fd.as_fd(), &root, &levels, &errors);
            let _ = tx.send(Msg::Rescanned(cwd, tree));
        });
    }

    /// `b`: the person's shell in the directory shown, on the terminal as
    /// it was before the browser; the browser again when it exits.
    fn shell(&mut self, dir: &Path, b: &mut keys::Browser) -> io::Result<()> {
        self.input.pause();
        ratatui::restore();
        let shell = std::env::var_os("SHELL").unwrap_or_else(|| "/bin/sh".into());
        println!(
            "traverse: a shell in {}; exit it to go back to the browser",
            human_path(dir)
        );
        let ran = std::process::Command::new(&shell).current_dir(dir).status();
        *self.terminal = ratatui::try_init()?;
        self.terminal.clear()?;
        self.input.resume();
        if let Err(e) = ran {
            b.model.message = Some(format!("{}: {e}", human_path(Path::new(&shell))));
        }
        Ok(())
    }

    /// Deletes `chosen` (rows of the directory shown) on a thread of its
    /// own, not joined: quitting does not wait for it. Its end comes back
    /// as [`Msg::Deleted`].
    fn delete(&mut self, b: &mut keys::Browser, chosen: Vec<Row>) {
        let fd = match b.root_fd.as_ref().map(OwnedFd::try_clone) {
            Some(Ok(fd)) => fd,
            Some(Err(e)) => {
                b.model.message = Some(format!("cannot delete: {e}"));
                return;
            }
            None => return,
        };
        let rows = chosen
            .into_iter()
            .map(|r| {
                let id = b.model.id_of(&r);
                (r, id)
            })
            .collect();
        let job = confirmed::Job {
            fd,
            root: b.model.root_path.clone(),
            levels: b.model.levels(),
            rows,
        };
        b.mode = Mode::Deleting;
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Msg::Deleted(confirmed::run(job)));
        });
    }
}
