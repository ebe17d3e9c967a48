//! A small per-thread stock of read buffers.
//!
//! A walk opens many directories, most read in one or two reads; taking
//! the buffer from here and giving it back as soon as the directory is at
//! its end (not when the `Dir` is dropped, which may be much later, e.g.
//! a parent kept for `open_at`) saves an allocation and a zeroing per
//! directory and keeps the memory in use to the directories being read.

use std::cell::RefCell;

/// Buffers kept per thread; more are freed.
const KEEP: usize = 64;

thread_local! {
    static STOCK: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of exactly `len` bytes (old contents possible: only bytes the
/// kernel reports as written are ever read).
pub(crate) fn take(len: usize) -> Box<[u8]> {
    let reused = STOCK.with(|stock| {
        let mut stock = stock.borrow_mut();
        let found = stock.iter().rposition(|buf| buf.len() == len)?;
        Some(stock.swap_remove(found))
    });
    reused.unwrap_or_else(|| vec![0u8; len].into_boxed_slice())
}

/// Returns a buffer for reuse by a later `take` on this thread.
pub(crate) fn give(buf: Box<[u8]>) {
    // `try_with`: during thread teardown the stock may be gone already.
    let _ = STOCK.try_with(|stock| {
        let mut stock = stock.borrow_mut();
        if stock.len() < KEEP {
            stock.push(buf);
        }
    });
}
