//! What one root's walk set up and the next root of the same
//! [`Walk`](crate::Walk) reuses: zeroed directory buffers for any thread,
//! and the `uring` engine's ring for the thread that made it. 20 000 small
//! PATHs then cost about one set-up, not 20 000 (zeroing a 1 MiB buffer
//! and setting up a ring were most of a small PATH's time).

use std::sync::Mutex;
use std::thread::ThreadId;

use io_uring_getdents::io_uring::IoUring;

use crate::sys::StatxBuf;

/// The spare buffers and ring of a [`Walk`](crate::Walk).
#[derive(Default)]
pub(crate) struct Spares {
    pub ring: SpareRing,
    /// Zeroed once, then handed from one walk to the next.
    buffers: Mutex<Vec<Vec<u8>>>,
}

impl Spares {
    /// A buffer of `len` bytes, else of `fallback` bytes when memory is
    /// short (`ulimit -v`); `None` when neither can be had.
    pub fn buffer(&self, len: usize, fallback: usize) -> Option<Vec<u8>> {
        let mut kept = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = kept.iter().position(|b| b.len() == len) {
            return Some(kept.swap_remove(i));
        }
        drop(kept);
        let mut buf = Vec::new();
        if buf.try_reserve_exact(len).is_err() && buf.try_reserve_exact(fallback).is_err() {
            return None;
        }
        buf.resize(buf.capacity().min(len), 0);
        Some(buf)
    }

    /// Keeps `buf` for a later walk, one per CPU at most (more are freed:
    /// a large `-j` does not keep its memory after the walk).
    pub fn give_back(&self, buf: Vec<u8>) {
        let mut kept = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < crate::sys::cpus() {
            kept.push(buf);
        }
    }
}

/// A `uring` walker's ring and statx buffers, kept for the next root. Only
/// for the thread that created the ring (it is the ring's single issuer),
/// and only once nothing of it is in flight. Defined here rather than in
/// the `uring` engine, so that the spares, which the settings every engine
/// shares hold, import no engine.
#[derive(Default)]
pub(crate) struct SpareRing(Mutex<Option<Kept>>);

/// What [`SpareRing`] keeps.
pub(crate) struct Kept {
    thread: ThreadId,
    pub ring: IoUring,
    pub bufs: Box<[StatxBuf]>,
}

impl SpareRing {
    /// The ring this thread left, if any.
    pub fn take(&self) -> Option<Kept> {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match spare.take() {
            Some(kept) if kept.thread == std::thread::current().id() => Some(kept),
            other => {
                *spare = other;
                None
            }
        }
    }

    /// Keeps this thread's idle ring for the next walk.
    pub fn keep(&self, ring: IoUring, bufs: Box<[StatxBuf]>) {
        let thread = std::thread::current().id();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Kept { thread, ring, bufs });
    }
}

impl std::fmt::Debug for SpareRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpareRing")
    }
}

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Spares")
    }
}
