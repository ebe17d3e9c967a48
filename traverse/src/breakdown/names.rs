//! The names of hard-linked inodes, and under -L of every file and
//! directory, kept until the end of the walk, when each counts under the
//! name GNU du meets first.

use std::cmp::Ordering;
use std::collections::hash_map::Entry;
use std::collections::HashSet;
use std::ffi::CStr;
use std::os::unix::ffi::OsStringExt;
use std::sync::Arc;

use super::place::{DirName, Placer};
use super::Breakdown;
use crate::file_totals::FileTotals;
use crate::links::shard_of;
use crate::listing_order::ListingOrder;
use crate::node::{push_name, DirNode, ListingPlace};
use crate::sys::{FileId, Stat};
use crate::tally::lock;
use crate::timestamp::Timestamp;
use crate::totals::Totals;

/// What the breakdown keeps of a hard-linked inode's stat.
type LinkStat = (u64, u64, u32, Option<Timestamp>);

/// A name of a hard-linked inode: its path, directory and place there.
type Name = (Vec<u8>, Arc<DirNode>, ListingPlace);

/// The names met of one hard-linked inode, while the walk runs.
pub(super) struct LinkNames {
    /// Size, blocks, mode and the time kept, from the stat of one of its
    /// names (a further name counted from `d_ino` may come first: see
    /// [`Breakdown::link_known`]).
    sizes: Option<LinkStat>,
    /// Under -L ([`Breakdown::followed`]): whether one of its names was
    /// the walk's first reach of it, so that it counts under this root.
    /// `None` for a hard-linked inode, each of whose names is an entry.
    reached: Option<bool>,
    /// The name du meets first ([`ListingOrder`]) of those compared so
    /// far: its path, directory and place there.
    first: Name,
    /// Names that could not be compared with `first` yet: the directory
    /// where their paths part was still being read.
    undecided: Vec<Name>,
    /// The directory of each name of a hard-linked inode (each holds back
    /// one part of it); none under -L, where every directory waits.
    holders: Vec<Arc<DirNode>>,
}

/// Under -L, the names met of one directory while the walk runs.
#[derive(Default)]
pub(super) struct DirNames {
    /// The directory as this walk reads it, at its first reach.
    walked: Option<Arc<DirNode>>,
    /// The other names it was reached by.
    others: Vec<DirName>,
}

impl Breakdown {
    /// A name `path` of the hard-linked inode `st`, in `dir` (whose
    /// reading is not done), whose kept time is `time`: `dir` waits until
    /// the inode is settled.
    pub fn link(
        &self,
        (dir, place): (&Arc<DirNode>, ListingPlace),
        path: &[u8],
        st: &Stat,
        time: Option<Timestamp>,
    ) {
        let sizes = (st.size, st.blocks, st.mode, time);
        self.name(st.id(), (Some(sizes), None), (dir, place), path);
    }

    /// Under -L: a name `path` of the file `st` (not a directory) in
    /// `dir`, reached as itself or through a link; `first`: the walk's
    /// first reach of it (else it was reached before, in this walk or
    /// under an earlier root). As du, the file counts once, entry and
    /// sizes, in the directory of the name du meets first. `path` is
    /// empty where no line of files is asked for.
    pub fn followed(
        &self,
        at: (&Arc<DirNode>, ListingPlace),
        path: &[u8],
        st: &Stat,
        (time, first): (Option<Timestamp>, bool),
    ) {
        let sizes = (st.size, st.blocks, st.mode, time);
        self.name(st.id(), (Some(sizes), Some(first)), at, path);
    }

    /// A further name `path` of the hard-linked inode `key`, counted from
    /// its `d_ino` without a stat: the inode's stat under another name
    /// gives its sizes (in the registry already, or soon: another worker
    /// may still be on its way from the stat to [`link`](Self::link)).
    pub fn link_known(
        &self,
        (dir, place): (&Arc<DirNode>, ListingPlace),
        path: &[u8],
        key: FileId,
    ) {
        self.name(key, (None, None), (dir, place), path);
    }

    /// A name at `place` of `dir`: the first so far, or not, or not known
    /// yet (kept until [`settle`](Self::settle)).
    fn name(
        &self,
        key: FileId,
        (sizes, reached): (Option<LinkStat>, Option<bool>),
        (dir, place): (&Arc<DirNode>, ListingPlace),
        path: &[u8],
    ) {
        // Under -L every directory waits for the end anyway (see
        // `dir_walked`); a name of a hard link holds its directory back.
        if reached.is_none() {
            let tally = dir.tally().expect("a breakdown tallies every directory");
            tally.hold();
        }
        let name = (path.to_owned(), Arc::clone(dir), place);
        let mut links = lock(&self.links[shard_of(&key)]);
        let names = match links.entry(key) {
            Entry::Vacant(vacant) => {
                let holders = match reached {
                    None => vec![Arc::clone(dir)],
                    Some(_) => Vec::new(),
                };
                let undecided = Vec::new();
                vacant.insert(LinkNames {
                    sizes,
                    reached,
                    first: name,
                    undecided,
                    holders,
                });
                return;
            }
            Entry::Occupied(names) => names.into_mut(),
        };
        names.sizes = names.sizes.or(sizes);
        if let Some(first) = reached {
            names.reached = Some(first || names.reached == Some(true));
            // A directory of a name may still move (see `place_dirs`): the
            // choice waits for the end.
            names.undecided.push(name);
            return;
        }
        names.holders.push(Arc::clone(dir));
        let (_, first_dir, first_place) = &names.first;
        let this = ListingOrder::file(dir, place);
        match this.cmp_known(&ListingOrder::file(first_dir, *first_place)) {
            (Ordering::Less, true) => names.first = name,
            (_, true) => {}
            (_, false) => names.undecided.push(name),
        }
    }

    /// Settles the hard-linked inodes (and under -L every file) at the end
    /// of the walk: each not in `seen` (counted under an earlier root) is
    /// counted in the directory of its first path; then the directories
    /// holding names go on.
    pub fn settle(&self, seen: &HashSet<FileId>) {
        let (walked, moved) = self.place_dirs();
        let links = self
            .links
            .iter()
            .flat_map(|shard| std::mem::take(&mut *lock(shard)));
        let mut holders = Vec::new();
        for (key, names) in links {
            // Each name of a hard-linked inode is one more than the inode
            // counts as, except the one it is counted under, if it is.
            // Under -L no name was an entry yet: the first becomes one.
            let counts = names.reached.unwrap_or_else(|| {
                for dir in &names.holders {
                    let tally = dir.tally().expect("a breakdown tallies every directory");
                    tally.add_more_names(1);
                }
                !seen.contains(&key)
            });
            // No sizes: no name of it was counted with its stat (one on
            // another filesystem, under -x), nor in the totals.
            if let Some((size, blocks, mode, time)) = names.sizes.filter(|_| counts) {
                let mut sizes = Totals::default();
                sizes.add_sizes(size, blocks);
                sizes.add_time(time);
                if names.reached.is_some() {
                    sizes.add_kind(mode);
                }
                let order = |(_, dir, place): &Name| ListingOrder::file(dir, *place);
                let (path, dir, place) = names
                    .undecided
                    .iter()
                    .chain([&names.first])
                    .min_by_key(|name| order(name))
                    .expect("a first name");
                let tally = dir.tally().expect("a breakdown tallies every directory");
                tally.add(&sizes);
                if names.reached.is_none() {
                    tally.name_counted();
                }
                // Its directory's path is another since a move.
                let mut moved_path = Vec::new();
                if moved && !path.is_empty() {
                    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
                    moved_path = dir.path().into_os_string().into_vec();
                    push_name(&mut moved_path, name);
                }
                let path = if moved_path.is_empty() {
                    path
                } else {
                    &moved_path
                };
                let first = FileTotals::new(path, (dir, *place), mode, (size, blocks), time);
                self.file(&first);
            }
            holders.extend(names.holders);
        }
        for dir in holders.into_iter().chain(walked) {
            self.done(&dir);
        }
    }

    /// Under -L: `dir`, whose identity is `id`, is read by this walk, at
    /// its first reach. It waits for the end of the walk, where the name
    /// du meets first of those it was reached by decides where it counts.
    pub fn dir_walked(&self, dir: &Arc<DirNode>, id: FileId) {
        let tally = dir.tally().expect("a breakdown tallies every directory");
        tally.hold();
        let mut dirs = lock(&self.dirs[shard_of(&id)]);
        dirs.entry(id).or_default().walked = Some(Arc::clone(dir));
    }

    /// Under -L: the directory `id` reached again as `name` at `place` of
    /// `parent`, which waits already (see [`dir_walked`](Self::dir_walked)):
    /// it is not read again.
    pub fn dir_again(
        &self,
        id: FileId,
        (parent, place): (&Arc<DirNode>, ListingPlace),
        name: &CStr,
    ) {
        let mut dirs = lock(&self.dirs[shard_of(&id)]);
        let other = (Arc::clone(parent), name.to_owned(), place);
        dirs.entry(id).or_default().others.push(other);
    }

    /// Under -L, at the end of the walk: moves each directory reached by
    /// several names to the one du meets first, with its subtree, when
    /// that is not where the walk read it (see [`Placer`]); returns the
    /// directories read (each waits until the end) and whether one moved.
    /// A move that would put a directory below itself is not made.
    fn place_dirs(&self) -> (Vec<Arc<DirNode>>, bool) {
        let dirs = self
            .dirs
            .iter()
            .flat_map(|shard| std::mem::take(&mut *lock(shard)));
        let read: Vec<(Arc<DirNode>, Vec<DirName>)> = dirs
            .filter_map(|(_, names)| Some((names.walked?, names.others)))
            .collect();
        let (several, one): (Vec<_>, Vec<_>) = read.into_iter().partition(|(_, o)| !o.is_empty());
        let choices = Placer::new(&several).choices();
        let mut moves: Vec<_> = several
            .iter()
            .zip(choices)
            .filter_map(|((dir, others), k)| Some((dir, &others[k?])))
            .collect();
        let mut moved = false;
        // A directory may wait for one above its new name to move out of
        // its subtree first.
        while !moves.is_empty() {
            let before = moves.len();
            moves.retain(|&(dir, (parent, name, place))| {
                let Some(old) = dir.parent().cloned() else {
                    return false;
                };
                if !dir.move_to(parent, name, *place) {
                    return true;
                }
                let tally = parent.tally().expect("a breakdown tallies every directory");
                // Its sums go to the new parent, which waits for them now.
                tally.hold();
                self.done(&old);
                moved = true;
                false
            });
            if moves.len() == before {
                break;
            }
        }
        let walked: Vec<_> = several.into_iter().chain(one).map(|(dir, _)| dir).collect();
        if moved {
            walked.iter().for_each(|dir| dir.set_depth());
        }
        (walked, moved)
    }
}
