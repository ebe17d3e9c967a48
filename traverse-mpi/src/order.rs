//! GNU du's order across ranks. `traverse` orders its lines by the walk's
//! own nodes (`ListingOrder`), which cannot cross between processes; a
//! rank gives each entry a [`Chain`] instead, one key per level from the
//! library's `ListingRule`, and the chains go with the entries, the tasks
//! and the hard-linked names.

use std::cmp::Ordering;
use std::os::unix::ffi::OsStrExt;

use rustc_hash::FxHashMap;
use traverse::ListingRule;

use crate::collect::Listed;
use crate::task::Task;
use crate::walker::parent;

/// An entry's place in GNU du's order: one key per level below the root,
/// each its [`ListingRule::key`] among its siblings (the root's is empty).
/// The ranks send these, so that rank 0 prints the lines in du's order
/// and each inode's owner counts it under the name du meets first.
pub type Chain = Vec<u128>;

/// du's order of two chains: level by level, a directory after everything
/// below it.
pub fn du_order(a: &[u128], b: &[u128]) -> Ordering {
    match a.iter().zip(b).find(|(x, y)| x != y) {
        Some((x, y)) => x.cmp(y),
        None => b.len().cmp(&a.len()),
    }
}

/// Each listed entry's place in du's order: the task's chain, then one key
/// per level below it. The task's entries go by `rule`; in a deep task,
/// each directory below goes by its own, from the entries listed in it.
pub fn chains(task: &Task, rule: ListingRule, listed: &[Listed]) -> Vec<Chain> {
    let mut counts: FxHashMap<&[u8], u64> = FxHashMap::default();
    for e in listed.iter().filter(|e| e.depth > 1) {
        *counts.entry(parent(&e.path)).or_default() += 1;
    }
    let rules: FxHashMap<&[u8], ListingRule> = counts
        .into_iter()
        .map(|(dir, n)| {
            let path = std::path::Path::new(std::ffi::OsStr::from_bytes(dir));
            (dir, ListingRule::of_path(n, path).unwrap_or(rule))
        })
        .collect();
    let mut by_depth: Vec<usize> = (0..listed.len()).collect();
    by_depth.sort_by_key(|&i| listed[i].depth);
    let mut dirs: FxHashMap<&[u8], usize> = FxHashMap::default();
    let mut out = vec![Chain::new(); listed.len()];
    for i in by_depth {
        let e = &listed[i];
        let (mut chain, rule) = match e.depth {
            0 | 1 => (task.chain.clone(), rule),
            _ => {
                let up = parent(&e.path);
                let base = dirs
                    .get(up)
                    .map_or_else(|| task.chain.clone(), |&d| out[d].clone());
                (base, rules.get(up).copied().unwrap_or(rule))
            }
        };
        if e.depth > 0 {
            chain.push(e.place.map_or(0, |p| rule.key(p)));
        }
        if e.is_dir {
            dirs.insert(&e.path, i);
        }
        out[i] = chain;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_order_as_du_prints() {
        let mut chains: Vec<Chain> = vec![vec![], vec![2], vec![1, 9], vec![1], vec![1, 3, 0]];
        chains.sort_by(|a, b| du_order(a, b));
        let want: Vec<Chain> = vec![vec![1, 3, 0], vec![1, 9], vec![1], vec![2], vec![]];
        assert_eq!(chains, want);
    }
}
