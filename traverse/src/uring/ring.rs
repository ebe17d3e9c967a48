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
        let this_enter = self.io.enters;
        self.io.enters += 1;
        let ring = self
            .io
            .ring
            .as_mut()
            .expect("operations are in flight only with a ring");
        // While a slow GETDENTS may still mean a cold cache, tell the reads
        // completed during their submission: they did not wait for the disk
        // however long they took to be seen (a walker preempted between
        // submission and completion, or the other CPU's turn in QEMU, is
        // no cold cache).
        let probe = !self.cold && self.pool.engine.getdents.is_some();
        let (mut done, inline) = submit_and_reap(ring, want, probe);
        let reaped = Instant::now();
        self.io.in_flight -= done.len();
        // Completions are in the order they were posted: the first
        // `inline` were there when the submission returned.
        for (n, (user_data, res, flags)) in done.drain(..).enumerate() {
            if user_data == CANCEL_TAG {
                continue;
            }
            if user_data & READ_TAG != 0 {
                let ai = (user_data & !READ_TAG) as usize;
                let completed = Completed {
                    res,
                    flags,
                    inline: n < inline && self.read_enter(ai) == this_enter,
                    reaped,
                };
                self.on_read(ai, completed, scope);
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
    /// `io_uring_enter` calls that submitted so far: the number of the
    /// next one, which carries what is pushed now.
    pub(super) enters: u64,
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
            enters: 0,
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

/// Submits what is queued and waits until `want` completions are there
/// (a [`WAIT_SLICE`] at most where the kernel takes a timeout, so that
/// SIGINT is seen while they are far away). Returns every completion, as
/// (user data, result, flags) in the order they were posted, and how many
/// of the first were there when the submission returned: posted during
/// it, inline. With `probe` it submits without waiting first, one more
/// system call when those are fewer than `want`; without, it says 0.
pub(super) fn submit_and_reap(
    ring: &mut IoUring,
    want: usize,
    probe: bool,
) -> (Vec<(u64, i32, u32)>, usize) {
    let mut inline = 0;
    if probe {
        if let Err(e) = ring.submit() {
            if !retry(&e) {
                panic!("io_uring_enter failed: {e}");
            }
        }
        inline = ring.completion().len();
    }
    let waited = if inline >= want {
        Ok(0)
    } else if ring.params().is_feature_ext_arg() {
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
    let done = ring
        .completion()
        .map(|cqe| (cqe.user_data(), cqe.result(), cqe.flags()))
        .collect();
    (done, inline)
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

    /// A NOP completes during its submission, a timeout later: the
    /// probing submission tells the one from the other.
    #[test]
    fn completions_posted_during_the_submission_are_counted_inline() {
        if let Err(why) = available() {
            println!("skipped: {why}");
            return;
        }
        let after = types::Timespec::new().nsec(30_000_000);
        for probe in [true, false] {
            let mut ring = new_ring().expect("a ring");
            let sqes = [
                opcode::Nop::new().build().user_data(1),
                opcode::Timeout::new(&after).build().user_data(2),
            ];
            // SAFETY: the kernel copies the timespec when it takes the
            // request in, during the submission below, while `after` is
            // borrowed.
            unsafe { ring.submission().push_multiple(&sqes) }.expect("room in a new ring");
            let (done, inline) = submit_and_reap(&mut ring, 2, probe);
            let order: Vec<u64> = done.iter().map(|&(user_data, ..)| user_data).collect();
            assert_eq!(order, [1, 2], "probe {probe}");
            assert_eq!(inline, usize::from(probe), "probe {probe}");
        }
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
