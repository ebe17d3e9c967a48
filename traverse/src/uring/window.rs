//! Reading a directory a window at a time (see
//! [`window_full`](crate::engine::window_full)): once a window's entries
//! are counted, its reading goes on.

use std::cell::UnsafeCell;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

use crate::engine::Parts;
use crate::error::Op;

use super::{Phase, PlusMode, Reading, Walker, GETDENTS_BUF};

/// Where the reading of a directory read in windows goes on.
pub(super) struct Resume {
    pub(super) fd: Arc<OwnedFd>,
    pub(super) link_dev: Option<u64>,
    /// The next GETDENTS's offset (`getdents64` goes on from the
    /// descriptor's position).
    pub(super) offset: u64,
    pub(super) parts: Parts,
    /// How its reads ask for readdirplus, as its first did.
    pub(super) plus: PlusMode,
    /// The place in the listing of the next entry.
    pub(super) seq: u32,
}

impl Walker<'_> {
    /// The window of the directory `ai` is counted: reads its next one, with
    /// GETDENTS from where the last stopped, or here with `getdents64`
    /// from the descriptor's position.
    pub(super) fn go_on(&mut self, ai: usize, resume: Resume) {
        let Resume {
            fd,
            link_dev,
            offset,
            parts,
            plus,
            mut seq,
        } = resume;
        let getdents = self.pool.engine.getdents.filter(|_| self.io.ring.is_some());
        let (names, ents, error, more, buf) = match getdents {
            Some(_) => {
                let buf = self
                    .spare_bufs
                    .pop()
                    .unwrap_or_else(|| (0..GETDENTS_BUF).map(|_| UnsafeCell::new(0)).collect());
                (Vec::new(), Vec::new(), None, false, buf)
            }
            None => {
                // A large directory: the end found by an empty read.
                let (names, ents, error, more) = self.read_all(fd.as_fd(), &mut seq, None);
                (names, ents, error, more, Box::default())
            }
        };
        let active = self.io.active[ai].as_mut().expect("a live directory");
        active.phase = Phase::Reading(Reading {
            fd,
            link_dev,
            names,
            ents,
            seq,
            plus: if getdents.is_some() {
                plus
            } else {
                PlusMode::Off
            },
            buf,
            offset,
            submitted: Instant::now(),
            enter: 0,
            done: getdents.is_none(),
            more,
            parts: Some(parts),
        });
        match getdents {
            Some(code) => self.submit_read(ai, code),
            None => {
                if let Some(cause) = error {
                    self.focus(ai);
                    self.worker.dir_error(Op::Read, cause);
                }
                self.begin_stating(ai, self.cold);
            }
        }
    }
}
