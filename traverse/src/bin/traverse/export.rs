//! `--export`: the whole tree in ncdu's export format, written under a
//! temporary name and renamed into place only once complete, so that a
//! failed or interrupted export leaves no truncated file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use traverse::{DirTotals, Summary};

use crate::cli::Breakdown;
use crate::output;

/// Where the export goes.
pub struct Export {
    out: Box<dyn Write + Send>,
    /// The file's name for messages ("-": stdout).
    name: String,
    /// Whether the root's tree was written, or why it was not.
    written: io::Result<bool>,
    /// For a file: the temporary name written to, renamed to the file's
    /// own name only once the export is complete.
    file: Option<Pending>,
}

impl Export {
    /// Opens the export's file, if one was asked for: before the walk, so
    /// a file that cannot be written costs no walk.
    pub fn open(b: &Breakdown) -> Result<Option<Export>, String> {
        let Some(file) = &b.export else {
            return Ok(None);
        };
        let (out, name, file): (Box<dyn Write + Send>, String, _) = match file {
            None => (
                Box::new(BufWriter::with_capacity(1 << 20, io::stdout())),
                "-".to_owned(),
                None,
            ),
            Some(path) => {
                let name = output::human_path(path);
                // A device, a fifo or a symlink (`/dev/stdout`) is written
                // through: a rename would replace it with a file.
                let plain = std::fs::symlink_metadata(path).map_or(true, |m| m.is_file());
                let (pending, file) = if plain {
                    let (pending, file) =
                        Pending::create(path).map_err(|e| format!("{name}: {e}"))?;
                    (Some(pending), file)
                } else {
                    (
                        None,
                        File::create(path).map_err(|e| format!("{name}: {e}"))?,
                    )
                };
                let out = Box::new(BufWriter::with_capacity(1 << 20, file));
                (out, name, pending)
            }
        };
        Ok(Some(Export {
            out,
            name,
            written: Ok(false),
            file,
        }))
    }

    /// Writes the root's tree, once the walk hands the root over.
    pub fn write_root(&mut self, dir: &DirTotals<'_>) {
        self.written = write_ncdu(&mut self.out, dir);
    }

    /// Ends the export after the walk of `root`: the file's last bytes,
    /// flushed, and the file renamed to its name; an error naming the
    /// file when it could not be written (the incomplete file removed), or
    /// naming `root` when the walk did not finish its tree.
    pub fn finish(mut self, root: &Path, summary: &Summary) -> Result<(), String> {
        let flushed = self.out.flush();
        // Closes the file before it is renamed or removed.
        drop(self.out);
        let outcome = match (self.written, flushed) {
            (Ok(true), Ok(())) => match self.file.take().map_or(Ok(()), Pending::commit) {
                Ok(()) => Ok(()),
                Err(e) => Err(format!(
                    "{}: cannot rename the export into place: {e}",
                    self.name
                )),
            },
            (Err(e), _) | (_, Err(e)) => Err(format!("{}: write error: {e}", self.name)),
            (Ok(false), _) => {
                let why = if summary.partial {
                    "the walk was interrupted"
                } else {
                    "it could not be read"
                };
                Err(format!(
                    "{}: no export written: {why}",
                    output::human_path(root)
                ))
            }
        };
        if let Some(pending) = self.file {
            pending.discard();
        }
        outcome
    }
}

/// An export file being written under a temporary name.
struct Pending {
    temporary: PathBuf,
    path: PathBuf,
}

impl Pending {
    /// Creates a new file in `path`'s directory, under a name of its own
    /// (a dot, the file's name, the process id): the rename at the end is
    /// then atomic, and a failed or cut-short export never leaves a
    /// truncated file under the name asked for.
    fn create(path: &Path) -> io::Result<(Pending, File)> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(name);
        temporary_name.push(format!(".{}.part", std::process::id()));
        let temporary = path.with_file_name(temporary_name);
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        let pending = Pending {
            temporary,
            path: path.to_owned(),
        };
        Ok((pending, file))
    }

    /// Gives the complete file its name.
    fn commit(self) -> io::Result<()> {
        std::fs::rename(&self.temporary, &self.path)
    }

    /// Removes the incomplete file.
    fn discard(self) {
        let _ = std::fs::remove_file(&self.temporary);
    }
}

/// Writes the export file: ncdu's header, the tree, the closing bracket.
fn write_ncdu(out: &mut dyn Write, dir: &DirTotals<'_>) -> io::Result<bool> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    writeln!(
        out,
        "[1,2,{{\"progname\":\"traverse\",\"progver\":\"{}\",\"timestamp\":{now}}},",
        env!("CARGO_PKG_VERSION")
    )?;
    let written = dir.write_ncdu(out)?;
    out.write_all(b"]\n")?;
    Ok(written)
}
