//! Command-line options, and their translation into a [`Config`] so the
//! rest of the program never sees clap.

use std::path::PathBuf;

use clap::Parser;
use traverse::{Engine, WalkBuilder};

/// Count files, directories and bytes below each PATH, exactly as find and
/// du do, fast.
///
/// The first line for each PATH reads "N files, M bytes", then the path;
/// the second gives directories (PATH included), symlinks, other entries,
/// disk usage and errors. Sizes are apparent sizes as `du -sb` counts them
/// (a hard-linked file once); disk bytes as `du -sB1`. Symlinks are never
/// followed. Errors go to stderr and the walk goes on (exit status 1);
/// Ctrl-C prints the totals so far, marked partial (exit status 130).
///
/// With -d N or --top N, one line per directory instead, "SIZE<TAB>PATH"
/// as du prints them, from the same parallel walk: SIZE is the apparent
/// size of the directory's whole subtree (du -b), or its disk usage with
/// --disk-usage (du -B1).
#[derive(Debug, Parser)]
// A repeated option is accepted, the last value winning (`-x -x`, as du
// takes it), rather than refused. `-h` is du's --human-readable: help is
// --help only.
#[command(
    name = "traverse",
    version,
    args_override_self = true,
    disable_help_flag = true,
    after_help = "Examples:\n  \
                  traverse ~/src                          counts and sizes of the tree\n  \
                  traverse -d 1 -h ~                      a line per directory below ~, sizes as 1.5M\n  \
                  traverse --top 20 --disk-usage /var     the 20 directories using most disk\n  \
                  traverse -i ~/Downloads                 browse, sort, delete\n  \
                  traverse --export t.json /srv && ncdu -f t.json   browse it in ncdu"
)]
pub struct Opts {
    /// Directories to count. A PATH that is not a directory (a file, a
    /// symlink, which is not followed: write `link/` to walk its target) is
    /// reported as an error (exit status 1) and the other PATHs are walked.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,

    /// One JSON object per PATH, and one for the total (with "path": null)
    /// when there are several.
    #[arg(long, conflicts_with = "list")]
    json: bool,

    /// Print every path below PATH (PATH included), as `find PATH` does,
    /// instead of totals.
    #[arg(long)]
    list: bool,

    /// With --list: end each path with NUL instead of newline.
    #[arg(short = '0', long = "null", requires = "list")]
    null: bool,

    /// A line per directory down to depth N below each PATH (PATH is depth
    /// 0), with its whole subtree: children before their parent, siblings
    /// by name. With --json, one object per directory with a "depth" key.
    /// 0: the totals only.
    #[arg(short = 'd', long, value_name = "N", conflicts_with = "list")]
    max_depth: Option<usize>,

    /// The N directories with the largest subtrees, anywhere below each
    /// PATH (PATH included), largest first, by the size shown.
    #[arg(long, value_name = "N", conflicts_with_all = ["list", "max_depth"],
          value_parser = clap::value_parser!(u64).range(1..))]
    top: Option<u64>,

    /// Sizes in the lines of -d and --top in powers of 1024, as du -h
    /// (4.0K, 1.5M, 12G).
    #[arg(short = 'h', long)]
    human_readable: bool,

    /// The lines of -d and --top show apparent sizes (st_size, du -b,
    /// du --apparent-size): traverse's default.
    #[arg(long, overrides_with = "disk_usage")]
    apparent_size: bool,

    /// The lines of -d and --top show disk usage (st_blocks * 512, du's
    /// own default) instead of apparent sizes.
    #[arg(long, overrides_with = "apparent_size")]
    disk_usage: bool,

    /// Leave out entries whose name matches the shell pattern PATTERN
    /// (*, ?, [...]; du --exclude): neither counted nor descended into.
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

    /// With --interactive: quit once the screen after the scan is drawn
    /// (for measurements).
    #[arg(long, hide = true, requires = "interactive")]
    exit_when_scanned: bool,

    /// Count the size of a hard-linked file for every link (du -l).
    #[arg(long)]
    count_links: bool,

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

fn parse_engine(s: &str) -> Result<Engine, String> {
    s.parse()
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
    /// `-d N`, N > 0.
    pub max_depth: Option<usize>,
    pub top: Option<usize>,
    pub human: bool,
    pub disk_usage: bool,
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
    /// `--interactive`: the browser instead of any output.
    pub interactive: Option<crate::browse::Options>,
}

impl Opts {
    /// Builds the [`Config`]: an error for a bad pattern or an export of
    /// several PATHs. (clap has already refused other bad values, an empty
    /// PATH included, with status 2.)
    pub fn into_config(self) -> Result<Config, String> {
        let output = if self.list {
            Output::List(if self.null { b'\0' } else { b'\n' })
        } else if self.json {
            Output::Json
        } else {
            Output::Human
        };
        let mut walk = WalkBuilder::new();
        walk.engine(self.engine)
            .count_links(self.count_links)
            .one_file_system(self.one_file_system)
            .list(self.list);
        if let Some(jobs) = self.jobs {
            walk.jobs(jobs as usize);
        }
        if self.no_inode_order {
            walk.inode_order(None);
        }
        for pattern in &self.exclude {
            walk.exclude(pattern)
                .map_err(|e| format!("--exclude: {e}"))?;
        }
        if self.export.is_some() && self.paths.len() > 1 {
            return Err("--export takes one PATH (the export is one tree)".to_owned());
        }
        if self.interactive && self.paths.len() > 1 {
            return Err("--interactive takes one PATH (the browser shows one tree)".to_owned());
        }
        let interactive = self.interactive.then_some(crate::browse::Options {
            disk_usage: self.disk_usage,
            exit_when_scanned: self.exit_when_scanned,
        });
        let breakdown = Breakdown {
            max_depth: self.max_depth.filter(|&d| d > 0),
            top: self.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            human: self.human_readable,
            disk_usage: self.disk_usage,
            export: self
                .export
                .map(|file| (file.as_os_str() != "-").then_some(file)),
        };
        let wanted =
            breakdown.max_depth.is_some() || breakdown.top.is_some() || breakdown.export.is_some();
        Ok(Config {
            paths: self.paths,
            output,
            walk,
            breakdown: wanted.then_some(breakdown),
            interactive,
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
