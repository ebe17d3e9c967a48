//! A walker's ring: its set-up and io-wq sizing, and the waits for
//! completions.

use super::*;

/// The ring of one worker: created on its own thread, so the io-wq pool
/// it sizes is that thread's.
///
/// Not `IORING_SETUP_DEFER_TASKRUN`: with it io-wq hands every completion
/// back to this thread as task work, so the request linked after it is
/// issued from here again, and a [`CHAIN`] of stats would cost a round
/// trip per link instead of running in one io-wq worker.
pub(super) fn new_ring() -> io::Result<IoUring> {
    let ring = IoUring::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .build(QUEUE as u32)
        .or_else(|_| IoUring::new(QUEUE as u32))?;
    set_iowq(&ring, IOWQ_WARM);
    Ok(ring)
}

/// Caps this thread's bounded io-wq pool at `n` workers (unbounded left as
/// is); a kernel without the call (before 5.15) keeps its default.
pub(super) fn set_iowq(ring: &IoUring, n: u32) {
    let mut max = [n, 0];
    let _ = ring.submitter().register_iowq_max_workers(&mut max);
}

impl<'p> Walker<'p> {
    /// Sleeps until a quarter of what is in flight has completed (at least
    /// one; one on a cold cache with GETDENTS), submitting what is queued
    /// in the same call; handles what completed.
    pub(super) fn wait<'scope>(&mut self, scope: &'scope Scope<'scope, 'p>) {
        // A cold GETDENTS takes a device read; waiting for a quarter of
        // them kept the subdirectories of the first ones out of the
        // device's queue (5 ms per request: 12.8 requests in flight
        // instead of 13.5).
        let want = if self.cold && self.pool.engine.getdents.is_some() {
            1
        } else {
            (self.io.in_flight / 4).max(1)
        };
        let ring = self
            .io
            .ring
            .as_mut()
            .expect("operations are in flight only with a ring");
        // A slice at a time where the kernel takes a timeout (5.11), so
        // that SIGINT is seen while the completions are far away.
        let waited = if ring.params().is_feature_ext_arg() {
            let slice = types::Timespec::from(WAIT_SLICE);
            let args = types::SubmitArgs::new().timespec(&slice);
            ring.submitter().submit_with_args(want, &args)
        } else {
            ring.submit_and_wait(want)
        };
        if let Err(e) = waited {
            if !retry(&e) && e.raw_os_error() != Some(libc::ETIME) {
                panic!("io_uring_enter failed: {e}");
            }
        }
        let mut done: Vec<(u64, i32, u32)> = ring
            .completion()
            .map(|cqe| (cqe.user_data(), cqe.result(), cqe.flags()))
            .collect();
        self.io.in_flight -= done.len();
        for (user_data, res, flags) in done.drain(..) {
            if user_data == CANCEL_TAG {
                continue;
            }
            if user_data & READ_TAG != 0 {
                self.on_read((user_data & !READ_TAG) as usize, res, flags, scope);
                continue;
            }
            let slot = user_data as usize;
            let (ai, i) = self.io.slots[slot];
            let result = if res == -libc::ECANCELED {
                // io-wq could not start a worker to run it (`ulimit -u`):
                // stat it here.
                let active = self.io.active[ai].as_ref().expect("a live directory");
                let Phase::Stating { batch, .. } = &active.phase else {
                    unreachable!("stats complete in the stat phase")
                };
                sys::statx(
                    Some(batch.fd.as_fd()),
                    batch.ents[i].name(&batch.names),
                    self.pool.shared.config.statx_mask(),
                )
            } else if res < 0 {
                Err(io::Error::from_raw_os_error(-res))
            } else {
                // SAFETY: the STATX into this slot completed successfully,
                // so the kernel filled the struct and writes it no more.
                Ok(Stat::from_statx(unsafe {
                    (*self.io.bufs[slot].get()).assume_init_ref()
                }))
            };
            self.io.free.push(slot);
            let active = self.io.active[ai].as_mut().expect("a live directory");
            active.pending -= 1;
            let Phase::Stating {
                batch, next, end, ..
            } = &active.phase
            else {
                unreachable!("stats complete in the stat phase")
            };
            let batch = Arc::clone(batch);
            let over = *next == *end && active.pending == 0;
            self.stat_done(ai, &batch, i, result);
            if over {
                self.end_dir(ai);
            }
        }
    }
}

/// A walker's ring and everything its operations in flight point to: the
/// statx results (one per slot; `slots[i]` says whose), the directories
/// with their GETDENTS buffers, names and descriptors. Dropped, it waits
/// for every completion before any of them is freed.
pub(super) struct Io {
    /// `None` when no ring could be set up (then every stat is a direct
    /// `statx`, as in the `threads` engine), or after
    /// [`Walker::abandon`](super::Walker::abandon).
    pub(super) ring: Option<IoUring>,
    /// Operations pushed to the ring and not yet completed.
    pub(super) in_flight: usize,
    pub(super) bufs: Box<[StatxBuf]>,
    pub(super) slots: Vec<(usize, usize)>,
    pub(super) free: Vec<usize>,
    pub(super) active: Vec<Option<Active>>,
}

impl Io {
    /// `ring` (if any) with `bufs`, a statx buffer for each of its
    /// [`QUEUE`] slots, and nothing in flight.
    pub(super) fn new(ring: Option<IoUring>, bufs: Box<[StatxBuf]>) -> Io {
        Io {
            ring,
            in_flight: 0,
            bufs,
            slots: vec![(0, 0); QUEUE],
            free: (0..QUEUE).rev().collect(),
            active: Vec::new(),
        }
    }

    /// Waits for every operation in flight, discarding the results (an
    /// interrupted walk, or the end). If the ring fails, the buffers the
    /// kernel may still write are leaked rather than freed.
    pub(super) fn drain(&mut self) {
        while self.in_flight > 0 {
            let Some(ring) = self.ring.as_mut() else {
                break;
            };
            if let Err(e) = ring.submit_and_wait(1) {
                if !retry(&e) {
                    std::mem::forget(std::mem::take(&mut self.bufs));
                    std::mem::forget(std::mem::take(&mut self.active));
                    self.in_flight = 0;
                    return;
                }
            }
            let n = ring.completion().count();
            self.in_flight -= n;
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        self.drain();
    }
}

/// Whether an `io_uring_enter` error is worth calling again: a signal, or
/// the kernel short of memory or room for completions for a moment.
pub(super) fn retry(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `Io` on a new ring with a timeout of `after` in flight, or
    /// `None` (printed) where this process cannot use io_uring.
    fn io_waiting(after: &types::Timespec) -> Option<Io> {
        if let Err(why) = available() {
            println!("skipped: {why}");
            return None;
        }
        let mut io = Io::new(Some(new_ring().expect("a ring")), Box::default());
        let sqe = opcode::Timeout::new(after).build().user_data(1);
        let ring = io.ring.as_mut().unwrap();
        // SAFETY: the kernel copies the timespec when it takes the request
        // in, during the submit below, while `after` is borrowed.
        unsafe { ring.submission().push(&sqe) }.expect("room in a new ring");
        ring.submit().expect("io_uring_enter");
        io.in_flight = 1;
        Some(io)
    }

    #[test]
    fn dropping_an_io_waits_for_what_is_in_flight() {
        let after = types::Timespec::new().nsec(200_000_000);
        let Some(io) = io_waiting(&after) else {
            return;
        };
        let start = Instant::now();
        drop(io);
        assert!(
            start.elapsed() >= Duration::from_millis(200),
            "dropped after {:?}, before the timeout completed",
            start.elapsed()
        );
    }

    #[test]
    fn drain_reaps_every_completion_and_keeps_the_ring() {
        let after = types::Timespec::new().nsec(20_000_000);
        let Some(mut io) = io_waiting(&after) else {
            return;
        };
        io.drain();
        assert_eq!(io.in_flight, 0);
        let ring = io.ring.as_mut().expect("the ring is kept");
        assert!(ring.completion().is_empty(), "a completion left unreaped");
    }
}
