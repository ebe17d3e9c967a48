//! Command-line options, and their translation into a [`Config`] so the
//! rest of the program never sees clap.

use std::path::PathBuf;

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::Parser;
use traverse::{Engine, ParseEngineError, WalkBuilder};

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
/// --disk-usage (du -B1). -a, --inodes, -t and -c as in du; --tree draws
/// the largest subtrees with their shares.
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
                  traverse --export t.json /srv && ncdu -f t.json   browse it in ncdu\n  \
                  traverse --tree ~                       the largest subtrees, with share bars\n  \
                  traverse -a -t 100M -h /srv             files and directories of 100M and more"
)]
pub struct Opts {
    /// Directories to count. A PATH that is not a directory (a file, a
    /// symlink, which is not followed: write `link/` to walk its target) is
    /// counted as its one entry, as du counts it.
    // Parsed as OS strings: clap's path parser refuses an empty PATH as a
    // missing value, where the real problem is that no such file exists
    // (reported by the walk, as du reports it).
    #[arg(value_name = "PATH", required_unless_present_any = ["completions", "man", "file"],
          value_parser = OsStringValueParser::new().map(PathBuf::from))]
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
    /// PATH (PATH included), largest first, by the size shown. With
    /// --tree: N lines at most.
    #[arg(long, value_name = "N", conflicts_with = "list",
          value_parser = clap::value_parser!(u64).range(1..))]
    top: Option<u64>,

    /// Sizes in the lines of -d and --top in powers of 1024, as du -h
    /// (4.0K, 1.5M, 12G).
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
          conflicts_with_all = ["list", "tree"], value_parser = parse_threshold)]
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

fn parse_engine(s: &str) -> Result<Engine, ParseEngineError> {
    s.parse()
}

/// A `-t` SIZE as du reads it: an integer (decimal, `0x` hex or `0`
/// octal) with an optional sign, then an optional unit: k K m M G T P E Z
/// Y R Q, powers of 1024, or of 1000 when followed by `B` or `D` (`1MB`),
/// of 1024 again with `iB` (`1MiB`). `-0` means nothing and is refused.
fn parse_threshold(s: &str) -> Result<i64, String> {
    let (negative, rest) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) =
        if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            (16, hex)
        } else if rest.len() > 1 && rest.starts_with('0') {
            (8, &rest[1..])
        } else {
            (10, rest)
        };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return Err("not a number".to_owned());
    }
    let too_large = || "too large".to_owned();
    let mut value = u128::from_str_radix(&digits[..end], radix).map_err(|_| too_large())?;
    let unit = &digits[end..];
    if let Some(letter) = unit.chars().next() {
        let power: u32 = match letter {
            'k' | 'K' => 1,
            'm' | 'M' => 2,
            'G' => 3,
            'T' => 4,
            'P' => 5,
            'E' => 6,
            'Z' => 7,
            'Y' => 8,
            'R' => 9,
            'Q' => 10,
            _ => return Err("invalid suffix".to_owned()),
        };
        let base: u128 = match &unit[1..] {
            "" | "iB" => 1024,
            "B" | "D" => 1000,
            _ => return Err("invalid suffix".to_owned()),
        };
        value = base
            .checked_pow(power)
            .and_then(|scale| value.checked_mul(scale))
            .ok_or_else(too_large)?;
    }
    let value = i64::try_from(value).map_err(|_| too_large())?;
    if negative && value == 0 {
        return Err("-0 means nothing".to_owned());
    }
    Ok(if negative { -value } else { value })
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
}

impl Opts {
    /// Builds the [`Config`]: an error for a bad pattern, an export of
    /// several PATHs, or an export to stdout with other output asked for.
    /// (clap has already refused other bad values with status 2.)
    pub fn into_config(self) -> Result<Config, String> {
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
        for pattern in &self.exclude {
            walk = walk
                .exclude(pattern)
                .map_err(|e| format!("--exclude: {e}"))?;
        }
        if self.top.is_some() && self.max_depth.is_some() && !self.tree {
            // Which directories would the lines be?
            return Err("--top and -d go together only with --tree".to_owned());
        }
        if self.export.is_some() && self.paths.len() > 1 {
            return Err("--export takes one PATH (the export is one tree)".to_owned());
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
                ));
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
            return Err("--interactive takes one PATH (the browser shows one tree)".to_owned());
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
            disk_usage: self.disk_usage,
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
    fn thresholds_are_read_as_du_reads_them() {
        let ok = [
            ("0", 0),
            ("1", 1),
            ("+7", 7),
            ("-1", -1),
            ("1k", 1024),
            ("1K", 1024),
            ("1KiB", 1024),
            ("1KB", 1000),
            ("2m", 2 << 20),
            ("1MD", 1_000_000),
            ("1G", 1 << 30),
            ("-3T", -3 << 40),
            ("0x10", 16),
            ("010", 8),
            ("7E", 7 << 60),
        ];
        for (arg, want) in ok {
            assert_eq!(parse_threshold(arg), Ok(want), "{arg}");
        }
        for bad in [
            "", "-", "-0", "1b", "1e", "1g", "1.5M", "1Mx", "1iB", "8E", "1Z", "x",
        ] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
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
