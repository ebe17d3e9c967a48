//! `--export`: the whole tree in ncdu's export format, written under a
//! temporary name and renamed into place only once complete, so that a
//! failed or interrupted export leaves no truncated file, and whatever
//! was at the name (a symlink to a file elsewhere, say) is replaced rather
//! than written through.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::{self, AtFlags, FileType, Mode, OFlags};
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
                let (pending, file) = Pending::create(path).map_err(|e| format!("{name}: {e}"))?;
                let out = Box::new(BufWriter::with_capacity(1 << 20, file));
                (out, name, Some(pending))
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

/// An export file being written under a temporary name, in the
/// directory of the name asked for, opened once: the temporary file is
/// created there (`O_EXCL | O_NOFOLLOW`: never an existing file, never
/// through a symlink) and renamed over the name relative to that same
/// descriptor. The name itself is never opened for writing, so a symlink
/// planted there is replaced, not written through.
struct Pending {
    dir: OwnedFd,
    temporary: OsString,
    name: OsString,
}

impl Pending {
    /// Creates the new file. A name that holds something other than a
    /// file or a symlink (a device, a FIFO, a directory) is refused: a
    /// rename would replace it.
    fn create(path: &Path) -> io::Result<(Pending, File)> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?
            .to_owned();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = fs::open(parent, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        match fs::statat(&dir, &*name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                let kind = FileType::from_raw_mode(st.st_mode);
                if kind != FileType::RegularFile && kind != FileType::Symlink {
                    return Err(io::Error::other(
                        "not a regular file: not replaced (`--export -` writes to stdout)",
                    ));
                }
            }
            Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let mode = Mode::from_raw_mode(0o666);
        // A name of its own (a dot, the file's name, the process id, a
        // count): one left over by a crashed run is skipped, never reused.
        let mut tries = 0;
        loop {
            let mut temporary = OsString::from(".");
            temporary.push(&name);
            temporary.push(format!(".{}.{tries}.part", std::process::id()));
            match fs::openat(&dir, &*temporary, flags | OFlags::CLOEXEC, mode) {
                Ok(fd) => {
                    let pending = Pending {
                        dir,
                        temporary,
                        name,
                    };
                    return Ok((pending, File::from(fd)));
                }
                Err(rustix::io::Errno::EXIST) if tries < 100 => tries += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Gives the complete file its name.
    fn commit(self) -> io::Result<()> {
        fs::renameat(&self.dir, &*self.temporary, &self.dir, &*self.name)?;
        Ok(())
    }

    /// Removes the incomplete file.
    fn discard(self) {
        let _ = fs::unlinkat(&self.dir, &*self.temporary, AtFlags::empty());
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
