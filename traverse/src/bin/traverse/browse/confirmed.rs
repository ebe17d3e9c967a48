//! A deletion the person confirmed: run it from the root's descriptor,
//! say what it deleted and what it left (with its first errors in full),
//! and scan the directory shown again when something was left, so that
//! the sizes on the screen are true.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use traverse::{DirTotals, DirVisitor, Ignore, NcduDir, Walk};

use super::delete::{self, Outcome};
use super::model::{Model, Row};
use crate::output::{human_path, human_size};

/// Deletes `row` of the directory shown; the message for the person.
pub fn delete(
    model: &mut Model,
    row: &Row,
    root: &Path,
    root_fd: &Result<OwnedFd, String>,
    walk: &Walk,
) -> String {
    let fd = match root_fd {
        Ok(fd) => fd,
        Err(why) => return why.clone(),
    };
    let name = human_path(Path::new(OsStr::from_bytes(&row.name)));
    let outcome = match model.delete(row, |levels, target| {
        delete::delete(fd.as_fd(), root, levels, target)
    }) {
        Ok(outcome) => outcome,
        Err(why) => return why,
    };
    if outcome.left == 0 {
        return format!("deleted {name}: {}", deleted(model, &outcome));
    }
    let mut text = format!(
        "{name}: deleted {}; {} entries left, {} errors: {}",
        deleted(model, &outcome),
        outcome.left,
        outcome.errors,
        outcome.first_errors.join("; ")
    );
    if outcome.errors > outcome.first_errors.len() as u64 {
        text.push_str("; ...");
    }
    if let Err(why) = rescan(model, fd, root, walk) {
        text.push_str(&format!(" (not rescanned: {why})"));
    }
    text
}

/// "N entries, SIZE": what was deleted.
fn deleted(model: &Model, outcome: &Outcome) -> String {
    let bytes = if model.disk_usage {
        outcome.disk_bytes
    } else {
        outcome.bytes
    };
    format!("{} entries, {}", outcome.entries, human_size(bytes.into()))
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

/// Scans the directory shown again, from a descriptor reached from the
/// root's (each level checked), and puts its new tree in the model.
fn rescan(model: &mut Model, root_fd: &OwnedFd, root: &Path, walk: &Walk) -> Result<(), String> {
    let (levels, name) = model.shown_levels();
    let (dir, _) = delete::open_levels(root_fd.as_fd(), root, &levels)?;
    let dir = dir.as_ref().map_or(root_fd.as_fd(), AsFd::as_fd);
    let tree = Arc::new(Root::default());
    // Named by its own name, as its old tree was.
    let name = Path::new(OsStr::from_bytes(&name));
    walk.run_dirs_at(dir, name, &Ignore, Arc::clone(&tree) as Arc<dyn DirVisitor>);
    let tree = tree.0.lock().unwrap_or_else(|p| p.into_inner()).take();
    model.rescanned(tree.ok_or("the directory could not be read")?);
    Ok(())
}
