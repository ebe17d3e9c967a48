//! The ranks' work loop: each reads tasks from its own stack and, when it
//! runs dry, asks a random other rank for work, which hands over half of
//! its stack (the oldest tasks: the largest subtrees). The end of the walk
//! is found by Dijkstra-Safra token rounds (see DESIGN.md). Meanwhile the
//! names of hard-linked inodes go to their owners in batches ([`Links`]).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use mpi::point_to_point::{Destination, Source, Status};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

use crate::links::{self, Links, LINKS};
use crate::task::{self, Task};
use crate::walker::{LinkName, Share, Walker};

/// A rank asks for work (no payload).
const REQUEST: i32 = 1;
/// The answer: tasks, or none.
const WORK: i32 = 2;
/// Safra's token: the sum of counters so far, and whether it is black.
const TOKEN: i32 = 3;
/// Rank 0 to all: the walk is over.
const DONE: i32 = 4;

/// Tasks handed over at most in one answer.
const MAX_GIVE: usize = 4096;

/// How often a busy rank looks for messages.
const POLL: Duration = Duration::from_micros(200);

/// Hard-linked names a batch holds, about (16 KiB of 100-byte records).
const NAMES_PER_BATCH: usize = 160;

/// The state of one rank in the termination rounds (Safra).
struct Safra {
    /// Tasks sent minus tasks received (messages of `WORK` that carry some).
    count: i64,
    /// Received work since the token last passed.
    black: bool,
    /// The token, while this rank holds it.
    token: Option<(i64, bool)>,
    /// On rank 0: the token held came back from a round (rather than
    /// being the one it starts with).
    round: bool,
}

/// A rank's tasks, shared by its MPI thread (which answers requests and
/// hands stolen work in) and its reader thread (which reads them).
#[derive(Default)]
struct Stack {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    tasks: VecDeque<Task>,
    /// Readers reading a task.
    busy: usize,
    /// Names of hard-linked inodes the readers met, for their owners.
    links: Vec<LinkName>,
    /// The walk is over: the readers return.
    over: bool,
    /// One rank alone: the walk is over when no task is left and no reader
    /// is busy.
    alone: bool,
    /// With several ranks, a reader that leaves more names than this in
    /// `links` waits until the MPI thread has taken them (while that one
    /// waits for its batches to leave), so they cannot pile up unbounded.
    max_links: usize,
}

impl Stack {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A reader's loop: the newest task first (depth first), until the
    /// walk is over.
    fn read(&self, walker: &Walker, share: &mut Share) {
        let mut found = Vec::new();
        loop {
            let task = {
                let mut state = self.lock();
                loop {
                    if let Some(task) = state.tasks.pop_back() {
                        state.busy += 1;
                        break task;
                    }
                    if state.alone && state.busy == 0 {
                        state.over = true;
                        self.wake.notify_all();
                    }
                    if state.over {
                        return;
                    }
                    state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                }
            };
            walker.run(&task, share, &mut found);
            let mut state = self.lock();
            state.tasks.extend(found.drain(..));
            state.links.append(&mut share.links);
            while !state.alone && state.links.len() > state.max_links && !state.over {
                state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            state.busy -= 1;
            self.wake.notify_all();
        }
    }
}

/// Walks the tree from `root` (given on rank 0 only) with every rank of
/// `world`, counting into `share`, the hard-linked names handed to `links`.
/// Returns when every rank is done and no task is in flight. Each walker
/// reads tasks on a thread of its own while this thread answers the other
/// ranks at once.
pub fn walk(
    world: &SimpleCommunicator,
    walkers: &[Walker],
    root: Option<Task>,
    share: &mut Share,
    links: &mut Links,
) {
    let stack = Stack::default();
    {
        let mut state = stack.lock();
        state.tasks.extend(root);
        state.alone = world.size() == 1;
        state.max_links = links::in_flight_cap() * NAMES_PER_BATCH;
    }
    let mut shares: Vec<Share> = walkers.iter().map(|_| Share::default()).collect();
    std::thread::scope(|scope| {
        let readers: Vec<_> = walkers
            .iter()
            .zip(shares.iter_mut())
            .map(|(walker, share)| {
                let stack = &stack;
                std::thread::Builder::new()
                    .name("traverse-mpi-reader".into())
                    .spawn_scoped(scope, move || stack.read(walker, share))
                    .expect("a thread for a reader")
            })
            .collect();
        if world.size() > 1 {
            let mut asked = None;
            serve(world, &stack, &mut asked, links);
            drain(world, &mut asked, links);
            stack.lock().over = true;
            stack.wake.notify_all();
        }
        for reader in readers {
            reader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        }
    });
    links.keep(std::mem::take(&mut stack.lock().links));
    for s in shares {
        share.merge(s);
    }
}

/// The MPI side of the walk until rank 0 says it is over.
fn serve(world: &SimpleCommunicator, stack: &Stack, asked: &mut Option<i32>, links: &mut Links) {
    let (rank, size) = (world.rank(), world.size());
    let mut safra = Safra {
        count: 0,
        black: false,
        // Rank 0 starts with the token and sends it round when it is idle.
        token: (rank == 0).then_some((0, false)),
        round: false,
    };
    let mut rng =
        Rng(0x9e37_79b9_7f4a_7c15 ^ (rank as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    loop {
        while let Some(probed) = world.any_process().immediate_matched_probe() {
            let (bytes, status) = probed.matched_receive_vec::<u8>();
            if receive(world, &status, &bytes, stack, &mut safra, asked, links) {
                return;
            }
        }
        let (idle, names) = {
            let mut state = stack.lock();
            let names = std::mem::take(&mut state.links);
            (state.tasks.is_empty() && state.busy == 0, names)
        };
        if !names.is_empty() {
            // A reader may wait for its names to be taken.
            stack.wake.notify_all();
        }
        links.post(world, names);
        if !idle {
            std::thread::sleep(POLL);
            continue;
        }
        // Idle: pass the token on (or judge it, on rank 0), ask for work,
        // and wait for the next message.
        if let Some(token) = safra.token.take() {
            if rank == 0 && safra.round && ends(token, &safra) {
                for r in 1..size {
                    world.process_at_rank(r).send_with_tag(nothing(), DONE);
                }
                return;
            }
            // Rank 0 starts a round; the others add their count and colour.
            let next = if rank == 0 {
                (0, false)
            } else {
                (token.0 + safra.count, token.1 || safra.black)
            };
            safra.round = rank == 0;
            safra.black = false;
            send_token(world, (rank + 1) % size, next);
        }
        if asked.is_none() {
            let mut target = (rng.next() % (size as u64 - 1)) as i32;
            if target >= rank {
                target += 1;
            }
            world
                .process_at_rank(target)
                .send_with_tag(nothing(), REQUEST);
            *asked = Some(target);
        }
        let (bytes, status) = world
            .any_process()
            .matched_probe()
            .matched_receive_vec::<u8>();
        if receive(world, &status, &bytes, stack, &mut safra, asked, links) {
            return;
        }
    }
}

/// Whether the token back at rank 0 proves the end: every rank was idle
/// and white when it passed, and every task sent was received.
fn ends(token: (i64, bool), safra: &Safra) -> bool {
    !token.1 && !safra.black && token.0 + safra.count == 0
}

fn send_token(world: &SimpleCommunicator, to: i32, token: (i64, bool)) {
    let mut bytes = token.0.to_le_bytes().to_vec();
    bytes.push(u8::from(token.1));
    world.process_at_rank(to).send_with_tag(&bytes[..], TOKEN);
}

/// Handles one message; true when it ends the walk.
fn receive(
    world: &SimpleCommunicator,
    status: &Status,
    bytes: &[u8],
    stack: &Stack,
    safra: &mut Safra,
    asked: &mut Option<i32>,
    links: &mut Links,
) -> bool {
    let (tag, from) = (status.tag(), status.source_rank());
    match tag {
        REQUEST => {
            // Half of the tasks waiting (the reader has its own), oldest first.
            let tasks: Vec<Task> = {
                let mut state = stack.lock();
                let give = state.tasks.len().div_ceil(2).min(MAX_GIVE);
                state.tasks.drain(..give).collect()
            };
            if !tasks.is_empty() {
                safra.count += 1;
            }
            let bytes = task::encode(&tasks);
            let bytes = if bytes.is_empty() {
                nothing()
            } else {
                &bytes[..]
            };
            world.process_at_rank(from).send_with_tag(bytes, WORK);
        }
        WORK => {
            *asked = None;
            if !bytes.is_empty() {
                safra.count -= 1;
                safra.black = true;
                stack.lock().tasks.extend(task::decode(bytes));
                stack.wake.notify_one();
            }
        }
        TOKEN => {
            let count = i64::from_le_bytes(bytes[..8].try_into().expect("a token of 9 bytes"));
            safra.token = Some((count, bytes[8] != 0));
        }
        LINKS => links.receive(from, bytes),
        DONE => return true,
        _ => panic!("a message with the unknown tag {tag} from rank {from}"),
    }
    false
}

/// After the end: waits for the answer to this rank's last request, and
/// answers the others' until every rank has had its answer (a barrier
/// entered once ours came), so no message of this walk is left in flight.
fn drain(world: &SimpleCommunicator, asked: &mut Option<i32>, links: &mut Links) {
    let mut barrier = None;
    loop {
        if asked.is_none() && barrier.is_none() {
            barrier = Some(world.immediate_barrier());
        }
        if let Some(b) = barrier.take() {
            match b.test() {
                Ok(_) => return,
                Err(b) => barrier = Some(b),
            }
        }
        if let Some(probed) = world.any_process().immediate_matched_probe() {
            let (bytes, status) = probed.matched_receive_vec::<u8>();
            match status.tag() {
                LINKS => links.receive(status.source_rank(), &bytes),
                REQUEST => world
                    .process_at_rank(status.source_rank())
                    .send_with_tag(nothing(), WORK),
                WORK => *asked = None,
                tag => panic!("a message with the tag {tag} after the end of the walk"),
            }
        } else {
            std::thread::yield_now();
        }
    }
}

/// An empty message whose address is a real one: Open MPI's `MPI_IN_PLACE`
/// is the address 1, which is also where Rust puts empty byte slices.
pub fn nothing() -> &'static [u8] {
    static ONE: [u8; 1] = [0];
    &ONE[..0]
}

/// xorshift64: the choice of a rank to ask, different on each rank.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
