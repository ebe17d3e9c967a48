//! A walker's reading: a directory opened and read with GETDENTS (chained
//! by `d_off`) or `getdents64`, its records parsed into entries.

use super::*;

impl<'p> Walker<'p> {
    /// Puts a unit of work in flight: opens and reads a directory (or
    /// starts reading it with GETDENTS), or takes a chunk.
    pub(super) fn start<'scope>(&mut self, work: Work, scope: &'scope Scope<'scope, 'p>) {
        let shared = self.pool.shared;
        let (dir, counted) = match work {
            Work::Chunk(batch, range) => {
                let active = Active {
                    dir: Arc::clone(&batch.dir),
                    phase: Phase::Stating {
                        next: range.start,
                        end: range.end,
                        batch,
                        resume: None,
                    },
                    pending: 0,
                };
                self.insert(active);
                return;
            }
            Work::Dir(dir, dev) => (dir, Counted::Yes(dev)),
            Work::Subdir(dir) => (dir, Counted::No),
        };
        let fd = match shared.open_to_read(&dir, counted, &mut self.cursor) {
            Ok(fd) => fd,
            Err(failed) => {
                self.unfocus();
                self.worker.enter(&dir);
                self.worker.open_failed(failed);
                self.worker.end_dir(shared);
                return;
            }
        };
        let (dev, leaf) = match counted {
            Counted::Yes(dev) => (dev, dir.small_leaf()),
            // Through the descriptor just opened, where a STATX by name
            // before the open went through an io-wq worker on a cold cache.
            Counted::No => {
                self.unfocus();
                self.worker.enter(&dir);
                let Some(st) = self.worker.count_opened(shared, fd.as_fd()) else {
                    self.worker.end_dir(shared);
                    return;
                };
                self.worker.leave(shared);
                (st.map(|st| st.dev), st.as_ref().is_some_and(small_leaf))
            }
        };
        let link_dev = self.link_dev(dev, fd.as_fd());
        if let (Some(code), Some(_)) = (self.pool.engine.getdents, &self.io.ring) {
            let plus = self.wants_plus(dev, leaf, fd.as_fd());
            let reading = Reading {
                fd,
                link_dev,
                names: Vec::new(),
                ents: Vec::new(),
                seq: 0,
                plus,
                buf: self
                    .spare_bufs
                    .pop()
                    .unwrap_or_else(|| (0..GETDENTS_BUF).map(|_| UnsafeCell::new(0)).collect()),
                offset: 0,
                submitted: Instant::now(),
                enter: 0,
                done: false,
                more: false,
                parts: None,
            };
            let ai = self.insert(Active {
                dir,
                phase: Phase::Reading(reading),
                pending: 0,
            });
            self.submit_read(ai, code);
            return;
        }
        // No GETDENTS: read it whole here, and see whether that blocked
        // (while that can still change something).
        let watch = !self.cold || self.pool.may_grow();
        let before = watch.then(|| (Instant::now(), sys::voluntary_switches()));
        let mut seq = 0;
        let end = self.trust.listing_end(dev, fd.as_fd());
        let (names, ents, error, more) = self.read_all(fd.as_fd(), &mut seq, end);
        let blocked = before.is_some_and(|(t0, switches)| {
            t0.elapsed() > SLOW_READ && sys::voluntary_switches() > switches
        });
        if blocked {
            self.went_cold(scope);
        }
        let ai = self.insert(Active {
            dir,
            phase: Phase::Reading(Reading {
                fd,
                link_dev,
                names,
                ents,
                seq,
                plus: PlusMode::Off,
                buf: Box::default(),
                offset: 0,
                submitted: Instant::now(),
                enter: 0,
                done: true,
                more,
                parts: None,
            }),
            pending: 0,
        });
        if let Some(cause) = error {
            self.focus(ai);
            self.worker.dir_error(Op::Read, cause);
        }
        self.begin_stating(ai, blocked);
    }

    /// Reads the directory `fd` with `getdents64` to its end or to a full
    /// window: its names, its entries, the error that stopped the reading
    /// if any, and whether the window filled up before the end. `end` is
    /// its filesystem's [`Trust::listing_end`].
    pub(super) fn read_all(
        &mut self,
        fd: BorrowedFd<'_>,
        seq: &mut u32,
        end: Option<u64>,
    ) -> (Vec<u8>, Vec<Ent>, Option<io::Error>, bool) {
        let (mut names, mut ents) = (Vec::new(), Vec::new());
        let (more, error) = match self.read_rest(fd, &mut names, &mut ents, seq, end) {
            Ok(ended) => (!ended, None),
            Err(e) => (false, Some(e)),
        };
        (names, ents, error, more)
    }

    /// Reads the directory `fd` from its position with `getdents64`,
    /// appending to `names`/`ents`, up to its end (true: a read returned
    /// nothing, or its last `d_off` was `end`) or a full window (false: a
    /// directory that never ends keeps one window in memory).
    pub(super) fn read_rest(
        &mut self,
        fd: BorrowedFd<'_>,
        names: &mut Vec<u8>,
        ents: &mut Vec<Ent>,
        seq: &mut u32,
        end: Option<u64>,
    ) -> io::Result<bool> {
        if self.read_buf.is_empty() {
            self.read_buf = (self.pool.shared.spares.buffer(READ_BUF, READ_BUF))
                .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        }
        while !self.pool.shared.interrupted() {
            if window_full(ents.len(), names.len()) {
                return Ok(false);
            }
            let n = getdents64(fd, &mut self.read_buf)?;
            if n == 0 {
                break;
            }
            let last = push_entries(&self.read_buf[..n], names, ents, seq)?;
            if last.is_some() && last == end {
                break;
            }
        }
        Ok(true)
    }

    /// Reads the rest of the directory `ai`, whose GETDENTS was cancelled,
    /// here with `getdents64`, from where GETDENTS stopped.
    pub(super) fn read_here(&mut self, ai: usize) -> Option<io::Error> {
        let Some(Active {
            phase: Phase::Reading(r),
            ..
        }) = &mut self.io.active[ai]
        else {
            unreachable!("only a directory being read is read")
        };
        let fd = Arc::clone(&r.fd);
        let (mut names, mut ents) = (std::mem::take(&mut r.names), std::mem::take(&mut r.ents));
        let mut seq = r.seq;
        let (more, error) = match seek_dir(fd.as_fd(), r.offset) {
            Err(e) => (false, Some(e)),
            Ok(()) => match self.read_rest(fd.as_fd(), &mut names, &mut ents, &mut seq, None) {
                Ok(ended) => (!ended, None),
                Err(e) => (false, Some(e)),
            },
        };
        if let Some(Active {
            phase: Phase::Reading(r),
            ..
        }) = &mut self.io.active[ai]
        {
            (r.names, r.ents, r.seq, r.done, r.more) = (names, ents, seq, true, more);
        }
        error
    }

    /// Whether the reads of a directory on `dev` (open as `fd`) ask for
    /// readdirplus: where the kernel has it, on a filesystem whose names
    /// the kernel can look up and stat without waiting (tmpfs, ext4, XFS,
    /// btrfs: those whose `->getattr()` never waits). Elsewhere (FUSE,
    /// network filesystems) every lookup of a read would wait in one io-wq
    /// worker, one after the other, where STATX chains wait side by side
    /// in many: a FUSE directory listed with readdirplus in the test VM
    /// listed fewer than 300 names in 20 s. The type comes from the
    /// walker's [`Trust`](crate::links::Trust): one `fstatfs` per device.
    /// Lookups from the dcache only while every name was there; once a
    /// name was not, the cache is cold, and a read from the dcache only
    /// costs more than STATX alone. Then a small directory without
    /// subdirectories (`leaf`, [`small_leaf`](crate::node::small_leaf):
    /// its files have their inodes side by side on disk) is read with
    /// lookups that wait, in one io-wq worker, as a chain of STATX would
    /// wait, but without a request per entry; any other (subdirectories'
    /// inodes spread over the disk, or too many inodes for one worker to
    /// wait for one after the other) gets STATX chains that wait side by
    /// side (docs/benchmarks.md, "The VM under icount").
    pub(super) fn wants_plus(
        &mut self,
        dev: Option<u64>,
        leaf: bool,
        fd: BorrowedFd<'_>,
    ) -> PlusMode {
        let engine = &self.pool.engine;
        let Some(dev) = dev.filter(|_| engine.plus) else {
            return PlusMode::Off;
        };
        let missed = engine.plus_missed.load(Ordering::Relaxed);
        let mode = match (engine.plus_dcache, missed, leaf) {
            // A kernel without lookups from the dcache only.
            (false, ..) => PlusMode::Lookups,
            (true, false, _) => PlusMode::Dcache,
            (true, true, true) => PlusMode::Lookups,
            (true, true, false) => return PlusMode::Off,
        };
        let nowait = matches!(
            self.trust.fs_type(dev, fd),
            Some(
                libc::TMPFS_MAGIC
                    | libc::EXT4_SUPER_MAGIC
                    | libc::XFS_SUPER_MAGIC
                    | libc::BTRFS_SUPER_MAGIC
            )
        );
        if nowait {
            mode
        } else {
            PlusMode::Off
        }
    }

    /// Queues the next GETDENTS of the directory `ai`.
    pub(super) fn submit_read(&mut self, ai: usize, code: u8) {
        let Some(Active {
            phase: Phase::Reading(r),
            pending,
            ..
        }) = &mut self.io.active[ai]
        else {
            unreachable!("only a directory being read is read")
        };
        let mut read = GetDents::new(
            types::Fd(r.fd.as_raw_fd()),
            UnsafeCell::raw_get(r.buf.as_ptr()),
            r.buf.len() as u32,
        )
        .offset(r.offset)
        .opcode(code);
        let mask = self.pool.shared.config.statx_mask();
        read = match r.plus {
            PlusMode::Off => read,
            PlusMode::Dcache => read.plus_dcache(mask),
            PlusMode::Lookups => read.plus(mask),
        };
        let sqe = read.build().user_data(READ_TAG | ai as u64);
        r.submitted = Instant::now();
        *pending += 1;
        // SAFETY: the buffer and the descriptor belong to the active
        // directory `ai`, which is not dropped while `pending` counts this
        // read, nor before every operation has completed (`drain`).
        unsafe { self.push(std::slice::from_ref(&sqe)) };
        let enter = self.io.enters;
        if let Some(Active {
            phase: Phase::Reading(r),
            ..
        }) = &mut self.io.active[ai]
        {
            r.enter = enter;
        }
    }

    /// The `io_uring_enter` that carries (or carried) the read of `ai`
    /// in flight.
    pub(super) fn read_enter(&self, ai: usize) -> u64 {
        match &self.io.active[ai] {
            Some(Active {
                phase: Phase::Reading(r),
                ..
            }) => r.enter,
            _ => unreachable!("a read completes on a directory being read"),
        }
    }

    /// A GETDENTS of `ai` completed.
    pub(super) fn on_read<'scope>(
        &mut self,
        ai: usize,
        Completed {
            res,
            flags,
            inline,
            reaped,
        }: Completed,
        scope: &'scope Scope<'scope, 'p>,
    ) {
        let code = self
            .pool
            .engine
            .getdents
            .expect("reads are submitted only with GETDENTS");
        let interrupted = self.pool.shared.interrupted();
        let Some(Active {
            phase: Phase::Reading(r),
            pending,
            ..
        }) = &mut self.io.active[ai]
        else {
            unreachable!("a read completes on a directory being read")
        };
        *pending -= 1;
        // A read completed during its submission never waited for the
        // disk, however long it took to be seen; the others are timed to
        // when they were reaped, not to when the completions reaped
        // before them in the same batch were handled.
        let slow = !inline && reaped.saturating_duration_since(r.submitted) > SLOW_GETDENTS;
        let mut error = None;
        if res == -libc::ECANCELED {
            // io-wq could not start a worker (`ulimit -u`): read it here.
            error = self.read_here(ai);
        } else if res < 0 {
            error = Some(io::Error::from_raw_os_error(-res));
        } else if res == 0 || interrupted {
            r.done = true;
        } else {
            let len = (res as usize).min(r.buf.len());
            // SAFETY: the completion has arrived, so the kernel no longer
            // writes to the buffer; it wrote `res` bytes (at most its
            // length). The buffer is a heap block of the active directory
            // `ai`, which `count_plus` neither ends nor gives a new one.
            let bytes =
                unsafe { std::slice::from_raw_parts(UnsafeCell::raw_get(r.buf.as_ptr()), len) };
            let pushed = if r.plus != PlusMode::Off {
                self.count_plus(ai, bytes)
            } else {
                push_entries(bytes, &mut r.names, &mut r.ents, &mut r.seq)
            };
            let Some(Active {
                phase: Phase::Reading(r),
                ..
            }) = &mut self.io.active[ai]
            else {
                unreachable!("a directory stays in its reading while it is counted")
            };
            match pushed {
                // The kernel saw the end: the next read would return 0
                // (and on ext4 be one more hand-off to io-wq).
                Ok(Some(_)) if cqe::dir_eof(flags) => r.done = true,
                // A position that does not move would read the same
                // records for ever.
                Ok(Some(offset)) if offset != r.offset => r.offset = offset,
                Ok(_) => r.done = true,
                Err(bad) => error = Some(bad),
            }
            if !r.done && window_full(r.ents.len(), r.names.len()) {
                (r.done, r.more) = (true, true);
            }
        }
        if slow {
            self.went_cold(scope);
        }
        if let Some(cause) = error {
            if let Some(Active {
                phase: Phase::Reading(r),
                ..
            }) = &mut self.io.active[ai]
            {
                r.done = true;
            }
            self.focus(ai);
            self.worker.dir_error(Op::Read, cause);
        }
        let done =
            matches!(&self.io.active[ai], Some(Active { phase: Phase::Reading(r), .. }) if r.done);
        if done {
            self.begin_stating(ai, slow || self.cold);
        } else {
            self.submit_read(ai, code);
        }
    }
}
