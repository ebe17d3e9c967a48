//! `traverse [OPTIONS] PATH...`: a thin client of the `traverse` library.

mod browse;
mod cli;
mod dirs;
mod du;
mod export;
mod line;
mod manual;
mod output;
mod tree;

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};
use traverse::{DirVisitor, Entry, Error, Totals, Visitor, VisitorBuilder, Walk};

use cli::{Config, Opts, Output};
use dirs::Dirs;
use export::Export;

/// Exit status when some entry could not be read.
const EXIT_ERRORS: u8 = 1;
/// Exit status after SIGINT, as shells report it (128 + 2).
const EXIT_INTERRUPTED: u8 = 130;

/// Exit status for bad options, as clap gives.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let (args, as_du) = du::argv();
    let matches = match Opts::command().try_get_matches_from(&args) {
        Ok(matches) => matches,
        Err(e) => return du::usage_error(e, as_du, &args),
    };
    let opts = match Opts::from_arg_matches(&matches) {
        Ok(opts) => opts,
        Err(e) => e.exit(),
    };
    match opts.into_config(&matches, as_du) {
        Ok(config) => run(config),
        Err(usage) if usage.as_du => {
            let name = if as_du { "du" } else { "traverse" };
            if !usage.message.is_empty() {
                eprintln!("{name}: {}", usage.message);
            }
            eprintln!("Try '{name} --help' for more information.");
            ExitCode::from(EXIT_ERRORS)
        }
        Err(usage) => {
            eprintln!("traverse: {}", usage.message);
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Does what `config` asks: prints the manual, runs the browser, or walks
/// every PATH and prints its output; returns the exit status.
fn run(config: Config) -> ExitCode {
    if let Some(what) = config.generate {
        return manual::print(what);
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    if let Err(e) = on_sigint(Arc::clone(&interrupt)) {
        eprintln!("traverse: cannot handle SIGINT: {e}");
    }
    let walk = config.walk.interrupt(Arc::clone(&interrupt)).build();
    if let Some(why) = walk.fallback() {
        eprintln!("traverse: io_uring engine unavailable ({why}); using the threads engine");
    }
    if let Some(opts) = config.interactive {
        return browse::run(&config.paths[0], &walk, &interrupt, opts);
    }
    if let Some(du) = &config.du {
        if let Err(e) = check_stdout_open() {
            eprintln!("{}: write error: {}", du.name, du::text::strerror(&e));
            return ExitCode::from(EXIT_ERRORS);
        }
        return du::run(du, &walk, &interrupt);
    }
    let sink = Sink {
        output: config.output,
        stdout_failed: AtomicBool::new(false),
        stdout_error: Mutex::new(None),
        interrupt: Arc::clone(&interrupt),
        stderr_tty: io::stderr().is_terminal(),
    };
    if let Err(e) = check_stdout_open() {
        // Nothing could be printed: say so (as du and find do) without
        // walking.
        sink.fail(e);
    }
    let mut export = match config.breakdown.as_ref().map(Export::open) {
        Some(Err(e)) => {
            eprintln!("traverse: {e}");
            return ExitCode::from(EXIT_ERRORS);
        }
        Some(Ok(export)) => export,
        None => None,
    };
    let export_stdout = matches!(&config.breakdown, Some(b) if matches!(b.export, Some(None)));
    // Never over a listing: both would share the terminal.
    let progress = io::stderr().is_terminal() && !matches!(config.output, Output::List(_));
    let mut all = Totals::default();
    // `-c` with lines: the sum of the roots' sizes as the lines show them.
    let mut total_size = 0u128;
    let mut total_line = None;
    let mut partial = false;
    for path in &config.paths {
        // The one check of a failed stdout: nobody reads the output any
        // more, so no further PATH is walked (and `write_out` drops
        // whatever is still written).
        if sink.failed() {
            break;
        }
        let dirs = config
            .breakdown
            .as_ref()
            .map(|b| Arc::new(Dirs::new(b, export.take())));
        let walk_path = || match &dirs {
            Some(dirs) => walk.run_dirs(path, &sink, Arc::clone(dirs) as Arc<dyn DirVisitor>),
            None => walk.run_next(path, &sink),
        };
        let summary = if progress {
            with_progress(&walk, walk_path)
        } else {
            walk_path()
        };
        if summary.repeated {
            // Counted under an earlier PATH: du prints nothing for it.
            continue;
        }
        all += summary.totals;
        partial |= summary.partial;
        let text = match (&dirs, config.output) {
            (Some(dirs), output) => {
                if let Err(e) = dirs.finish_export(path, &summary) {
                    eprintln!("traverse: {e}");
                    all.errors += 1;
                }
                total_size += dirs.root_size(path, &summary);
                total_line = Some(Arc::clone(dirs));
                if export_stdout {
                    String::new()
                } else {
                    dirs.lines(path, &summary, output == Output::Json)
                }
            }
            (None, Output::Human) => output::human(Some(path), &summary.totals, summary.partial),
            (None, Output::Json) => output::json(Some(path), &summary.totals),
            (None, Output::List(_)) => String::new(),
        };
        sink.write_out(text.as_bytes());
        if partial {
            break;
        }
    }
    // A breakdown has a total line with -c only, as du.
    let total = config.total || (config.paths.len() > 1 && config.breakdown.is_none());
    if total && !partial && !export_stdout {
        match (config.output, total_line) {
            (Output::Human, Some(dirs)) => sink.write_out(dirs.total_line(total_size).as_bytes()),
            (Output::Human, None) => sink.write_out(output::human(None, &all, false).as_bytes()),
            (Output::Json, _) => sink.write_out(output::json(None, &all).as_bytes()),
            (Output::List(_), _) => {}
        }
    }
    if let Err(e) = io::stdout().lock().flush() {
        sink.fail(e);
    }
    if let Some(e) = sink
        .stdout_error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        // A closed pipe (`traverse --list | head`) ends the walk quietly;
        // any other failure is reported in du's and find's words.
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("traverse: write error: {e}");
        }
        return ExitCode::from(EXIT_ERRORS);
    }
    if partial {
        eprintln!("traverse: interrupted; the totals are partial");
        return ExitCode::from(EXIT_INTERRUPTED);
    }
    if all.errors > 0 {
        return ExitCode::from(EXIT_ERRORS);
    }
    ExitCode::SUCCESS
}

/// Where workers' findings go: listed paths to stdout (each worker
/// buffers its own), errors to stderr at once.
struct Sink {
    output: Output,
    stdout_failed: AtomicBool,
    stdout_error: Mutex<Option<io::Error>>,
    interrupt: Arc<AtomicBool>,
    stderr_tty: bool,
}

impl Sink {
    /// Whether stdout failed (see [`Sink::fail`]).
    fn failed(&self) -> bool {
        self.stdout_failed.load(Ordering::Relaxed)
    }

    /// Writes `bytes` to stdout, or nothing once stdout failed.
    fn write_out(&self, bytes: &[u8]) {
        if bytes.is_empty() || self.failed() {
            return;
        }
        if let Err(e) = io::stdout().lock().write_all(bytes) {
            self.fail(e);
        }
    }

    /// Records that stdout failed: nobody reads the output any more, so
    /// the walk stops. The first error is the one reported.
    fn fail(&self, e: io::Error) {
        self.stdout_failed.store(true, Ordering::Relaxed);
        self.interrupt.store(true, Ordering::Relaxed);
        self.stdout_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    }
}

/// Fails with `EBADF` when descriptor 1 was closed at start
/// (`traverse DIR >&-`), as du and find report it.
fn check_stdout_open() -> io::Result<()> {
    if STDOUT_CLOSED_AT_START.load(Ordering::Relaxed) {
        Err(io::Error::from_raw_os_error(libc::EBADF))
    } else {
        Ok(())
    }
}

/// Whether descriptor 1 was closed when the process started. Rust's
/// runtime opens `/dev/null` on a closed descriptor 0, 1 or 2 before
/// `main`, after which writes to stdout succeed unseen; so this is looked
/// at earlier, from the ELF constructors (which the C runtime runs before
/// `main`).
static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

extern "C" fn note_closed_stdout() {
    // SAFETY: F_GETFD reads the descriptor's flags and touches no memory;
    // it needs nothing of Rust's runtime, which is not set up yet.
    if unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED_AT_START.store(true, Ordering::Relaxed);
    }
}

/// Registers [`note_closed_stdout`] as an ELF constructor.
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

/// One worker's share of the sink.
struct WorkerSink<'a> {
    sink: &'a Sink,
    buf: Vec<u8>,
}

/// Listed paths are written in blocks of about this size.
const LIST_BLOCK: usize = 64 * 1024;

impl Visitor for WorkerSink<'_> {
    fn visit_entry(&mut self, entry: &Entry<'_>) {
        if let Output::List(end) = self.sink.output {
            use std::os::unix::ffi::OsStrExt;
            self.buf
                .extend_from_slice(entry.path().as_os_str().as_bytes());
            self.buf.push(end);
            if self.buf.len() >= LIST_BLOCK {
                self.sink.write_out(&self.buf);
                self.buf.clear();
            }
        }
    }

    fn error(&mut self, err: Error) {
        // On a terminal, first clear a progress line that may be showing.
        let clear = if self.sink.stderr_tty { "\r\x1b[K" } else { "" };
        if err.path().as_os_str().is_empty() {
            // An empty PATH would print as nothing at all: say what it is,
            // in du's words.
            eprintln!("{clear}traverse: cannot access '': {}", err.cause());
            return;
        }
        eprintln!(
            "{clear}traverse: {}: {}: {}",
            output::human_path(err.path()),
            err.op(),
            err.cause()
        );
    }
}

impl Drop for WorkerSink<'_> {
    fn drop(&mut self) {
        self.sink.write_out(&self.buf);
    }
}

impl VisitorBuilder for Sink {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(WorkerSink {
            sink: self,
            buf: Vec::new(),
        })
    }
}

/// Runs `f` while a thread shows a progress line on stderr once the walk
/// has taken a second, and clears it at the end.
fn with_progress<T>(walk: &Walk, f: impl FnOnce() -> T) -> T {
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let shower = scope.spawn(move || {
            let mut wait = Duration::from_secs(1);
            let mut shown = false;
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
                let p = walk.progress();
                eprint!("\r\x1b[K{} entries, {} bytes...", p.entries(), p.bytes());
                shown = true;
                wait = Duration::from_millis(200);
            }
            if shown {
                eprint!("\r\x1b[K");
            }
        });
        let result = f();
        drop(stop);
        let _ = shower.join();
        result
    })
}

/// The flag SIGINT sets; the handler can only reach statics.
static INTERRUPT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn sigint_handler(_: libc::c_int) {
    // Only an atomic load and store: async-signal-safe.
    if let Some(flag) = INTERRUPT.get() {
        flag.store(true, Ordering::Relaxed);
    }
}

/// Makes SIGINT set `flag` (once: a second SIGINT kills as usual).
fn on_sigint(flag: Arc<AtomicBool>) -> io::Result<()> {
    let _ = INTERRUPT.set(flag);
    // SAFETY: an all-zero sigaction is a valid "no flags, empty mask"
    // value; we fill the handler and the flags, and `sigemptyset` gets a
    // valid pointer to the mask inside it.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = sigint_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART | libc::SA_RESETHAND;
    // SAFETY: see above; `action` is a live local.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is fully initialised and its handler only touches
    // an atomic; the old action is not asked for (null).
    if unsafe { libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
