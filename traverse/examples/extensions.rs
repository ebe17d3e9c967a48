//! Regular files per extension below a directory, most common first: what
//! a tree is made of, which `traverse` itself does not tell.
//!
//! ```console
//! $ cargo run -p traverse-du --example extensions -- /usr/share/doc
//!    1783  gz
//!     983  (none)
//!     538  txt
//!     ...
//! 4524 files, 906 directories, 0 errors
//! ```
//!
//! The walk lists every path with its type (`list(true)`); a closure
//! gets them one worker at a time. Errors name their path and the walk
//! goes on; the exit status is then 1, as `du`'s.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use traverse::{Event, FileType, WalkBuilder};

fn main() -> ExitCode {
    let root = PathBuf::from(std::env::args_os().nth(1).unwrap_or_else(|| ".".into()));
    let mut per_extension: HashMap<Option<OsString>, u64> = HashMap::new();
    let walk = WalkBuilder::new().list(true).build();
    let summary = walk.run_with(&root, |event| match event {
        Event::Entry(entry) if entry.file_type() == FileType::Regular => {
            let extension = entry.path().extension().map(|e| e.to_ascii_lowercase());
            *per_extension.entry(extension).or_default() += 1;
        }
        Event::Entry(_) => {}
        Event::Error(err) => eprintln!("extensions: {err}"),
    });
    let mut rows: Vec<_> = per_extension.into_iter().collect();
    // Most files first; equal counts by name, so the output is stable.
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    for (extension, files) in rows {
        let name = extension.map_or_else(|| "(none)".into(), |e| e.to_string_lossy().into_owned());
        println!("{files:>7}  {name}");
    }
    let totals = summary.totals;
    println!(
        "{} files, {} directories, {} errors",
        totals.files, totals.dirs, totals.errors
    );
    if totals.errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
