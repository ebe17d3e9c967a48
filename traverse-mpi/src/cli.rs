//! traverse-mpi's options: `traverse`'s that make sense across ranks, with
//! the same names and meanings.

use std::path::PathBuf;

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::Parser;
use traverse::{Engine, ParseEngineError, WalkBuilder};

use crate::exclude::Exclude;
use crate::lines::Breakdown;
use crate::size::Units;
use crate::walker::Keep;

/// Count files, directories and bytes below each PATH with every rank of an
/// MPI job (`mpirun -n N traverse-mpi PATH`), printing what `traverse PATH`
/// prints, once, from rank 0. Every rank must see PATH at the same path.
///
/// As with traverse, any of du's options (-d, -a, -c, -t, -x, -h, -A,
/// --inodes, --exclude, --count-links) without --json or --top prints du's
/// lines ("SIZE<TAB>PATH", 1024-byte blocks unless -h) and messages.
#[derive(Debug, Parser)]
#[command(
    name = "traverse-mpi",
    version,
    args_override_self = true,
    disable_help_flag = true
)]
pub struct Opts {
    /// Directories to count.
    #[arg(value_name = "PATH", required = true,
          value_parser = OsStringValueParser::new().map(PathBuf::from))]
    paths: Vec<PathBuf>,

    /// One JSON object per PATH (and per directory with -d or --top).
    #[arg(long)]
    json: bool,

    /// A line per directory down to depth N below each PATH (du -d N).
    #[arg(short = 'd', long, value_name = "N")]
    max_depth: Option<usize>,

    /// The N largest directories anywhere below each PATH.
    #[arg(long, value_name = "N", conflicts_with = "max_depth",
          value_parser = clap::value_parser!(u64).range(1..))]
    top: Option<u64>,

    /// Sizes in powers of 1024 (du -h).
    #[arg(short = 'h', long)]
    human_readable: bool,

    /// Files too, not only directories (du -a).
    #[arg(short = 'a', long)]
    all: bool,

    /// Entry counts instead of sizes (du --inodes).
    #[arg(long)]
    inodes: bool,

    /// Leave out lines below SIZE, or above -SIZE when negative (du -t).
    #[arg(short = 't', long, value_name = "SIZE", allow_hyphen_values = true,
          value_parser = traverse::parse_threshold)]
    threshold: Option<i64>,

    /// A last line with the grand total (du -c).
    #[arg(short = 'c', long)]
    total: bool,

    /// Apparent sizes (st_size) instead of disk usage, as traverse
    /// --apparent-size: in du's lines, of regular files and symlinks only
    /// (as du counts them since coreutils 9.2).
    #[arg(short = 'A', long, overrides_with = "disk_usage")]
    apparent_size: bool,

    /// Disk usage in the lines (st_blocks * 512), the default, as
    /// traverse's: undoes --apparent-size.
    #[arg(long, overrides_with = "apparent_size")]
    disk_usage: bool,

    /// Leave out entries whose path matches PATTERN, whole or after any
    /// `/` (du --exclude: `x`, `a/b`, `*.o`).
    #[arg(long, value_name = "PATTERN")]
    exclude: Vec<String>,

    /// Count the size of a hard-linked file for every link (du -l).
    #[arg(long)]
    count_links: bool,

    /// Skip entries on other filesystems than PATH's (du -x).
    #[arg(short = 'x', long)]
    one_file_system: bool,

    /// How each rank reads its directories: auto, uring or threads.
    #[arg(long, default_value = "auto", value_parser = parse_engine)]
    engine: Engine,

    /// Worker threads per rank.
    #[arg(short = 'j', long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    jobs: Option<u32>,

    /// Directories each rank reads at once (each with -j threads): requests
    /// in flight, on a filesystem where each one waits for a server.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    readers: u32,

    /// Print help (-h is --human-readable, as in du).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

fn parse_engine(s: &str) -> Result<Engine, ParseEngineError> {
    s.parse()
}

/// The program's settings.
pub struct Config {
    pub paths: Vec<PathBuf>,
    pub json: bool,
    pub walk: WalkBuilder,
    pub keep: Keep,
    /// `None`: the summary lines only.
    pub breakdown: Option<Breakdown>,
    pub total: bool,
    /// du's lines and messages (a du option without --json or --top), as
    /// `traverse` prints them then.
    pub du: bool,
    /// `--exclude`, matched as du matches it: the whole path, or any tail
    /// of it after a `/`.
    pub exclude: Option<Exclude>,
    /// Reader threads per rank.
    pub readers: usize,
}

impl Opts {
    /// Settles the options as `traverse` does.
    pub fn into_config(self) -> Result<Config, String> {
        let mut walk = WalkBuilder::new()
            .engine(self.engine)
            .one_file_system(self.one_file_system);
        if let Some(jobs) = self.jobs {
            walk = walk.jobs(jobs as usize);
        }
        // Any of du's options without --json or --top asks for du's lines,
        // as `traverse` takes them: every directory unless -d says how deep.
        let du = !self.json
            && self.top.is_none()
            && (self.max_depth.is_some()
                || self.all
                || self.total
                || self.threshold.is_some()
                || self.inodes
                || self.human_readable
                || self.count_links
                || self.one_file_system
                || self.apparent_size
                || !self.exclude.is_empty());
        // With --json, du's flags ask for a line per directory too.
        let du_lines = self.all || self.inodes || self.threshold.is_some() || self.total;
        let max_depth = match self.max_depth {
            _ if du => Some(self.max_depth.unwrap_or(usize::MAX)),
            Some(d) if d > 0 || du_lines => Some(d),
            None if du_lines && self.top.is_none() => Some(usize::MAX),
            _ => None,
        };
        let top = self.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let units = du.then(|| match (self.human_readable, self.inodes) {
            (true, _) => Units::Human { base: 1024 },
            // Entries are counted one by one, whatever the block size.
            (false, true) => Units::Blocks {
                block: 1,
                suffix: String::new(),
            },
            (false, false) => Units::default(),
        });
        let breakdown = (max_depth.is_some() || top.is_some()).then_some(Breakdown {
            max_depth,
            top,
            human: self.human_readable,
            disk_usage: !self.apparent_size,
            inodes: self.inodes,
            threshold: self.threshold,
            du: units,
        });
        let keep = Keep {
            // --top ranks every directory; -d N needs them summed to depth N.
            dirs_to: breakdown
                .as_ref()
                .map(|b| b.max_depth.unwrap_or(usize::MAX)),
            files_to: (self.all && breakdown.is_some()).then(|| max_depth.unwrap_or(usize::MAX)),
            count_links: self.count_links,
            one_file_system: self.one_file_system,
        };
        Ok(Config {
            paths: self.paths,
            json: self.json,
            walk,
            keep,
            breakdown,
            total: self.total,
            du,
            exclude: Exclude::new(&self.exclude),
            readers: self.readers as usize,
        })
    }
}
