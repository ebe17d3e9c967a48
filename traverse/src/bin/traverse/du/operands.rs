//! The PATHs of a du run: the command line's (`.` when there are none) or
//! the NUL-terminated names of `--files0-from FILE`, with du's messages
//! for the names it refuses.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

use super::{text, Du, Messages};

/// The PATHs still to walk.
pub struct Operands {
    names: std::vec::IntoIter<PathBuf>,
    /// With --files0-from: the file's name as given, and the number of
    /// the next record.
    from: Option<(String, usize)>,
    several: bool,
    failed: bool,
}

impl Operands {
    /// The operands of `du`; with --files0-from, a FILE that cannot be
    /// read ends the run (du's message, status 1).
    pub fn new(du: &Du) -> Result<Operands, ExitCode> {
        let Some(file) = &du.files0_from else {
            let names = if du.paths.is_empty() {
                vec![PathBuf::from(".")]
            } else {
                du.paths.clone()
            };
            return Ok(Operands {
                several: names.len() > 1,
                names: names.into_iter(),
                from: None,
                failed: false,
            });
        };
        let shown = file.display().to_string();
        let mut bytes = Vec::new();
        let read = if file.as_os_str() == "-" {
            std::io::stdin().lock().read_to_end(&mut bytes)
        } else {
            match std::fs::File::open(file) {
                Ok(mut f) => f.read_to_end(&mut bytes),
                Err(e) => {
                    let quoted = text::quote(file.as_os_str().as_bytes());
                    eprintln!(
                        "{}: cannot open {quoted} for reading: {}",
                        du.name,
                        text::strerror(&e)
                    );
                    return Err(ExitCode::from(1));
                }
            }
        };
        if let Err(e) = read {
            eprintln!("{}: {shown}: read error: {}", du.name, text::strerror(&e));
            return Err(ExitCode::from(1));
        }
        // Each name ends with a NUL, the last one perhaps not.
        let mut names: Vec<PathBuf> = bytes
            .split(|&b| b == 0)
            .map(|n| PathBuf::from(OsStr::from_bytes(n)))
            .collect();
        if names.last().is_some_and(|n| n.as_os_str().is_empty()) {
            names.pop();
        }
        Ok(Operands {
            names: names.into_iter(),
            from: Some((shown, 1)),
            // du cannot count them in advance, so it takes them for many.
            several: true,
            failed: false,
        })
    }

    /// Whether there may be more than one (every inode is then counted
    /// once across them).
    pub fn several(&self) -> bool {
        self.several
    }

    /// Whether a name was refused.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// The next name to walk, after reporting the ones du refuses: an
    /// empty name, and `-` among names read from stdin.
    pub fn next(&mut self, messages: &Messages) -> Option<PathBuf> {
        loop {
            let name = self.names.next()?;
            let record = self.from.as_mut().map(|(file, n)| {
                *n += 1;
                (file.clone(), *n - 1)
            });
            if let Some((file, _)) = &record {
                if file == "-" && name.as_os_str() == "-" {
                    eprintln!(
                        "{}: when reading file names from standard input, no file name of '-' allowed",
                        messages.name
                    );
                    self.failed = true;
                    continue;
                }
            }
            if name.as_os_str().is_empty() {
                match record {
                    Some((file, n)) => {
                        eprintln!(
                            "{}: {file}:{n}: invalid zero-length file name",
                            messages.name
                        )
                    }
                    None => eprintln!("{}: invalid zero-length file name", messages.name),
                }
                self.failed = true;
                continue;
            }
            return Some(name);
        }
    }
}
