//! Hard links across ranks: each hard-linked inode (`st_nlink > 1`, not a
//! directory) belongs to the rank its `(st_dev, st_ino)` hashes to. After
//! a root's walk, every rank sends the names it met to their owners in one
//! all-to-all exchange; each owner counts an inode's size once, under the
//! name whose path sorts first (as `traverse` attributes it), and
//! remembers the inodes it counted for the next roots (as `du A B` does).

use std::hash::Hasher;

use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use traverse::Totals;

use crate::walker::{ancestor, count_kind, FileLine, Keep, Kind, LinkName, Share};
use crate::wire::{Reader, Writer};

/// The rank that owns an inode.
pub fn owner(dev: u64, ino: u64, ranks: usize) -> usize {
    let mut h = FxHasher::default();
    h.write_u64(dev);
    h.write_u64(ino);
    (h.finish() % ranks as u64) as usize
}

/// The inodes this rank owns that were counted under an earlier root.
#[derive(Default)]
pub struct Owned(FxHashSet<(u64, u64)>);

/// Sends the names in `share.links` to their owners and counts the inodes
/// this rank owns into `share`: their sizes once in the totals, and with a
/// breakdown, in the directory of the counted name, the other names as
/// entries counted elsewhere (`--inodes`), and the counted name's line (`-a`).
pub fn exchange(world: &SimpleCommunicator, share: &mut Share, owned: &mut Owned, keep: Keep) {
    let ranks = world.size() as usize;
    let mut out: Vec<Writer> = (0..ranks).map(|_| Writer::default()).collect();
    for l in share.links.drain(..) {
        let w = &mut out[owner(l.dev, l.ino, ranks)];
        w.u64(l.dev);
        w.u64(l.ino);
        w.u64(l.bytes);
        w.u64(l.disk);
        w.bytes(&l.path);
        w.u32(l.depth);
        w.u8(l.kind);
    }
    let received = all_to_all(world, out);
    let mut names: FxHashMap<(u64, u64), Vec<LinkName>> = FxHashMap::default();
    let mut r = Reader(&received);
    while !r.is_empty() {
        let (dev, ino, bytes, disk) = (r.u64(), r.u64(), r.u64(), r.u64());
        let path = r.bytes().to_vec();
        let (depth, kind) = (r.u32(), r.u8());
        names.entry((dev, ino)).or_default().push(LinkName {
            dev,
            ino,
            bytes,
            disk,
            path,
            depth,
            kind,
        });
    }
    for (key, mut names) in names {
        names.sort_by(|a, b| a.path.cmp(&b.path));
        let counted_before = !owned.0.insert(key);
        for (i, name) in names.iter().enumerate() {
            let counted = i == 0 && !counted_before;
            let mut sizes = Totals::default();
            if counted {
                sizes.bytes = u128::from(name.bytes);
                sizes.disk_bytes = u128::from(name.disk);
                share.totals += sizes;
            }
            let Some(max) = keep.dirs_to else { continue };
            // The name's directory is one level up, at depth - 1.
            let dir = &name.path[..name.path.iter().rposition(|&b| b == b'/').unwrap_or(0)];
            let (key, depth) = ancestor(dir, name.depth as usize - 1, max);
            let rec = share.dirs.entry(key.to_vec()).or_default();
            rec.depth = depth as u32;
            if counted {
                rec.totals += sizes;
                if keep.files_to.is_some_and(|max| name.depth as usize <= max) {
                    count_kind(&mut sizes, Kind::from_u8(name.kind));
                    share.files.push(FileLine {
                        path: name.path.clone(),
                        depth: name.depth,
                        totals: sizes,
                    });
                }
            } else {
                rec.more_names += 1;
            }
        }
    }
}

/// One all-to-all exchange of byte strings: `out[r]` goes to rank `r`;
/// returns what every rank sent to this one, concatenated.
pub fn all_to_all(world: &SimpleCommunicator, out: Vec<Writer>) -> Vec<u8> {
    let counts: Vec<Count> = out.iter().map(|w| count(w.0.len())).collect();
    let displs = offsets(&counts);
    // Never an empty Vec (whose address, 1, is Open MPI's MPI_IN_PLACE).
    let mut send: Vec<u8> =
        Vec::with_capacity(1 + counts.iter().map(|&c| c as usize).sum::<usize>());
    for w in out {
        send.extend_from_slice(&w.0);
    }
    let mut recv_counts = vec![0 as Count; counts.len()];
    world.all_to_all_into(&counts[..], &mut recv_counts[..]);
    let recv_displs = offsets(&recv_counts);
    let total = recv_counts.iter().map(|&c| c as usize).sum();
    let mut recv = Vec::with_capacity(total + 1);
    recv.resize(total, 0u8);
    {
        let send = Partition::new(&send[..], &counts[..], &displs[..]);
        let mut into = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
        world.all_to_all_varcount_into(&send, &mut into);
    }
    recv
}

/// A length as MPI counts it.
pub fn count(n: usize) -> Count {
    Count::try_from(n).expect("an exchange of less than 2 GiB per rank")
}

/// Where each part starts, the parts laid end to end.
pub fn offsets(counts: &[Count]) -> Vec<Count> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let start = *at;
            *at += c;
            Some(start)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_lay_parts_end_to_end() {
        assert_eq!(offsets(&[3, 0, 2]), [0, 3, 3]);
    }

    #[test]
    fn every_inode_has_one_owner_in_range() {
        for ino in 0..100 {
            assert!(owner(1, ino, 3) < 3);
            assert_eq!(owner(1, ino, 3), owner(1, ino, 3));
        }
    }
}
