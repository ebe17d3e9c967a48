//! A deletion the person confirmed, run on a thread of its own (quitting
//! never waits for it): each row deleted from the root's descriptor; what
//! it deleted and what it left (with its first errors in full) said to the
//! person; and a directory scanned again from the root's descriptor, each
//! level checked (after a deletion that left something, or on `r`), so
//! that the sizes on the screen are true.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use traverse::{DirTotals, DirVisitor, NcduDir, VisitorBuilder, Walk};

use super::delete::{self, Level, Outcome, Target};
use super::info;
use super::rows::Row;
use super::status::size3;

/// What a deletion needs, owned, for its thread.
pub struct Job {
    /// A duplicate of the root's descriptor.
    pub fd: OwnedFd,
    pub root: PathBuf,
    /// The levels from the root to the directory shown.
    pub levels: Vec<Level>,
    /// The rows, each with the (device, inode) the walk saw.
    pub rows: Vec<(Row, Option<(u64, u64)>)>,
}

/// Deletes the job's rows, one after the other.
pub fn run(job: Job) -> Vec<(Row, Result<Outcome, String>)> {
    job.rows
        .into_iter()
        .map(|(row, id)| {
            let target = match row.dir {
                Some(_) => Target::Dir {
                    name: &row.name,
                    id,
                },
                None => Target::Entry {
                    name: &row.name,
                    id,
                },
            };
            let done = delete::delete(job.fd.as_fd(), &job.root, &job.levels, &target);
            (row, done)
        })
        .collect()
}

/// What the person reads of a deletion's outcome.
pub fn message(disk_usage: bool, done: &[(Row, Result<Outcome, String>)]) -> String {
    let deleted = |o: &Outcome| {
        let bytes = if disk_usage { o.disk_bytes } else { o.bytes };
        format!("{} entries, {}", o.entries, size3(bytes.into()))
    };
    let mut text = Vec::new();
    let mut all = Outcome::default();
    for (row, result) in done {
        let name = info::name(&row.name);
        match result {
            Err(why) => text.push(why.clone()),
            Ok(o) if o.left == 0 => {
                if done.len() == 1 {
                    text.push(format!("deleted {name}: {}", deleted(o)));
                }
            }
            Ok(o) => {
                let mut t = format!(
                    "{name}: deleted {}; {} entries left, {} errors: {}",
                    deleted(o),
                    o.left,
                    o.errors,
                    o.first_errors.join("; ")
                );
                if o.errors > o.first_errors.len() as u64 {
                    t.push_str("; ...");
                }
                text.push(t);
            }
        }
        if let Ok(o) = result {
            all.entries += o.entries;
            all.bytes += o.bytes;
            all.disk_bytes += o.disk_bytes;
        }
    }
    if done.len() > 1 {
        text.insert(
            0,
            format!("deleted {} items: {}", done.len(), deleted(&all)),
        );
    }
    text.join(" | ")
}

/// The tree of the walk's root.
#[derive(Default)]
struct Root(Mutex<Option<NcduDir>>);

impl DirVisitor for Root {
    fn dir(&self, dir: &DirTotals<'_>) {
        if dir.depth() == 0 {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) = dir.take_tree();
        }
    }

    fn ncdu(&self) -> bool {
        true
    }
}

/// Scans the directory reached from `root_fd` through `levels` again,
/// from a descriptor reached level by level (each checked), its errors
/// to `errors`; its new tree.
pub fn rescan(
    walk: &Walk,
    root_fd: BorrowedFd<'_>,
    root: &Path,
    levels: &[Level],
    errors: &dyn VisitorBuilder,
) -> Result<NcduDir, String> {
    let (dir, _) = delete::open_levels(root_fd, root, levels)?;
    let dir = dir.as_ref().map_or(root_fd, AsFd::as_fd);
    let tree = Arc::new(Root::default());
    // Named by its own name, as its old tree was (the replacement keeps
    // the old name anyway).
    let name = levels
        .last()
        .map_or(root, |l| Path::new(OsStr::from_bytes(&l.0)));
    walk.run_dirs_at(dir, name, errors, Arc::clone(&tree) as Arc<dyn DirVisitor>);
    let tree = tree.0.lock().unwrap_or_else(|p| p.into_inner()).take();
    tree.ok_or_else(|| "the directory could not be read".to_owned())
}
