//! What the library's workers hand over while a rank reads a task: each
//! entry with its metadata, collected for the rank; and errors, printed
//! at once as `traverse` prints them (in du's words with du's options).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

use traverse::{Entry, Error, ListingPlace, Op, Visitor, VisitorBuilder};

use crate::output::human_path;
use crate::text::{quote, strerror};
use crate::walker::Kind;

/// One entry as the library listed it.
pub struct Listed {
    pub path: Vec<u8>,
    pub depth: usize,
    pub is_dir: bool,
    pub kind: Kind,
    pub len: u64,
    pub disk: u64,
    pub dev: u64,
    /// The mount's id, where the kernel gives it (a bind mount has its own).
    pub mount: Option<u64>,
    pub ino: u64,
    pub nlink: u64,
    /// Its place in its directory's listing (`None`: the walk's root).
    pub place: Option<ListingPlace>,
}

/// Collects what the library's workers list, and prints their errors.
pub struct Collect {
    pub listed: Mutex<Vec<Listed>>,
    /// In du's words.
    pub du: bool,
}

struct Worker<'a> {
    collect: &'a Collect,
    listed: Vec<Listed>,
}

impl VisitorBuilder for Collect {
    fn build(&self) -> Box<dyn Visitor + '_> {
        Box::new(Worker {
            collect: self,
            listed: Vec::new(),
        })
    }
}

impl Visitor for Worker<'_> {
    fn visit_entry(&mut self, entry: &Entry<'_>) {
        let Some(m) = entry.metadata() else {
            // Listed without a stat: never with `list_metadata`.
            return;
        };
        let kind = if m.is_file() {
            Kind::File
        } else if m.is_dir() {
            Kind::Dir
        } else if m.is_symlink() {
            Kind::Symlink
        } else {
            Kind::Other
        };
        self.listed.push(Listed {
            path: entry.path().as_os_str().as_bytes().to_vec(),
            depth: entry.depth(),
            is_dir: m.is_dir(),
            kind,
            len: m.len(),
            disk: m.disk_bytes(),
            dev: m.dev(),
            mount: m.mount_id(),
            ino: m.ino(),
            nlink: m.nlink(),
            place: entry.listing_place(),
        });
    }

    fn error(&mut self, err: Error) {
        let line = if self.collect.du {
            match du_message(&err) {
                Some(message) => format!("traverse-mpi: {message}\n"),
                None => return,
            }
        } else if err.path().as_os_str().is_empty() {
            format!("traverse-mpi: cannot access '': {}\n", err.cause())
        } else {
            format!(
                "traverse-mpi: {}: {}: {}\n",
                human_path(err.path()),
                err.op(),
                err.cause()
            )
        };
        say(&line);
    }
}

/// Writes `line` (ending in a newline) to stderr in one `write`: the lines
/// of several ranks meet in mpirun's stderr, and a line written in pieces,
/// as `eprintln!` writes one (a `write` per piece of its format), can be cut
/// by another rank's.
pub(crate) fn say(line: &str) {
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// `err` as du says it (`traverse`'s du messages), or nothing for a
/// directory met again below itself, which du passes over silently.
fn du_message(err: &Error) -> Option<String> {
    let path = quote(err.path().as_os_str().as_bytes());
    let cause = strerror(err.cause());
    match err.op() {
        Op::Loop => None,
        Op::Stat => Some(format!("cannot access {path}: {cause}")),
        _ => Some(format!("cannot read directory {path}: {cause}")),
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        let mut all = self
            .collect
            .listed
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        all.append(&mut self.listed);
    }
}
