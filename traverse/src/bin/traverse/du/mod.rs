//! traverse as GNU du: whenever a du option is given (or traverse runs
//! as `du`: a link of that name, or `traverse du ...`), every line,
//! message and exit status is du's, from the same parallel walk. Sizes
//! are disk usage in 1024-byte blocks by default; `--apparent-size`
//! counts regular files and symlinks only, as du does since 9.2.

mod args;
mod cycle;
mod exclude;
mod operands;
pub mod size;
pub mod text;
mod time;

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use traverse::{
    DirVisitor, Error, Op, Summary, TimeField, Timestamp, Totals, Visitor, VisitorBuilder, Walk,
};

pub use args::{argv, usage_error, Deref, DuArgs};
pub use exclude::Exclude;
use operands::Operands;
pub use size::Units;
pub use time::Times;

use crate::cli::Breakdown;
use crate::dirs::Dirs;
use crate::line::{du_order, Line};

/// du's settings, resolved from the command line.
#[derive(Debug)]
pub struct Du {
    /// The program's name in messages: `du` when run as du.
    pub name: &'static str,
    pub paths: Vec<PathBuf>,
    pub files0_from: Option<PathBuf>,
    /// Lines down to this depth (`-s`: 0).
    pub max_depth: usize,
    pub all: bool,
    pub separate_dirs: bool,
    pub inodes: bool,
    pub apparent: bool,
    pub total: bool,
    /// Each line ends with NUL (`-0`).
    pub null: bool,
    pub units: Units,
    pub threshold: Option<i64>,
    pub deref: Deref,
    pub count_links: bool,
    pub exclude: Option<Exclude>,
    /// `--time`: the time each line shows, and how.
    pub times: Option<Times>,
}

/// Errors of the walk, printed as du prints them, and counted.
struct Messages {
    name: &'static str,
    errors: AtomicU64,
    deref: Deref,
    /// du remembers every inode (several PATHs or -L, not -l): a cycle's
    /// directory is then one seen before, passed over silently.
    hash_all: bool,
}

impl Messages {
    fn report(&self, message: std::fmt::Arguments<'_>) {
        eprintln!("{}: {message}", self.name);
        self.errors.fetch_add(1, Ordering::Relaxed);
    }
}

impl Visitor for &Messages {
    fn visit_entry(&mut self, _: &traverse::Entry<'_>) {}

    fn error(&mut self, err: Error) {
        let path = text::quote(err.path().as_os_str().as_bytes());
        let cause = text::strerror(err.cause());
        match err.op() {
            // A directory met again below itself: du passes over a bind
            // mount of an ancestor, or with -L a link to one, without a
            // word, and counts the directory once; another cycle is
            // du's "corrupted file system".
            Op::Loop => {
                let ancestor = err.loop_ancestor().unwrap_or(Path::new(""));
                let depth = err.depth().unwrap_or(1);
                let warning = cycle::warning(self.deref, err.path(), ancestor, depth);
                if let Some(text) = warning.filter(|_| !self.hash_all) {
                    self.report(format_args!("{text}"));
                }
            }
            // A dangling link, followed: fts gives no cause, nor du.
            Op::Stat if dangling(err.path(), err.cause()) => {
                self.report(format_args!("cannot access {path}"))
            }
            Op::Stat => self.report(format_args!("cannot access {path}: {cause}")),
            _ => self.report(format_args!("cannot read directory {path}: {cause}")),
        }
    }
}

impl VisitorBuilder for Messages {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(self)
    }
}

/// Walks every operand and prints du's lines; returns du's exit status.
pub fn run(du: &Du, walk: &Walk, interrupt: &AtomicBool) -> ExitCode {
    let messages = Messages {
        name: du.name,
        errors: AtomicU64::new(0),
        deref: du.deref,
        hash_all: !du.count_links
            && (du.paths.len() > 1 || du.files0_from.is_some() || du.deref == Deref::Always),
    };
    let mut operands = match Operands::new(du) {
        Ok(operands) => operands,
        Err(code) => return code,
    };
    let quote_lines = !du.null && io::stdout().is_terminal();
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut write_failed = None;
    let mut total = 0u128;
    let mut total_time = None;
    // du remembers every inode with several PATHs or -L, else hard-linked
    // files only.
    let hash_all = operands.several() || du.deref == Deref::Always;
    while let Some(path) = operands.next(&messages) {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let path = trim_slashes(&path);
        if du
            .exclude
            .as_ref()
            .is_some_and(|e| e.matches(path.as_os_str().as_bytes()))
        {
            continue;
        }
        let meta = if du.deref == Deref::Never {
            std::fs::symlink_metadata(&path)
        } else {
            std::fs::metadata(&path)
        };
        let meta = match meta {
            Ok(meta) => meta,
            Err(e) if dangling(&path, &e) => {
                let quoted = text::quote(path.as_os_str().as_bytes());
                messages.report(format_args!("cannot access {quoted}"));
                continue;
            }
            Err(e) => {
                let quoted = text::quote(path.as_os_str().as_bytes());
                messages.report(format_args!(
                    "cannot access {quoted}: {}",
                    text::strerror(&e)
                ));
                continue;
            }
        };
        let lines = if meta.is_dir() {
            match walk_dir(du, walk, &path, &messages) {
                Some(lines) => lines,
                None => continue,
            }
        } else {
            use std::os::unix::fs::MetadataExt;
            let repeated = !du.count_links
                && (hash_all || meta.nlink() > 1)
                && !walk.count_file_once(&path, meta.dev(), meta.ino());
            if repeated {
                continue;
            }
            let time = du.times.as_ref().map(|t| meta_time(&meta, t.field));
            vec![Sized {
                path: path.clone(),
                depth: 0,
                size: measure_file(du, &meta),
                full: measure_file(du, &meta),
                time,
                full_time: time,
            }]
        };
        let mut text = Vec::new();
        for line in &lines {
            if line.depth == 0 {
                total += line.full;
                total_time = total_time.max(line.full_time);
            }
            if du.passes(line.size) {
                du.write_line(&mut text, line.size, line.time, &line.path, quote_lines);
            }
        }
        if let Err(e) = out.write_all(&text) {
            write_failed.get_or_insert(e);
            break;
        }
    }
    if du.total && write_failed.is_none() && !interrupt.load(Ordering::Relaxed) {
        let mut text = Vec::new();
        du.write_line(&mut text, total, total_time, Path::new("total"), false);
        if let Err(e) = out.write_all(&text) {
            write_failed.get_or_insert(e);
        }
    }
    if let Err(e) = out.flush() {
        write_failed.get_or_insert(e);
    }
    if let Some(e) = write_failed {
        if e.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("{}: write error: {}", du.name, text::strerror(&e));
        }
        return ExitCode::from(1);
    }
    if interrupt.load(Ordering::Relaxed) {
        return ExitCode::from(130);
    }
    if messages.errors.load(Ordering::Relaxed) > 0 || operands.failed() {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// A line to print: `size` and `time` as shown (with `-S`, without
/// subdirectories), `full` and `full_time` with them (what `-c` sums up).
struct Sized {
    path: PathBuf,
    depth: usize,
    size: u128,
    full: u128,
    time: Option<Timestamp>,
    full_time: Option<Timestamp>,
}

impl Du {
    /// Whether a line of this size passes `-t`.
    fn passes(&self, size: u128) -> bool {
        match self.threshold {
            None => true,
            Some(t) if t < 0 => size <= u128::from(t.unsigned_abs()),
            Some(t) => size >= u128::from(t.unsigned_abs()),
        }
    }

    /// Appends `SIZE<TAB>PATH` (`SIZE<TAB>TIME<TAB>PATH` with `--time`)
    /// and the line's end.
    fn write_line(
        &self,
        text: &mut Vec<u8>,
        size: u128,
        time: Option<Timestamp>,
        path: &Path,
        quote: bool,
    ) {
        let units = if self.inodes {
            match self.units {
                Units::Human { .. } => self.units.clone(),
                Units::Blocks { .. } => Units::Blocks {
                    block: 1,
                    suffix: String::new(),
                },
            }
        } else {
            self.units.clone()
        };
        text.extend_from_slice(units.format(size).as_bytes());
        text.push(b'\t');
        if let Some(times) = &self.times {
            // An entry with no time (none was counted) shows the epoch's
            // first instant before it, as du's "no time found".
            let shown = times.show(time.unwrap_or(Timestamp {
                sec: i64::MIN,
                nsec: 0,
            }));
            let shown = shown.unwrap_or_else(|sec| {
                eprintln!("{}: time '{sec}' is out of range", self.name);
                sec
            });
            text.extend_from_slice(shown.as_bytes());
            text.push(b'\t');
        }
        let name = path.as_os_str().as_bytes();
        if quote {
            text.extend_from_slice(text::quote_if_needed(name).as_bytes());
        } else {
            text.extend_from_slice(name);
        }
        text.push(if self.null { b'\0' } else { b'\n' });
    }

    /// The size shown of a subtree's `totals`, with `inodes` entries.
    fn measure(&self, totals: &Totals, inodes: u64) -> u128 {
        if self.inodes {
            u128::from(inodes)
        } else if self.apparent {
            totals.bytes - totals.dir_bytes
        } else {
            totals.disk_bytes
        }
    }
}

/// The size of a file operand (not a directory).
fn measure_file(du: &Du, meta: &std::fs::Metadata) -> u128 {
    use std::os::unix::fs::MetadataExt;
    if du.inodes {
        1
    } else if du.apparent {
        // coreutils 9.2+: only regular files and symlinks have one.
        let usable = meta.file_type().is_file() || meta.file_type().is_symlink();
        if usable {
            u128::from(meta.size())
        } else {
            0
        }
    } else {
        u128::from(meta.blocks()) * 512
    }
}

/// The time `field` of a PATH's own stat.
fn meta_time(meta: &std::fs::Metadata, field: TimeField) -> Timestamp {
    use std::os::unix::fs::MetadataExt;
    let (sec, nsec) = match field {
        TimeField::Access => (meta.atime(), meta.atime_nsec()),
        TimeField::Modification => (meta.mtime(), meta.mtime_nsec()),
        TimeField::StatusChange => (meta.ctime(), meta.ctime_nsec()),
    };
    Timestamp {
        sec,
        nsec: u32::try_from(nsec).unwrap_or(0),
    }
}

/// Whether following `path` failed with `cause` because it is a symlink
/// to nothing.
fn dangling(path: &Path, cause: &io::Error) -> bool {
    cause.kind() == io::ErrorKind::NotFound
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// A PATH's two or more trailing slashes made one, as fts does.
fn trim_slashes(path: &Path) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    let mut len = bytes.len();
    if len > 2 && bytes[len - 1] == b'/' {
        while len > 1 && bytes[len - 2] == b'/' {
            len -= 1;
        }
    }
    PathBuf::from(std::ffi::OsStr::from_bytes(&bytes[..len]))
}

/// Walks the directory `path`: its lines, or `None` when it was counted
/// under an earlier PATH (du prints nothing for it).
fn walk_dir(du: &Du, walk: &Walk, path: &Path, messages: &Messages) -> Option<Vec<Sized>> {
    // `-s` alone needs no line below the root: the plain walk's totals.
    if du.max_depth == 0 && !du.separate_dirs && !du.inodes {
        let summary = walk.run_next(path, messages);
        if summary.repeated {
            return None;
        }
        let size = du.measure(&summary.totals, 0);
        let line = Sized {
            path: path.to_owned(),
            depth: 0,
            size,
            full: size,
            time: summary.totals.latest,
            full_time: summary.totals.latest,
        };
        return Some(vec![line]);
    }
    // With -S, a directory's own size is its subtree's less its
    // subdirectories': those one level below the last line are needed.
    let depth = if du.separate_dirs {
        du.max_depth.saturating_add(1)
    } else {
        du.max_depth
    };
    let breakdown = Breakdown {
        max_depth: Some(depth),
        all: du.all,
        ..Breakdown::default()
    };
    let dirs = Arc::new(Dirs::new(&breakdown, None).times_here(du.separate_dirs));
    let summary: Summary = walk.run_dirs(path, messages, Arc::clone(&dirs) as Arc<dyn DirVisitor>);
    if summary.repeated {
        return None;
    }
    let mut lines = dirs.take_lines(path, &summary);
    lines.sort_by(du_order);
    Some(sized(du, lines, summary.totals.latest))
}

/// The lines' sizes as shown, down to `-d`; `latest` is the root's whole
/// subtree's time (with `-S` its line's is its own).
fn sized(du: &Du, lines: Vec<Line>, latest: Option<Timestamp>) -> Vec<Sized> {
    let full: Vec<u128> = lines
        .iter()
        .map(|l| du.measure(&l.totals, l.inodes))
        .collect();
    let mut own = full.clone();
    if du.separate_dirs {
        let key = |p: &Path| {
            let b = p.as_os_str().as_bytes();
            b.strip_suffix(b"/").unwrap_or(b).to_vec()
        };
        let index: HashMap<Vec<u8>, usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.totals.dirs > 0)
            .map(|(i, l)| (key(&l.path), i))
            .collect();
        for (i, l) in lines.iter().enumerate() {
            if l.depth == 0 || l.totals.dirs == 0 {
                continue;
            }
            let parent = l.path.parent().map(key).unwrap_or_default();
            if let Some(&p) = index.get(&parent) {
                own[p] = own[p].saturating_sub(full[i]);
            }
        }
    }
    lines
        .into_iter()
        .zip(full.into_iter().zip(own))
        .filter(|(l, _)| l.depth <= du.max_depth)
        .map(|(l, (full, size))| Sized {
            full_time: if l.depth == 0 {
                latest
            } else {
                l.totals.latest
            },
            time: l.totals.latest,
            path: l.path,
            depth: l.depth,
            size,
            full,
        })
        .collect()
}
