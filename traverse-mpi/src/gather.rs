//! Everything the ranks counted of one root, gathered on rank 0.

use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;

use crate::links::{count, offsets};
use crate::walker::{DirRec, FileLine, Share};
use crate::wire::{Reader, Writer};

/// Sends `share` to rank 0; on rank 0, returns every rank's merged.
pub fn gather(world: &SimpleCommunicator, share: Share) -> Option<Share> {
    let mut w = Writer::default();
    w.totals(&share.totals);
    w.u64(share.dirs.len() as u64);
    for (path, rec) in &share.dirs {
        w.bytes(path);
        w.u32(rec.depth);
        w.totals(&rec.totals);
        w.u64(rec.more_names);
        w.keys(&rec.chain);
    }
    for f in &share.files {
        w.bytes(&f.path);
        w.u32(f.depth);
        w.totals(&f.totals);
        w.keys(&f.chain);
    }
    let root = world.process_at_rank(0);
    let n = count(w.0.len());
    if world.rank() != 0 {
        root.gather_into(&n);
        root.gather_varcount_into(&w.0[..]);
        return None;
    }
    let mut counts = vec![0 as Count; world.size() as usize];
    root.gather_into_root(&n, &mut counts[..]);
    let displs = offsets(&counts);
    let mut all = vec![0u8; counts.iter().map(|&c| c as usize).sum()];
    {
        let mut into = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        root.gather_varcount_into_root(&w.0[..], &mut into);
    }
    let mut merged = share;
    merged.totals = Default::default();
    merged.dirs.clear();
    merged.files.clear();
    for (&at, &len) in displs.iter().zip(&counts) {
        let mut r = Reader(&all[at as usize..(at + len) as usize]);
        merged.totals += r.totals();
        for _ in 0..r.u64() {
            let path = r.bytes().to_vec();
            let depth = r.u32();
            let (totals, more_names, chain) = (r.totals(), r.u64(), r.keys());
            let rec = merged.dirs.entry(path).or_insert(DirRec {
                depth,
                ..DirRec::default()
            });
            rec.totals += totals;
            rec.more_names += more_names;
            rec.note_place(&chain);
        }
        while !r.is_empty() {
            let path = r.bytes().to_vec();
            let depth = r.u32();
            let (totals, chain) = (r.totals(), r.keys());
            merged.files.push(FileLine {
                path,
                depth,
                totals,
                chain,
            });
        }
    }
    Some(merged)
}
