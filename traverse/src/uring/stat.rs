//! A walker's stat phase: a directory's entries as STATX chains in the
//! ring (or shared out in chunks), their completions counted, the
//! directory ended.

use super::*;

impl Walker<'_> {
    /// The directory `ai` is read: its entries go to the stat phase, in
    /// inode order when large and `cold`.
    pub(super) fn begin_stating(&mut self, ai: usize, cold: bool) {
        let shared = self.pool.shared;
        // Out of its slot until its new phase is built from the old one.
        let Some(Active {
            dir,
            phase: Phase::Reading(r),
            pending,
        }) = self.io.active[ai].take()
        else {
            unreachable!("only a live directory being read begins its stats")
        };
        let Reading {
            fd,
            link_dev,
            names,
            mut ents,
            plus,
            buf,
            offset,
            more,
            parts,
            seq,
            ..
        } = r;
        if !more {
            dir.listing_read(shared.listing_rule(u64::from(seq), fd.as_fd()));
        }
        // In inode order, the stats a cold directory still needs: all
        // without readdirplus, those it did not look up with it.
        if cold && shared.inode_order(ents.len()) {
            ents.sort_unstable_by_key(|e| e.ino);
        }
        let end = ents.len();
        // Held while its entries are stat'ed (from its first window on):
        // each subdirectory goes to the stack as soon as its stat says so
        // (counted in with `add_children`), not when the whole directory
        // is done, so a cold walk reads it while its parent's other stats
        // are in flight.
        let parts = parts.unwrap_or_else(|| Parts::hold(&dir, Arc::clone(&fd), &shared.budget));
        let resume = more.then(|| Resume {
            fd: Arc::clone(&fd),
            link_dev,
            offset,
            parts: parts.clone(),
            plus,
            seq,
        });
        let batch = Arc::new(Batch {
            dir: Arc::clone(&dir),
            fd,
            names,
            ents,
            link_dev,
            parts,
        });
        self.io.active[ai] = Some(Active {
            dir,
            phase: Phase::Stating {
                batch,
                next: 0,
                end,
                resume,
            },
            pending,
        });
        // No read of this directory is in flight any more (they are
        // chained, and this is called once the last one completed), so the
        // kernel writes to the buffer no more.
        if !buf.is_empty() {
            self.spare_bufs.push(buf);
        }
    }

    /// Pushes operations to the ring, all in one submission, submitting
    /// what is queued first when the submission queue has no room for them.
    ///
    /// # Safety
    ///
    /// Whatever the entries point to (buffers, names, descriptors) must
    /// stay valid until their completions are reaped.
    pub(super) unsafe fn push(&mut self, sqes: &[squeue::Entry]) {
        let ring = self
            .io
            .ring
            .as_mut()
            .expect("operations are pushed only with a ring");
        loop {
            // SAFETY: the caller keeps what the entries point to alive.
            if unsafe { ring.submission().push_multiple(sqes) }.is_ok() {
                break;
            }
            self.io.enters += 1;
            if let Err(e) = ring.submit() {
                if !retry(&e) {
                    panic!("io_uring_enter failed: {e}");
                }
            }
        }
        self.io.in_flight += sqes.len();
    }

    /// Pushes the stats in `chain` as one chain of hard links (each runs
    /// whatever the one before it returned), all in the same submission.
    ///
    /// # Safety
    ///
    /// As [`Walker::push`], for every entry.
    pub(super) unsafe fn push_chain(&mut self) {
        let Some(last) = self.chain.len().checked_sub(1) else {
            return;
        };
        for sqe in &mut self.chain[..last] {
            *sqe = sqe.clone().flags(squeue::Flags::IO_HARDLINK);
        }
        let chain = std::mem::take(&mut self.chain);
        // SAFETY: the caller keeps what the entries point to alive.
        unsafe { self.push(&chain) };
        self.chain = chain;
        self.chain.clear();
    }

    /// Submits the stats of directories in flight while slots are free;
    /// counts entries that need none; ends directories that are done.
    pub(super) fn fill(&mut self) {
        for ai in 0..self.io.active.len() {
            self.fill_one(ai);
        }
    }

    pub(super) fn fill_one(&mut self, ai: usize) {
        let pool = self.pool;
        let shared = pool.shared;
        let Some(Active {
            phase: Phase::Stating {
                batch, next, end, ..
            },
            ..
        }) = &mut self.io.active[ai]
        else {
            return;
        };
        // A large directory: while another worker waits, the rest goes to
        // it in chunks (in order, so workers read neighbouring inodes).
        // Past a window of chunks shared and not done, this worker stats
        // its window itself before it reads on: a directory read faster
        // than it is stat'ed (one that never ends) then keeps about two
        // windows in memory, not one more per read.
        let backlog = batch.parts.left() * CHUNK >= WINDOW_ENTRIES;
        let shareable = *end - *next > 2 * CHUNK && !shared.config.list && !backlog;
        // Work another walker could take if one waited: one may be due.
        self.shareable |= shareable;
        if shareable && pool.queue.hungry() > 0 {
            let own_end = *next + CHUNK;
            let starts: Vec<usize> = (own_end..*end).step_by(CHUNK).collect();
            batch.parts.add(starts.len());
            let last = *end;
            pool.queue.share(
                starts
                    .into_iter()
                    .rev()
                    .map(|start| Work::Chunk(Arc::clone(batch), start..(start + CHUNK).min(last))),
            );
            *end = own_end;
        }
        let batch = Arc::clone(batch);
        let (mut i, end) = (*next, *end);
        let links = pool.links.as_ref().zip(batch.link_dev);
        let defer_dirs = self.defers_dirs(&batch.dir);
        let mask = shared.config.statx_mask();
        while i < end {
            if self.io.ring.is_some() && self.io.free.is_empty() {
                break;
            }
            // Every entry: on a slow filesystem each stat may take a round
            // trip of hundreds of milliseconds, and none is issued after
            // SIGINT.
            if shared.interrupted() {
                i = end;
                break;
            }
            let ent = batch.ents[i];
            i += 1;
            let name = ent.name_bytes(&batch.names);
            match shared.step(
                (&batch.dir, batch.fd.as_fd()),
                name,
                ent.ino,
                ent.d_type,
                defer_dirs,
                links,
            ) {
                Step::Skip => continue,
                Step::Known(key) => {
                    self.focus(ai);
                    self.worker.at(ent.place());
                    self.worker.known_link(shared, name, ent.d_type, key);
                    continue;
                }
                Step::Defer => {
                    let cname = ent.name(&batch.names);
                    self.adopt(
                        &batch.dir,
                        Work::Subdir(DirNode::child(&batch.dir, cname, ent.place())),
                    );
                    continue;
                }
                Step::Count => {
                    self.focus(ai);
                    let child =
                        self.worker
                            .count_entry(shared, &batch.dir, &batch.names, &ent, None, None);
                    if let Some(child) = child {
                        self.adopt(&batch.dir, child);
                    }
                    continue;
                }
                Step::Stat => {}
            }
            let cname = ent.name(&batch.names);
            if self.io.ring.is_none() {
                let result = sys::statx(Some(batch.fd.as_fd()), cname, mask);
                self.stat_done(ai, &batch, i - 1, result);
                continue;
            }
            let slot = self.io.free.pop().expect("a free slot, checked above");
            self.io.slots[slot] = (ai, i - 1);
            let sqe = opcode::Statx::new(
                types::Fd(batch.fd.as_raw_fd()),
                cname.as_ptr(),
                self.io.bufs[slot].get().cast::<types::statx>(),
            )
            .flags(STATX_FLAGS)
            .mask(mask)
            .build()
            .user_data(slot as u64);
            self.io.active[ai].as_mut().expect("live").pending += 1;
            self.chain.push(sqe);
            if self.chain.len() == CHAIN {
                // SAFETY: every entry of the chain is a stat of this
                // directory: see the push after the loop.
                unsafe { self.push_chain() };
            }
        }
        // SAFETY: each name lives in `batch`, held by the active directory
        // `ai` (and its descriptor with it) until `pending` (counted for
        // each entry above) drops to zero; each result buffer is its slot,
        // not reused until its completion is reaped (`free`), and every
        // operation completes before the buffers are dropped (`drain`).
        unsafe { self.push_chain() };
        if let Some(Active {
            phase: Phase::Stating { next, .. },
            pending,
            ..
        }) = &mut self.io.active[ai]
        {
            *next = i;
            if i == end && *pending == 0 {
                self.end_dir(ai);
            }
        }
    }

    /// Whether the subdirectories of `dir` are counted once opened rather
    /// than stat'ed by name ([`Shared::defers_dirs`]), whether readdirplus
    /// brought their statx or a STATX is to bring it. Once the cache is
    /// cold, with GETDENTS, they get a STATX too: chains of them wait for
    /// their inodes side by side in io-wq, where a walker opening one after
    /// the other waited for each in turn, and the stat tells which will be
    /// read with lookups that wait (5 ms per request: 465 -> 433 ms).
    pub(super) fn defers_dirs(&self, dir: &DirNode) -> bool {
        self.pool.shared.defers_dirs(dir) && !(self.cold && self.pool.engine.getdents.is_some())
    }

    /// Queues `child`, a subdirectory of `dir` to read, on this walker's
    /// stack, counted in `dir`'s hold on its descriptor first.
    pub(super) fn adopt(&mut self, dir: &DirNode, child: Work) {
        dir.add_children(1);
        self.own.push(child);
    }

    /// Counts one stat'ed entry (entry `i` of `batch`, directory `ai`).
    pub(super) fn stat_done(
        &mut self,
        ai: usize,
        batch: &Batch,
        i: usize,
        result: io::Result<Stat>,
    ) {
        let shared = self.pool.shared;
        let ent = &batch.ents[i];
        self.focus(ai);
        match result {
            Ok(st) => {
                let links = self
                    .pool
                    .links
                    .as_ref()
                    .filter(|_| batch.link_dev.is_some());
                let child = self.worker.count_entry(
                    shared,
                    &batch.dir,
                    &batch.names,
                    ent,
                    Some(&st),
                    links,
                );
                if let Some(child) = child {
                    self.adopt(&batch.dir, child);
                }
            }
            Err(cause) => {
                let name = ent.name_bytes(&batch.names);
                self.worker.stat_failed(shared, name, ent.d_type, cause);
            }
        }
    }

    /// Every entry of `ai` is counted: the last part of its directory to
    /// end drops the hold on the directory's descriptor (its children
    /// keep it while they wait, see [`DirNode::hold`]).
    pub(super) fn end_dir(&mut self, ai: usize) {
        let interrupted = self.pool.shared.interrupted();
        if let Some(Active {
            phase: Phase::Stating { resume, .. },
            ..
        }) = &mut self.io.active[ai]
        {
            if let Some(resume) = resume.take().filter(|_| !interrupted) {
                self.go_on(ai, resume);
                return;
            }
        }
        // Left first: this part's totals go to the tally before it ends.
        if self.current == Some(ai) {
            self.unfocus();
        }
        let active = self.io.active[ai].take().expect("a live directory");
        self.live -= 1;
        let Phase::Stating { batch, .. } = active.phase else {
            unreachable!("a directory ends after its stats")
        };
        if let Some(dir) = batch.parts.done(self.pool.shared) {
            self.worker.dir_done(self.pool.shared, &dir);
        }
    }
}
