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
#[derive(Debug, Parser)]
// A repeated option is accepted, the last value winning (`-x -x`, as du
// takes it), rather than refused.
#[command(name = "traverse", version, args_override_self = true)]
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

/// The program's settings.
#[derive(Debug)]
pub struct Config {
    pub paths: Vec<PathBuf>,
    pub output: Output,
    pub walk: WalkBuilder,
}

impl Opts {
    /// Builds the [`Config`]. (clap has already refused bad values, an
    /// empty PATH included, with status 2.)
    pub fn into_config(self) -> Config {
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
        Config {
            paths: self.paths,
            output,
            walk,
        }
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
