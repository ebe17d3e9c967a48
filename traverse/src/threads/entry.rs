//! The per-entry step: decide whether to stat, stat, count, queue the
//! subdirectory.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::engine::{Shared, Worker};
use crate::links::Links;
use crate::node::{DirNode, Ent};
use crate::sys::{self, FileId};

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
        if shared.skips(dir, cname.to_bytes(), ent.d_type) {
            continue;
        }
        if defer_dirs && ent.d_type == libc::DT_DIR {
            children.push(Work::Subdir(DirNode::child(dir, cname)));
            continue;
        }
        let name = cname.to_bytes();
        if let Some((links, dev)) = links {
            if !matches!(ent.d_type, libc::DT_DIR | libc::DT_UNKNOWN)
                && links.counted(dev, ent.ino, name)
            {
                worker.known_link(shared, name, ent.d_type, FileId { dev, ino: ent.ino });
                continue;
            }
        }
        let st = if shared.needs_stat(ent.d_type) {
            match sys::statx(Some(fd), cname, shared.config.statx_mask()) {
                Ok(st) => {
                    if let Some((links, _)) = links {
                        if st.is_hard_linked() {
                            links.insert(st.id());
                        }
                    }
                    Some(st)
                }
                Err(cause) => {
                    worker.stat_failed(shared, name, ent.d_type, cause);
                    continue;
                }
            }
        } else {
            None
        };
        if worker.entry(shared, name, ent.d_type, st.as_ref()) {
            let dev = st.map(|st| st.dev);
            children.push(Work::Dir(
                DirNode::child_with_stat(dir, cname, st.as_ref()),
                dev,
            ));
        }
    }
}
