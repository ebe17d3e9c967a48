//! Command-line options, and their translation into a [`Config`] so the
//! rest of the program never sees clap.

use std::path::PathBuf;

use std::os::unix::ffi::OsStrExt;

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::{ArgMatches, Parser};
use traverse::{Engine, ParseEngineError, WalkBuilder};

use crate::du::{Deref, Du, DuArgs, Exclude};

mod du_opts;

/// Disk usage of each PATH (default: .), as du prints it, fast.
///
/// With any of du's options (-s, -h, -a, -d N, -c, -b, -k, -m, -B, -L,
/// --exclude...), or run as `du` (`traverse du ...`, or a link named du),
/// every line, message and exit status is GNU du's: "SIZE<TAB>PATH", disk
/// usage in 1024-byte blocks unless -b, -k, -m, -B, -h or --si say
/// otherwise; --apparent-size counts regular files and symlinks, as du
/// does since coreutils 9.2.
///
/// Without them, two lines per PATH: "N files, M bytes on disk", then the
/// path; then directories (PATH included), symlinks, other entries, the
/// apparent size (every entry's st_size, a hard-linked file once) and
/// errors. Symlinks are not followed unless -L/-H. Errors go to stderr and
/// the walk goes on (exit status 1); Ctrl-C prints the totals so far,
/// marked partial (exit status 130). --top N and --tree rank directories
/// by disk usage (by apparent size with --apparent-size or -b).
#[derive(Debug, Parser)]
// A repeated option is accepted, the last value winning (`-x -x`, as du
// takes it), rather than refused. `-h` is du's --human-readable: help is
// --help only.
#[command(
    name = "traverse",
    version,
    args_override_self = true,
    // Long options may be shortened while unambiguous (`--th=1K`), as
    // getopt takes them.
    infer_long_args = true,
    disable_help_flag = true,
    after_help = "Examples:\n  \
                  traverse -sh ~/src                      the disk usage of ~/src, as du -sh\n  \
                  traverse -d 1 -h ~                      a line per directory below ~, as du -d 1 -h\n  \
                  traverse du -sh *                       exactly du: lines, messages, exit status\n  \
                  traverse ~/src                          counts and sizes of the tree\n  \
                  traverse --top 20 /var                  the 20 directories using most disk\n  \
                  traverse -i ~/Downloads                 browse, sort, delete\n  \
                  traverse --export t.json /srv && ncdu -f t.json   browse it in ncdu\n  \
                  traverse --tree ~                       the largest subtrees, with share bars\n  \
                  traverse -a -t 100M -h /srv             files and directories of 100M and more"
)]
pub struct Opts {
    /// Files and directories to count (default: .). A PATH that is not a
    /// directory is counted as its one entry, as du counts it: a symlink as
    /// itself unless -L or -H (write `link/` to walk its target).
    // Parsed as OS strings: clap's path parser refuses an empty PATH as a
    // missing value, where the real problem is that no such file exists
    // (reported by the walk, as du reports it).
    #[arg(value_name = "PATH", value_parser = OsStringValueParser::new().map(PathBuf::from))]
    paths: Vec<PathBuf>,

    /// One JSON object per PATH, and one for the total (with "path": null)
    /// when there are several.
    #[arg(long, conflicts_with = "list")]
    json: bool,

    /// Print every path below PATH (PATH included), as `find PATH` does,
    /// instead of totals.
    #[arg(long)]
    list: bool,

    /// End each line with NUL instead of newline (du -0; with --list,
    /// each path).
    #[arg(short = '0', long = "null")]
    null: bool,

    /// A line per directory down to depth N below each PATH (PATH is depth
    /// 0), with its whole subtree: children before their parent, siblings
    /// by name. With --json, one object per directory with a "depth" key.
    /// 0: the totals only.
    #[arg(short = 'd', long, value_name = "N", conflicts_with = "list",
          allow_hyphen_values = true, value_parser = parse_depth)]
    max_depth: Option<usize>,

    /// The N directories with the largest subtrees, anywhere below each
    /// PATH (PATH included), largest first, by the size shown. With
    /// --tree: N lines at most.
    #[arg(long, value_name = "N", conflicts_with = "list",
          value_parser = clap::value_parser!(u64).range(1..))]
    top: Option<u64>,

    /// Sizes in powers of 1024, as du -h (4.0K, 1.5M, 12G).
    #[arg(short = 'h', long)]
    human_readable: bool,

    /// A line for every entry, files too, not only directories (du -a):
    /// down to -d N, or the whole tree without -d and --top.
    #[arg(short = 'a', long, conflicts_with = "list")]
    all: bool,

    /// Entry counts instead of sizes in the lines (du --inodes): each
    /// directory with everything below it; a hard-linked file once.
    #[arg(long, conflicts_with = "list")]
    inodes: bool,

    /// Leave out the lines whose size (or count, with --inodes) is below
    /// SIZE, or above -SIZE when negative (du -t): 1M, 1MB (10^6),
    /// 1MiB, K M G T P E Z Y R Q. Every directory without -d and --top.
    #[arg(short = 't', long, value_name = "SIZE", allow_hyphen_values = true,
          conflicts_with_all = ["list", "tree"], value_parser = traverse::parse_threshold)]
    threshold: Option<i64>,

    /// A last line with the grand total of all PATHs ("SIZE<TAB>total",
    /// du -c). Every directory without -d and --top.
    #[arg(short = 'c', long, conflicts_with = "list")]
    total: bool,

    /// A picture of the largest subtrees: an indented tree, each with its
    /// share of its parent as a bar and a percentage, fitted to the
    /// terminal (--top N lines at most, -d N levels deep).
    #[arg(long, conflicts_with_all = ["list", "json", "export"])]
    tree: bool,

    /// With --tree: the width of the picture in columns (default:
    /// $COLUMNS, else the terminal's, else 80).
    #[arg(long, value_name = "N", requires = "tree",
          value_parser = clap::value_parser!(u16).range(20..))]
    width: Option<u16>,

    /// Print the completion script for SHELL (bash, zsh, fish) and exit:
    /// `traverse --completions bash > /etc/bash_completion.d/traverse`.
    #[arg(long, value_name = "SHELL", exclusive = true)]
    completions: Option<clap_complete::Shell>,

    /// Print the man page (roff) and exit: `traverse --man | man -l -`.
    #[arg(long, exclusive = true)]
    man: bool,

    /// Apparent sizes (st_size) instead of disk usage (du -A,
    /// --apparent-size): of regular files and symlinks only, as du counts
    /// them since coreutils 9.2.
    #[arg(short = 'A', long, overrides_with = "disk_usage")]
    apparent_size: bool,

    /// Disk usage (st_blocks * 512), the default: undoes --apparent-size.
    #[arg(long, overrides_with = "apparent_size")]
    disk_usage: bool,

    /// Leave out entries whose path matches the shell pattern PATTERN (*,
    /// ?, [...]), as du matches it: the whole path, or its tail after any
    /// `/` (`x`, `a/b`, `*.o`); neither counted nor descended into.
    /// Repeat for several patterns.
    #[arg(long, value_name = "PATTERN")]
    exclude: Vec<String>,

    /// Write the whole tree to FILE ("-": stdout, instead of the totals)
    /// in ncdu's export format, to browse with `ncdu -f FILE` or
    /// `gdu -f FILE`. One PATH only. Memory grows with the tree (about
    /// 140 MB per million entries).
    #[arg(long, value_name = "FILE", conflicts_with = "list")]
    export: Option<PathBuf>,

    /// Browse PATH in the terminal: its directories show as soon as their
    /// totals are final, files too once the scan ends; arrows or j/k move,
    /// Enter goes in, Backspace goes up, s/n/c sort by size, name or
    /// count, d deletes (after y), q quits. One PATH only. Memory as
    /// --export's.
    #[arg(short = 'i', long,
          conflicts_with_all = ["list", "json", "export", "max_depth", "top"])]
    interactive: bool,

    /// Browse a saved scan in FILE (ncdu's export format, as --export,
    /// ncdu -o and gdu -o write it; "-": stdin) instead of scanning, as
    /// ncdu -f does; deleting is disabled there.
    #[arg(short = 'f', long = "file", value_name = "FILE",
          conflicts_with_all = ["paths", "list", "json", "export", "max_depth", "top", "tree"])]
    file: Option<PathBuf>,

    /// With --interactive: quit once the screen after the scan is drawn
    /// (for measurements).
    #[arg(long, hide = true, requires = "interactive")]
    exit_when_scanned: bool,

    /// Count the size of a hard-linked file for every link (du -l).
    #[arg(short = 'l', long)]
    count_links: bool,

    #[command(flatten)]
    du: DuArgs,

    /// Skip entries on other filesystems than PATH's (du -x).
    #[arg(short = 'x', long)]
    one_file_system: bool,

    /// How to read the tree: auto, uring or threads. tokio and std are
    /// reference engines for benchmarks, only in builds with the cargo
    /// feature reference-engines.
    #[arg(long, default_value = "auto", value_parser = parse_engine)]
    engine: Engine,

    /// Worker threads (threads, uring: a ring each; tokio).
    #[arg(short = 'j', long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    jobs: Option<u32>,

    /// Stat entries in directory order even in large directories (for
    /// measurements; by default directories of more than 10 000 entries are
    /// stat'ed in inode order).
    #[arg(long, hide = true)]
    no_inode_order: bool,

    /// Print help (-h is --human-readable, as in du).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

fn parse_engine(s: &str) -> Result<Engine, ParseEngineError> {
    s.parse()
}

/// A `-d` N: du refuses a negative one in its own words.
fn parse_depth(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| "invalid maximum depth".to_owned())
}

/// What to print instead of walking (`--completions`, `--man`).
#[derive(Clone, Copy, Debug)]
pub enum Generate {
    Completions(clap_complete::Shell),
    Man,
}

/// What to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Human,
    Json,
    /// Paths, each ended by this byte.
    List(u8),
}

/// Per-directory lines and the export.
#[derive(Clone, Debug, Default)]
pub struct Breakdown {
    /// `-d N`, N > 0 (or any N with `-a`, `--inodes`, `-t`, `-c`).
    pub max_depth: Option<usize>,
    pub top: Option<usize>,
    pub human: bool,
    pub disk_usage: bool,
    /// `-a`: files in the lines too.
    pub all: bool,
    /// `--inodes`: entry counts instead of sizes.
    pub inodes: bool,
    /// `-t`: positive, the least size shown; negative, the most.
    pub threshold: Option<i64>,
    /// `--tree`: the picture instead of lines.
    pub tree: Option<crate::tree::Fit>,
    /// `--export`: `None` for stdout.
    pub export: Option<Option<PathBuf>>,
}

/// The program's settings.
#[derive(Debug)]
pub struct Config {
    pub paths: Vec<PathBuf>,
    pub output: Output,
    pub walk: WalkBuilder,
    /// `None`: the totals only.
    pub breakdown: Option<Breakdown>,
    /// `-c`: the grand total at the end.
    pub total: bool,
    /// `--completions`, `--man`: print this and exit.
    pub generate: Option<Generate>,
    /// `--interactive`: the browser instead of any output.
    pub interactive: Option<crate::browse::Options>,
    /// du's output instead of traverse's.
    pub du: Option<Du>,
}

/// A command line that cannot run: the message, and whether to say it as
/// du does (`du: MESSAGE`, a line pointing to --help, status 1) or as
/// traverse (status 2).
#[derive(Debug)]
pub struct Usage {
    pub message: String,
    pub as_du: bool,
}

impl From<String> for Usage {
    fn from(message: String) -> Usage {
        Usage {
            message,
            as_du: false,
        }
    }
}

impl Opts {
    /// Builds the [`Config`] from the options and `matches` (their order
    /// on the command line), with du's output when `as_du` (run as du) or
    /// a du option asks for it: an error for a bad pattern, an export of
    /// several PATHs, an export to stdout with other output asked for, or
    /// du options that du refuses together. (clap has already refused
    /// other bad values.)
    pub fn into_config(mut self, matches: &ArgMatches, as_du: bool) -> Result<Config, Usage> {
        let du_output = self.du_output(as_du);
        let du = if du_output {
            Some(self.du_settings(matches, as_du)?)
        } else {
            None
        };
        if self.paths.is_empty() {
            self.paths.push(PathBuf::from("."));
        }
        let generate = if let Some(shell) = self.completions {
            Some(Generate::Completions(shell))
        } else {
            self.man.then_some(Generate::Man)
        };
        let output = if self.list {
            Output::List(if self.null { b'\0' } else { b'\n' })
        } else if self.json {
            Output::Json
        } else {
            Output::Human
        };
        let mut walk = WalkBuilder::new()
            .engine(self.engine)
            .count_links(self.count_links)
            .one_file_system(self.one_file_system)
            .list(self.list)
            // The browser's mtime column and sort.
            .modification_times(self.interactive)
            // Every inode once per invocation, as du counts it.
            .count_once(self.paths.len() > 1);
        if let Some(jobs) = self.jobs {
            walk = walk.jobs(jobs as usize);
        }
        if self.no_inode_order {
            walk = walk.inode_order(None);
        }
        let exclude = match &du {
            Some(du) => du.exclude.clone(),
            None => Exclude::new(&self.exclude),
        };
        if let Some(exclude) = exclude {
            walk = walk.filter_entry(move |e| !exclude.matches(e.path().as_os_str().as_bytes()));
        }
        if let Some(du) = &du {
            walk = walk
                .follow_links(du.deref == Deref::Always)
                .follow_root_links(du.deref == Deref::Args)
                .latest_time(du.times.as_ref().map(|t| t.field))
                // With -l, du counts a PATH again, and all below it.
                .count_once((du.paths.len() > 1 || du.files0_from.is_some()) && !du.count_links);
        }
        let apparent = self.apparent_size || self.du.bytes();
        if self.top.is_some() && self.max_depth.is_some() && !self.tree {
            // Which directories would the lines be?
            return Err("--top and -d go together only with --tree"
                .to_owned()
                .into());
        }
        if self.export.is_some() && self.paths.len() > 1 {
            return Err("--export takes one PATH (the export is one tree)"
                .to_owned()
                .into());
        }
        if self.export.as_deref().is_some_and(|f| f.as_os_str() == "-") {
            // The export is then stdout's only content: lines beside it
            // would make it unreadable, and leaving them out silently would
            // hide that they were asked for.
            let conflict = [
                (self.json, "--json"),
                (self.max_depth.is_some(), "--max-depth"),
                (self.top.is_some(), "--top"),
            ];
            if let Some((_, option)) = conflict.iter().find(|(given, _)| *given) {
                return Err(format!(
                    "--export - (the export on stdout) cannot be used with {option}; \
                     export to a file to get both"
                )
                .into());
            }
        }
        // du's flags ask for du's lines: every directory unless -d says
        // how deep (-d 0 then being the root's line, as in du).
        let du_lines = self.all || self.inodes || self.threshold.is_some() || self.total;
        let max_depth = match self.max_depth {
            Some(d) if d > 0 || du_lines => Some(d),
            None if du_lines && self.top.is_none() && !self.tree => Some(usize::MAX),
            _ => None,
        };
        if self.interactive && self.paths.len() > 1 {
            return Err("--interactive takes one PATH (the browser shows one tree)"
                .to_owned()
                .into());
        }
        // The browser shows disk usage unless apparent sizes are asked for.
        let interactive =
            (self.interactive || self.file.is_some()).then_some(crate::browse::Options {
                disk_usage: !self.apparent_size,
                exit_when_scanned: self.exit_when_scanned,
                import: self.file.is_some(),
            });
        let paths = match self.file {
            Some(file) => vec![file],
            None => self.paths,
        };
        let breakdown = Breakdown {
            max_depth: max_depth.filter(|_| !self.tree),
            top: self.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            human: self.human_readable,
            disk_usage: !apparent,
            all: self.all,
            inodes: self.inodes,
            threshold: self.threshold,
            tree: self
                .tree
                .then(|| crate::tree::Fit::new(self.width, self.max_depth, self.top)),
            export: self
                .export
                .map(|file| (file.as_os_str() != "-").then_some(file)),
        };
        let wanted = breakdown.max_depth.is_some()
            || breakdown.top.is_some()
            || breakdown.export.is_some()
            || breakdown.tree.is_some();
        Ok(Config {
            paths,
            output,
            walk,
            breakdown: wanted.then_some(breakdown),
            total: self.total,
            generate,
            interactive,
            du,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn options_are_consistent() {
        Opts::command().debug_assert();
    }

    #[test]
    fn repeated_options_are_accepted() {
        let opts = Opts::try_parse_from([
            "traverse", "-x", "-x", "--json", "--json", "-j", "2", "-j", "3", "a", "b",
        ])
        .unwrap();
        assert!(opts.one_file_system && opts.json);
        assert_eq!(opts.jobs, Some(3));
        assert_eq!(opts.paths, [PathBuf::from("a"), PathBuf::from("b")]);
        assert!(Opts::try_parse_from(["traverse", "--json", "--list", "a"]).is_err());
    }
}
