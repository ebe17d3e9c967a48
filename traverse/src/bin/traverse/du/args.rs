//! du's own options (those traverse had no equivalent for), how a
//! command line asks for du's output, and du's words for a bad one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args};

use super::size::{self, Units};
use super::time::Times;

/// The options of GNU du that only du's output uses; the ones traverse
/// shares with du (-a, -c, -d, -h, -t, -x, -l, -0, --inodes, --exclude,
/// --apparent-size/-A) are traverse's own.
#[derive(Debug, Args)]
pub struct DuArgs {
    /// One line per PATH, its total (du -s, the same as -d 0).
    #[arg(short = 's', long)]
    summarize: bool,

    /// Apparent sizes in bytes (du -b: --apparent-size --block-size=1).
    #[arg(short = 'b', long)]
    bytes: bool,

    /// Sizes in units of 1024 bytes (du -k, du's default).
    #[arg(short = 'k')]
    kilobytes: bool,

    /// Sizes in units of 1 MiB (du -m).
    #[arg(short = 'm')]
    megabytes: bool,

    /// Sizes in units of SIZE bytes, rounded up (du -B): 1K, 1M, 1MB
    /// (10^6), or a unit alone (K, MiB, kB) to print its name after each
    /// size; `human-readable` and `si` as -h and --si. Else from
    /// DU_BLOCK_SIZE, BLOCK_SIZE or BLOCKSIZE.
    #[arg(short = 'B', long, value_name = "SIZE", value_parser = size::block_size)]
    block_size: Option<Units>,

    /// Sizes in powers of 1000, as 1.1k, 234M, 2.0G (du --si).
    #[arg(long)]
    si: bool,

    /// A directory's line leaves out its subdirectories' sizes (du -S).
    #[arg(short = 'S', long)]
    separate_dirs: bool,

    /// Follow every symbolic link (du -L): a link counts as what it
    /// points to; a link back to an ancestor is not followed.
    #[arg(short = 'L', long)]
    dereference: bool,

    /// Follow symbolic links given as PATHs only (du -H, -D).
    #[arg(short = 'D', long, visible_short_alias = 'H')]
    dereference_args: bool,

    /// Follow no symbolic link (du -P, the default).
    #[arg(short = 'P', long)]
    no_dereference: bool,

    /// Leave out entries matching any pattern of FILE, one a line (du -X).
    #[arg(short = 'X', long, value_name = "FILE")]
    exclude_from: Vec<PathBuf>,

    /// Show the time of the last modification of anything in each line's
    /// subtree (du --time); WORD shows another time instead: atime,
    /// access or use (last access), ctime or status (last change of the
    /// inode).
    #[arg(long, value_name = "WORD", num_args = 0..=1, require_equals = true)]
    time: Option<Option<String>>,

    /// Write the times of --time in STYLE: full-iso, long-iso (the
    /// default), iso, or +FORMAT (strftime's, with %N for nanoseconds);
    /// else from TIME_STYLE. Local time, as TZ says.
    #[arg(long, value_name = "STYLE")]
    time_style: Option<String>,

    /// The PATHs are the NUL-terminated names in FILE ("-": stdin), none
    /// on the command line (du --files0-from).
    #[arg(long, value_name = "FILE")]
    files0_from: Option<PathBuf>,
}

/// Which symbolic links a du walk follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deref {
    /// None (-P).
    Never,
    /// The PATHs (-H, -D).
    Args,
    /// All (-L).
    Always,
}

/// The arguments as given, with the `du` subcommand taken off, and
/// whether traverse runs as du: called `du` (a link named so) or given
/// `du` as its first argument.
pub fn argv() -> (Vec<OsString>, bool) {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let called_du = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|name| name == "du");
    let subcommand = args.get(1).is_some_and(|a| a == "du");
    if subcommand {
        args.remove(1);
    }
    (args, called_du || subcommand)
}

/// The last index on the command line of any of `ids` given, with it.
fn last_of<'a>(matches: &ArgMatches, ids: &[&'a str]) -> Option<&'a str> {
    ids.iter()
        .filter_map(|id| {
            // A flag not given has its default value, at an index too.
            if matches.value_source(id) != Some(ValueSource::CommandLine) {
                return None;
            }
            let index = matches.indices_of(id)?.max()?;
            Some((index, *id))
        })
        .max()
        .map(|(_, id)| id)
}

impl DuArgs {
    /// Whether one of these options was given.
    pub fn any(&self) -> bool {
        self.summarize
            || self.bytes
            || self.kilobytes
            || self.megabytes
            || self.block_size.is_some()
            || self.si
            || self.separate_dirs
            || self.dereference
            || self.dereference_args
            || self.no_dereference
            || !self.exclude_from.is_empty()
            || self.files0_from.is_some()
            || self.time.is_some()
            || self.time_style.is_some()
    }

    /// With --time: the time shown and its format, or du's complaint.
    pub fn times(&self) -> Result<Option<Times>, String> {
        let Some(word) = &self.time else {
            return Ok(None);
        };
        let env = std::env::var("TIME_STYLE").ok();
        Times::new(word.as_deref(), self.time_style.as_deref(), env.as_deref()).map(Some)
    }

    /// The units of the lines: the last of -b -k -m -B -h --si given
    /// wins, as in du; else du's default ([`Units::default`]).
    pub fn units(&self, matches: &ArgMatches) -> Units {
        let ids = [
            "bytes",
            "kilobytes",
            "megabytes",
            "block_size",
            "si",
            "human_readable",
        ];
        match last_of(matches, &ids) {
            Some("bytes") => Units::Blocks {
                block: 1,
                suffix: String::new(),
            },
            Some("kilobytes") => Units::Blocks {
                block: 1024,
                suffix: String::new(),
            },
            Some("megabytes") => Units::Blocks {
                block: 1 << 20,
                suffix: String::new(),
            },
            Some("block_size") => self.block_size.clone().unwrap_or_default(),
            Some("si") => Units::Human { base: 1000 },
            Some("human_readable") => Units::Human { base: 1024 },
            _ => Units::default(),
        }
    }

    /// Whether -b asked for apparent sizes (it stays asked when a later
    /// option changes the units, as in du).
    pub fn bytes(&self) -> bool {
        self.bytes
    }

    pub fn summarize(&self) -> bool {
        self.summarize
    }

    pub fn separate_dirs(&self) -> bool {
        self.separate_dirs
    }

    /// The last of -L, -H/-D, -P given.
    pub fn deref(&self, matches: &ArgMatches) -> Deref {
        match last_of(
            matches,
            &["dereference", "dereference_args", "no_dereference"],
        ) {
            Some("dereference") => Deref::Always,
            Some("dereference_args") => Deref::Args,
            _ => Deref::Never,
        }
    }

    /// The patterns of the -X files, in order; an unreadable file is an
    /// error in du's words.
    pub fn patterns_from_files(&self) -> Result<Vec<String>, String> {
        let mut patterns = Vec::new();
        for file in &self.exclude_from {
            let text = std::fs::read(file)
                .map_err(|e| format!("{}: {}", file.display(), super::text::strerror(&e)))?;
            for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                patterns.push(String::from_utf8_lossy(line).into_owned());
            }
        }
        Ok(patterns)
    }

    pub fn files0_from(&self) -> Option<&Path> {
        self.files0_from.as_deref()
    }
}

/// Reports a command line that clap refused as du would (`du: invalid
/// maximum depth '-1'`, `du: unrecognized option '--x'`, then a line
/// pointing to --help), with du's exit status 1; as traverse (clap's
/// words, status 2) when not run as du.
pub fn usage_error(err: clap::Error, as_du: bool, args: &[OsString]) -> ExitCode {
    if !as_du
        || matches!(
            err.kind(),
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
        )
    {
        err.exit();
    }
    let arg = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let value = match err.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let message = match err.kind() {
        ErrorKind::UnknownArgument if arg.starts_with("--") => {
            format!("unrecognized option '{arg}'")
        }
        ErrorKind::UnknownArgument => {
            format!("invalid option -- '{}'", arg.trim_start_matches('-'))
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation if arg.contains("max-depth") => {
            format!("invalid maximum depth '{value}'")
        }
        ErrorKind::InvalidValue
            if value.is_empty()
                && args.last().is_some_and(|a| {
                    let long = arg.split_whitespace().next().unwrap_or_default();
                    a.to_str()
                        .is_some_and(|a| a.len() > 2 && long.starts_with(a))
                }) =>
        {
            let long = arg.split_whitespace().next().unwrap_or_default();
            format!("option '{long}' requires an argument")
        }
        ErrorKind::InvalidValue
            if value.is_empty() && args.last().is_some_and(|a| a.len() == 2) =>
        {
            let short = args.last().and_then(|a| a.to_str()).unwrap_or_default();
            format!(
                "option requires an argument -- '{}'",
                short.trim_start_matches('-')
            )
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            // xstrtol_fatal's words: the option as it was spelt, no hint.
            let long = arg.split_whitespace().next().unwrap_or_default();
            let short = format!(
                "-{}",
                long.trim_start_matches("--").chars().next().unwrap_or('?')
            );
            let spelt_short = args.iter().any(|a| {
                a.to_str()
                    .is_some_and(|a| a.starts_with(&short) && !a.starts_with("--"))
            });
            // `-0` is refused by du itself, always under the long name.
            let name = if spelt_short && value != "-0" {
                short
            } else {
                long.to_owned()
            };
            eprintln!("du: invalid {name} argument '{value}'");
            return ExitCode::from(1);
        }
        ErrorKind::NoEquals | ErrorKind::MissingRequiredArgument => {
            format!("option requires an argument -- '{arg}'")
        }
        _ => {
            let text = err.to_string();
            let first = text.lines().next().unwrap_or_default();
            first.trim_start_matches("error: ").to_owned()
        }
    };
    eprintln!("du: {message}\nTry 'du --help' for more information.");
    ExitCode::from(1)
}
