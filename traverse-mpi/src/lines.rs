//! Rank 0's text for one root, from what every rank counted: the
//! per-directory lines of `traverse` (`--top N`, `--json` with `-d N`, `-a`,
//! `--inodes`, `-c`), or du's lines, which `traverse` prints for any of
//! du's options without `--json` and `--top`; in the same format and order
//! (its own printing functions, shared with the `traverse` binary).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use traverse::Totals;

use crate::line::{self, Line};
use crate::order::{du_order, Chain};
use crate::output;
use crate::size::Units;
use crate::walker::Share;

/// The per-directory lines asked for.
#[derive(Clone, Debug, Default)]
pub struct Breakdown {
    pub max_depth: Option<usize>,
    pub top: Option<usize>,
    pub human: bool,
    pub disk_usage: bool,
    pub inodes: bool,
    /// `-t`: positive, the least size shown; negative, the most.
    pub threshold: Option<i64>,
    /// du's lines, in these units; `None`: traverse's own.
    pub du: Option<Units>,
}

impl Breakdown {
    /// The size a line shows: bytes, disk bytes or entries. du's apparent
    /// size leaves out directories' own (coreutils 9.2 and later).
    fn size(&self, l: &Line) -> u128 {
        if self.inodes {
            u128::from(l.inodes)
        } else if self.disk_usage {
            l.totals.disk_bytes
        } else if self.du.is_some() {
            l.totals.bytes - l.totals.dir_bytes
        } else {
            l.totals.bytes
        }
    }

    /// Whether a line of this size passes `-t`.
    fn passes(&self, size: u128) -> bool {
        match self.threshold {
            None => true,
            Some(t) if t < 0 => size <= u128::from(t.unsigned_abs()),
            Some(t) => size >= u128::from(t.unsigned_abs()),
        }
    }

    /// The lines of one root, and the size of its own line (for `-c`).
    pub fn lines(&self, root: &Path, mut share: Share, json: bool) -> (Vec<u8>, u128) {
        sum_subtrees(&mut share);
        // Each line with its place in du's order (the walk's `ListingOrder`
        // cannot cross between ranks; their chains do).
        let mut all: Vec<(Chain, Line)> = share
            .dirs
            .into_iter()
            .map(|(path, rec)| {
                let line = Line {
                    path: path_of(path),
                    depth: rec.depth as usize,
                    totals: rec.totals,
                    inodes: entries(&rec.totals) - rec.more_names,
                    order: None,
                };
                (rec.chain, line)
            })
            .collect();
        all.extend(share.files.into_iter().map(|f| {
            let line = Line {
                path: path_of(f.path),
                depth: f.depth as usize,
                totals: f.totals,
                inodes: 1,
                order: None,
            };
            (f.chain, line)
        }));
        let root_line = all.iter().position(|(_, l)| l.depth == 0).map_or_else(
            || {
                let line = Line {
                    path: root.to_owned(),
                    depth: 0,
                    totals: share.totals,
                    inodes: entries(&share.totals),
                    order: None,
                };
                (Chain::new(), line)
            },
            |at| all.swap_remove(at),
        );
        let root_size = self.size(&root_line.1);
        all.push(root_line);
        all.retain(|(_, l)| self.passes(self.size(l)));
        let lines: Vec<Line> = match (self.max_depth, self.top) {
            (_, Some(n)) => {
                let mut all: Vec<Line> = all.into_iter().map(|(_, l)| l).collect();
                all.sort_by(|a, b| {
                    self.size(b).cmp(&self.size(a)).then_with(|| {
                        a.path
                            .as_os_str()
                            .as_bytes()
                            .cmp(b.path.as_os_str().as_bytes())
                    })
                });
                all.truncate(n);
                all
            }
            (max, None) => {
                let max = max.unwrap_or(usize::MAX);
                all.retain(|(_, l)| l.depth <= max);
                all.sort_by(|(a, _), (b, _)| du_order(a, b));
                all.into_iter().map(|(_, l)| l).collect()
            }
        };
        let text = match &self.du {
            Some(units) => lines.iter().fold(Vec::new(), |mut text, l| {
                du_line(&mut text, units, self.size(l), &l.path);
                text
            }),
            None => line::text(lines, json, self.human, |l| self.size(l)).into_bytes(),
        };
        (text, root_size)
    }

    /// The line of `-c`.
    pub fn total_line(&self, size: u128) -> Vec<u8> {
        match &self.du {
            Some(units) => {
                let mut text = Vec::new();
                du_line(&mut text, units, size, Path::new("total"));
                text
            }
            None => output::human_dir(Path::new("total"), size, self.human).into_bytes(),
        }
    }
}

/// du's `SIZE<TAB>PATH` line: the path as it is, byte for byte, as du
/// writes it when its output is not a terminal (ranks write to mpirun,
/// never to one).
fn du_line(text: &mut Vec<u8>, units: &Units, size: u128, path: &Path) {
    text.extend_from_slice(units.format(size).as_bytes());
    text.push(b'\t');
    text.extend_from_slice(path.as_os_str().as_bytes());
    text.push(b'\n');
}

fn path_of(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(&bytes))
}

/// Entries as `du --inodes` counts them, before hard links.
fn entries(t: &Totals) -> u64 {
    t.files + t.dirs + t.symlinks + t.other
}

/// Each directory's counts become its subtree's: the deepest first, each
/// added to its parent's.
fn sum_subtrees(share: &mut Share) {
    let mut order: Vec<(u32, Vec<u8>)> = share
        .dirs
        .iter()
        .filter(|(_, rec)| rec.depth > 0)
        .map(|(path, rec)| (rec.depth, path.clone()))
        .collect();
    order.sort_unstable_by_key(|(depth, _)| std::cmp::Reverse(*depth));
    for (depth, path) in order {
        let rec = share.dirs[&path].clone();
        let parent = &path[..path.iter().rposition(|&b| b == b'/').unwrap_or(0)];
        let up = share.dirs.entry(parent.to_vec()).or_default();
        up.depth = depth - 1;
        up.totals += rec.totals;
        up.more_names += rec.more_names;
        up.note_place(&rec.chain[..rec.chain.len().saturating_sub(1)]);
    }
}
