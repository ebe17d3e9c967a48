//! Under -L, which name of a directory reached by several GNU du meets
//! first: in the tree as du walks it, where a directory that moves to
//! another of its names takes the names below it along, so the choices
//! of the directories above a name are made before it is compared. Two
//! directories each below a name of the other (links both ways) make
//! their choices again, each with the other's last one, until they hold.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::node::{DirNode, ListingPlace};

/// A name of a directory: its parent, its name there and its place.
pub(super) type DirName = (Arc<DirNode>, std::ffi::CString, ListingPlace);

/// Where the choice of one directory stands.
#[derive(Clone, Copy, PartialEq)]
enum State {
    Open,
    /// Being made: a name below the directory, met again through links
    /// both ways, compares by its choice of the round before.
    Deciding,
    Stays,
    /// Moves to its other name of this index.
    Moves(usize),
}

/// An entry as du reaches it: from the root down, each level's
/// directory and the place of the next level (the entry last) in it.
type Chain<'a> = Vec<(&'a DirNode, ListingPlace)>;

/// The directories reached by several names, and their choices.
pub(super) struct Placer<'a> {
    /// Each such directory, as the walk read it, with its other names.
    dirs: &'a [(Arc<DirNode>, Vec<DirName>)],
    /// Their indexes, by address.
    index: FxHashMap<*const DirNode, usize>,
    state: Vec<State>,
    /// The choices of the round before (at first: every one stays).
    before: Vec<State>,
}

/// Rounds of choices at most, where links both ways would not settle.
const ROUNDS: usize = 8;

impl<'a> Placer<'a> {
    pub fn new(dirs: &'a [(Arc<DirNode>, Vec<DirName>)]) -> Placer<'a> {
        let index = dirs.iter().enumerate();
        Placer {
            dirs,
            index: index.map(|(i, (dir, _))| (Arc::as_ptr(dir), i)).collect(),
            state: vec![State::Open; dirs.len()],
            before: vec![State::Stays; dirs.len()],
        }
    }

    /// For each directory, the index of its other name du meets first, or
    /// `None` where that is the one the walk read it by.
    pub fn choices(mut self) -> Vec<Option<usize>> {
        for _ in 0..ROUNDS {
            for i in 0..self.dirs.len() {
                self.decide(i);
            }
            if self.state == self.before {
                break;
            }
            self.before = std::mem::replace(&mut self.state, vec![State::Open; self.dirs.len()]);
        }
        let choice = |state: &State| match state {
            State::Moves(k) => Some(*k),
            _ => None,
        };
        self.state.iter().map(choice).collect()
    }

    fn decide(&mut self, i: usize) {
        if self.state[i] != State::Open {
            return;
        }
        self.state[i] = State::Deciding;
        let dirs = self.dirs;
        let (dir, others) = &dirs[i];
        let Some(parent) = dir.parent() else {
            self.state[i] = State::Stays;
            return;
        };
        let mut first = self.chain(dir, (parent, dir.place()));
        let mut choice = State::Stays;
        for (k, (parent, _, place)) in others.iter().enumerate() {
            let chain = self.chain(dir, (parent, *place));
            if chain
                .as_ref()
                .is_some_and(|c| first.as_ref().is_none_or(|f| earlier(c, f)))
            {
                (first, choice) = (chain, State::Moves(k));
            }
        }
        self.state[i] = choice;
    }

    /// The name at `place` of `dir` of the directory `of`, as du reaches
    /// it: each directory on the way up at the name chosen for it. `None`
    /// when that way leads through `of` itself (or round a cycle): du
    /// does not reach it by that name.
    fn chain(
        &mut self,
        of: &DirNode,
        (dir, place): (&'a DirNode, ListingPlace),
    ) -> Option<Chain<'a>> {
        let dirs = self.dirs;
        let mut levels = vec![(dir, place)];
        let mut seen = FxHashSet::from_iter([std::ptr::from_ref(of)]);
        let mut cur = dir;
        if !seen.insert(std::ptr::from_ref(dir)) {
            return None;
        }
        loop {
            let walked = cur.parent().map(|p| (&**p, cur.place()));
            let up = match self.index.get(&std::ptr::from_ref(cur)).copied() {
                Some(j) => {
                    self.decide(j);
                    let state = match self.state[j] {
                        State::Deciding => self.before[j],
                        state => state,
                    };
                    match state {
                        State::Moves(k) => Some((&*dirs[j].1[k].0, dirs[j].1[k].2)),
                        _ => walked,
                    }
                }
                None => walked,
            };
            let Some((parent, place)) = up else {
                break;
            };
            if !seen.insert(std::ptr::from_ref(parent)) {
                return None;
            }
            levels.push((parent, place));
            cur = parent;
        }
        levels.reverse();
        Some(levels)
    }
}

/// Whether du meets the entry at the end of `a` before the one at the end
/// of `b`: by the keys of the places where their ways part.
fn earlier(a: &Chain<'_>, b: &Chain<'_>) -> bool {
    for (&(x, xp), &(y, yp)) in a.iter().zip(b) {
        if !std::ptr::eq(x, y) {
            // Not one tree: the first stays.
            return false;
        }
        if xp != yp {
            let rule = x.listing_rule();
            return rule.key(xp) < rule.key(yp);
        }
    }
    a.len() < b.len()
}
