//! Hard links across ranks: each hard-linked inode (`st_nlink > 1`, not a
//! directory) belongs to the rank its `(st_dev, st_ino)` hashes to. While
//! the ranks walk, each sends the names it meets to their owners in
//! batches of at most [`BATCH`] bytes per owner; after a root's walk, one
//! all-to-all exchange carries the rest and how many batches each rank
//! sent, so every batch is in before counting. An owner keeps one name per
//! inode (the one GNU du meets first, by the names' places in its order,
//! [`crate::order::Chain`]: the name `traverse` counts it under) and settles every other name as it comes, so its memory grows
//! with the inodes it owns, not with their names. It counts each inode's
//! size once and remembers the inodes it counted for the next roots (as
//! `du A B` does).

use std::hash::Hasher;

use mpi::datatype::{Partition, PartitionMut};
use mpi::point_to_point::Destination;
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use traverse::Totals;

use crate::order::du_order;
use crate::walker::{ancestor, count_kind, DirRec, FileLine, Keep, Kind, LinkName, Share};
use crate::wire::{Reader, Writer};

/// The most bytes of names a rank holds for one other rank before it
/// sends them (about 150 names of 60-byte paths).
pub const BATCH: usize = 16 * 1024;

/// The tag of a batch of names.
pub const LINKS: i32 = 5;

/// Batches a rank has on their way at most (1 MiB): past it, it takes in
/// the others' batches until one of its own has left, so a slow receiver
/// cannot make a sender's memory grow. `TRAVERSE_MPI_IN_FLIGHT` sets
/// another cap (the tests use 1, to exercise the wait).
const MAX_IN_FLIGHT: usize = 64;

/// The cap on batches in flight: [`MAX_IN_FLIGHT`], or
/// `TRAVERSE_MPI_IN_FLIGHT` when that is a number of at least 1.
pub fn in_flight_cap() -> usize {
    std::env::var("TRAVERSE_MPI_IN_FLIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(MAX_IN_FLIGHT)
}

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

/// A batch on its way: the request, and the buffer MPI reads until it
/// completes (leaked for the request's `'static` scope, taken back after).
struct InFlight {
    request: Request<'static, [u8], StaticScope>,
    buffer: *mut [u8],
}

/// One rank's hard-linked names of one root: those on their way to their
/// owners, and those of the inodes it owns.
pub struct Links {
    keep: Keep,
    rank: usize,
    /// Names for each rank, not sent yet.
    pending: Vec<Writer>,
    /// Batches sent to each rank during the walk.
    sent: Vec<u64>,
    /// Batches received from each rank during the walk.
    received: Vec<u64>,
    in_flight: Vec<InFlight>,
    /// At most this many batches in `in_flight`.
    cap: usize,
    /// Of each inode this rank owns, the name du meets first so far.
    first: FxHashMap<(u64, u64), LinkName>,
    /// Names not counted, by directory (`--inodes`'s entries counted
    /// elsewhere), at the depth of the lines.
    more_names: FxHashMap<Vec<u8>, DirRec>,
    /// Batches sent during the walk (for `TRAVERSE_MPI_STATS`).
    pub batches: u64,
    /// The most batches that were on their way at once (the same).
    pub peak: usize,
}

impl Links {
    pub fn new(ranks: usize, rank: usize, keep: Keep) -> Links {
        Links {
            keep,
            rank,
            pending: (0..ranks).map(|_| Writer::default()).collect(),
            sent: vec![0; ranks],
            received: vec![0; ranks],
            in_flight: Vec::new(),
            cap: in_flight_cap(),
            first: FxHashMap::default(),
            more_names: FxHashMap::default(),
            batches: 0,
            peak: 0,
        }
    }

    /// Hands `names` to their owners during the walk: this rank's own at
    /// once, the others' in a batch once [`BATCH`] bytes are waiting for
    /// that rank.
    pub fn post(&mut self, world: &SimpleCommunicator, names: Vec<LinkName>) {
        for name in names {
            if let Some(to) = self.place(name) {
                if self.pending[to].0.len() >= BATCH {
                    self.send(world, to);
                }
            }
        }
        self.reap();
    }

    /// After the walk: keeps `names` for [`Links::finish`]'s exchange. No
    /// batch is sent: the other ranks may be in that collective already,
    /// where they take in no batch until every rank has joined it.
    pub fn keep(&mut self, names: Vec<LinkName>) {
        for name in names {
            self.place(name);
        }
    }

    /// Settles `name` if this rank owns its inode, else adds it to what
    /// waits for its owner, whose rank it returns.
    fn place(&mut self, name: LinkName) -> Option<usize> {
        let to = owner(name.dev, name.ino, self.pending.len());
        if to == self.rank {
            self.settle(name);
            return None;
        }
        write_name(&mut self.pending[to], &name);
        Some(to)
    }

    /// Sends what waits for `to` without blocking: the other rank may be
    /// sending to this one at the same time. With [`in_flight_cap`] batches
    /// on their way, it first takes in the others' batches (what a rank
    /// waiting on this one's would need) until one of its own has left.
    fn send(&mut self, world: &SimpleCommunicator, to: usize) {
        self.reap();
        while self.in_flight.len() >= self.cap {
            match world.any_process().immediate_matched_probe_with_tag(LINKS) {
                Some(probed) => {
                    let (bytes, status) = probed.matched_receive_vec::<u8>();
                    self.receive(status.source_rank(), &bytes);
                }
                None => std::thread::yield_now(),
            }
            self.reap();
        }
        let bytes = std::mem::take(&mut self.pending[to].0).into_boxed_slice();
        let buffer = Box::into_raw(bytes);
        // SAFETY: `buffer` comes from `Box::into_raw` and is only freed by
        // `reap` or `finish` once the request that reads it has completed.
        let data: &'static [u8] = unsafe { &*buffer };
        let request =
            world
                .process_at_rank(to as i32)
                .immediate_send_with_tag(StaticScope, data, LINKS);
        self.in_flight.push(InFlight { request, buffer });
        self.peak = self.peak.max(self.in_flight.len());
        self.sent[to] += 1;
        self.batches += 1;
    }

    /// Frees the buffers of the batches that have left.
    fn reap(&mut self) {
        let mut still = Vec::with_capacity(self.in_flight.len());
        for f in self.in_flight.drain(..) {
            match f.request.test() {
                // SAFETY: the request completed: MPI no longer reads the
                // buffer, which came from `Box::into_raw` in `send`.
                Ok(_) => drop(unsafe { Box::from_raw(f.buffer) }),
                Err(request) => still.push(InFlight {
                    request,
                    buffer: f.buffer,
                }),
            }
        }
        self.in_flight = still;
    }

    /// Takes in a batch that rank `from` sent during the walk.
    pub fn receive(&mut self, from: i32, bytes: &[u8]) {
        self.received[from as usize] += 1;
        let mut r = Reader(bytes);
        while !r.is_empty() {
            let name = read_name(&mut r);
            self.settle(name);
        }
    }

    /// Keeps `name` if du meets it before the name kept of its inode
    /// ([`du_order`]); the other of the two is a name counted elsewhere.
    fn settle(&mut self, name: LinkName) {
        let key = (name.dev, name.ino);
        let loser = match self.first.get_mut(&key) {
            None => {
                self.first.insert(key, name);
                return;
            }
            Some(kept) if du_order(&name.chain, &kept.chain).is_lt() => {
                std::mem::replace(kept, name)
            }
            Some(_) => name,
        };
        self.more_name(&loser);
    }

    /// Notes a name not counted in its directory's line (`--inodes`).
    fn more_name(&mut self, name: &LinkName) {
        if let Some((key, depth)) = line_of(self.keep, name) {
            let rec = self.more_names.entry(key.to_vec()).or_default();
            rec.depth = depth as u32;
            rec.more_names += 1;
            rec.note_place(&name.chain);
        }
    }

    /// After the walk: sends the names still waiting, and how many batches
    /// went to each rank, in one all-to-all; receives the batches still on
    /// their way; then counts the inodes this rank owns into `share`: each
    /// size once in the totals and, with a breakdown, in the directory of
    /// the name counted, with that name's line (`-a`).
    pub fn finish(mut self, world: &SimpleCommunicator, share: &mut Share, owned: &mut Owned) {
        let ranks = self.pending.len();
        let out: Vec<Writer> = (0..ranks)
            .map(|to| {
                let mut w = Writer::default();
                w.u64(self.sent[to]);
                w.0.append(&mut self.pending[to].0);
                w
            })
            .collect();
        let (received, counts) = all_to_all(world, out);
        for (from, (&at, &len)) in offsets(&counts).iter().zip(&counts).enumerate() {
            let mut r = Reader(&received[at as usize..(at + len) as usize]);
            let batches = r.u64();
            while self.received[from] < batches {
                let (bytes, _) = world
                    .process_at_rank(from as i32)
                    .receive_vec_with_tag::<u8>(LINKS);
                self.receive(from as i32, &bytes);
            }
            while !r.is_empty() {
                let name = read_name(&mut r);
                self.settle(name);
            }
        }
        for f in self.in_flight.drain(..) {
            f.request.wait();
            // SAFETY: the request completed: MPI no longer reads the
            // buffer, which came from `Box::into_raw` in `send`.
            drop(unsafe { Box::from_raw(f.buffer) });
        }
        for (key, name) in std::mem::take(&mut self.first) {
            if !owned.0.insert(key) {
                // Counted under an earlier root.
                self.more_name(&name);
                continue;
            }
            let mut sizes = Totals::default();
            sizes.bytes = u128::from(name.bytes);
            sizes.disk_bytes = u128::from(name.disk);
            share.totals += sizes;
            let Some((dir, depth)) = line_of(self.keep, &name) else {
                continue;
            };
            let rec = share.dirs.entry(dir.to_vec()).or_default();
            rec.depth = depth as u32;
            rec.totals += sizes;
            rec.note_place(&name.chain);
            if self
                .keep
                .files_to
                .is_some_and(|max| name.depth as usize <= max)
            {
                count_kind(&mut sizes, Kind::from_u8(name.kind));
                share.files.push(FileLine {
                    path: name.path,
                    depth: name.depth,
                    totals: sizes,
                    chain: name.chain,
                });
            }
        }
        for (dir, more) in self.more_names {
            let rec = share.dirs.entry(dir).or_default();
            rec.depth = more.depth;
            rec.more_names += more.more_names;
            rec.note_place(&more.chain);
        }
    }
}

/// The directory whose line counts `name` (its own directory, or that
/// directory's ancestor at the depth of the lines) and its depth; `None`
/// without lines.
fn line_of(keep: Keep, name: &LinkName) -> Option<(&[u8], usize)> {
    let max = keep.dirs_to?;
    // The name's directory is one level up, at depth - 1.
    let dir = &name.path[..name.path.iter().rposition(|&b| b == b'/').unwrap_or(0)];
    Some(ancestor(dir, name.depth as usize - 1, max))
}

fn write_name(w: &mut Writer, l: &LinkName) {
    w.u64(l.dev);
    w.u64(l.ino);
    w.u64(l.bytes);
    w.u64(l.disk);
    w.bytes(&l.path);
    w.u32(l.depth);
    w.u8(l.kind);
    w.keys(&l.chain);
}

fn read_name(r: &mut Reader<'_>) -> LinkName {
    let (dev, ino, bytes, disk) = (r.u64(), r.u64(), r.u64(), r.u64());
    let path = r.bytes().to_vec();
    let (depth, kind, chain) = (r.u32(), r.u8(), r.keys());
    LinkName {
        dev,
        ino,
        bytes,
        disk,
        path,
        depth,
        kind,
        chain,
    }
}

/// One all-to-all exchange of byte strings: `out[r]` goes to rank `r`;
/// returns what every rank sent to this one, concatenated, and the length
/// of each rank's part.
fn all_to_all(world: &SimpleCommunicator, out: Vec<Writer>) -> (Vec<u8>, Vec<Count>) {
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
    (recv, recv_counts)
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
