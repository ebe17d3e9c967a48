//! Which output a command line asks for (du's or traverse's own), and
//! du's settings from traverse's options.

use std::path::PathBuf;

use clap::ArgMatches;

use super::{Opts, Usage};
use crate::du::{Du, Exclude};

impl Opts {
    /// Whether a du option was given: du's output then, unless one of
    /// traverse's own outputs was asked for too.
    pub(super) fn du_output(&self, as_du: bool) -> bool {
        let own_output = self.json
            || self.list
            || self.top.is_some()
            || self.tree
            || self.export.is_some()
            || self.interactive
            || self.completions.is_some()
            || self.man;
        let du_option = self.du.any()
            || self.max_depth.is_some()
            || self.all
            || self.total
            || self.threshold.is_some()
            || self.inodes
            || self.human_readable
            || self.count_links
            || self.one_file_system
            || self.null
            || self.apparent_size
            || !self.exclude.is_empty();
        !own_output && (as_du || du_option)
    }

    /// du's settings, or du's complaint about them.
    pub(super) fn du_settings(&self, matches: &ArgMatches, as_du: bool) -> Result<Du, Usage> {
        let name = if as_du { "du" } else { "traverse" };
        let refuse = |message: &str| Usage {
            message: message.to_owned(),
            as_du: true,
        };
        let mut max_depth = self.max_depth.unwrap_or(usize::MAX);
        if self.du.summarize() {
            if self.all {
                return Err(refuse("cannot both summarize and show all entries"));
            }
            match self.max_depth {
                Some(0) => {
                    eprintln!("{name}: warning: summarizing is the same as using --max-depth=0")
                }
                Some(n) => {
                    eprintln!("{name}: warning: summarizing conflicts with --max-depth={n}");
                    return Err(refuse(""));
                }
                None => {}
            }
            max_depth = 0;
        }
        let apparent = self.apparent_size || self.du.bytes();
        if self.inodes && apparent {
            eprintln!(
                "{name}: warning: options --apparent-size and -b are ineffective with --inodes"
            );
        }
        let times = self.du.times().map_err(|m| refuse(&m))?;
        if let (Some(_), Some(first)) = (self.du.files0_from(), self.paths.first()) {
            let first = crate::du::text::quote(first.as_os_str().as_encoded_bytes());
            return Err(refuse(&format!(
                "extra operand {first}\nfile operands cannot be combined with --files0-from"
            )));
        }
        let mut patterns = self.exclude.clone();
        patterns.extend(self.du.patterns_from_files().map_err(|m| refuse(&m))?);
        Ok(Du {
            name,
            paths: self.paths.clone(),
            files0_from: self.du.files0_from().map(PathBuf::from),
            max_depth,
            all: self.all,
            separate_dirs: self.du.separate_dirs(),
            inodes: self.inodes,
            apparent,
            total: self.total,
            null: self.null,
            units: self.du.units(matches),
            threshold: self.threshold,
            deref: self.du.deref(matches),
            count_links: self.count_links,
            exclude: Exclude::new(&patterns),
            times,
        })
    }
}
