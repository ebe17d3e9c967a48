//! The per-entry step: decide whether to stat, stat, count, queue the
//! subdirectory.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::engine::{Shared, Step, Worker};
use crate::links::Links;
use crate::node::{DirNode, Ent};
use crate::sys;

use super::Work;

/// A directory whose entries are being stat'ed.
pub(super) struct Listing<'a> {
    pub(super) dir: &'a Arc<DirNode>,
    pub(super) fd: BorrowedFd<'a>,
    /// The entries' names ([`Ent::name`]).
    pub(super) names: &'a [u8],
    /// The hard-link set and the directory's device, when its filesystem's
    /// `d_ino`s can be trusted.
    pub(super) links: Option<(&'a Links, u64)>,
}

/// Stats `ents` of `listing` relative to its descriptor, counts them, and
/// adds the subdirectories to `children`. When counting sizes, an entry
/// whose `d_type` says directory is not stat'ed here but when it is opened
/// ([`Work::Subdir`]): one name lookup fewer per directory. A further name
/// of a hard-linked inode already stat'ed is counted from its `d_type`.
pub(super) fn stat_entries(
    worker: &mut Worker<'_>,
    shared: &Shared,
    listing: &Listing<'_>,
    ents: &[Ent],
    children: &mut Vec<Work>,
) {
    let Listing {
        dir,
        fd,
        names,
        links,
    } = *listing;
    let defer_dirs = shared.defers_dirs(dir);
    for ent in ents {
        // Every entry: on a slow filesystem one stat may take a round
        // trip of hundreds of milliseconds.
        if shared.interrupted() {
            break;
        }
        let cname = ent.name(names);
        let name = cname.to_bytes();
        let st = match shared.step((dir, fd), name, ent.ino, ent.d_type, defer_dirs, links) {
            Step::Skip => continue,
            Step::Defer => {
                children.push(Work::Subdir(DirNode::child(dir, cname, ent.place())));
                continue;
            }
            Step::Known(key) => {
                worker.at(ent.place());
                worker.known_link(shared, name, ent.d_type, key);
                continue;
            }
            Step::Stat => match sys::statx(Some(fd), cname, shared.config.statx_mask()) {
                Ok(st) => Some(st),
                Err(cause) => {
                    worker.stat_failed(shared, name, ent.d_type, cause);
                    continue;
                }
            },
            Step::Count => None,
        };
        let links = links.map(|(links, _)| links);
        children.extend(worker.count_entry(shared, dir, names, ent, st.as_ref(), links));
    }
}
