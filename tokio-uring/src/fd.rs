//! A directory descriptor shared by its `Dir` and the operations using it.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;

/// Shared ownership of an open descriptor.
///
/// Every operation that names the descriptor in an SQE keeps a clone in its
/// stable data, so the descriptor is closed only when the last of the `Dir`
/// and its in-flight operations is gone, never while the kernel may use it.
/// `Arc` rather than `Rc` because the fallback backend reads on a blocking
/// thread.
#[derive(Clone, Debug)]
pub(crate) struct SharedFd(Arc<OwnedFd>);

impl SharedFd {
    pub(crate) fn new(fd: OwnedFd) -> SharedFd {
        SharedFd(Arc::new(fd))
    }

    pub(crate) fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    pub(crate) fn borrow(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.0.as_fd()
    }

    /// The descriptor itself if no operation holds it any more.
    pub(crate) fn into_owned(self) -> Option<OwnedFd> {
        Arc::into_inner(self.0)
    }
}
