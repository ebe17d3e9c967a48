//! NUL-terminated names handed to the kernel.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

/// A name the kernel reads during an operation. It lives in the
/// operation's stable data, so the pointer in the SQE stays valid until
/// the completion.
pub(crate) enum CName {
    Owned(CString),
    /// A name inside a batch of records: already NUL-terminated, so a
    /// statx or open of a listed entry copies nothing.
    InBatch {
        batch: Arc<[u8]>,
        start: usize,
    },
    /// `""`, for `AT_EMPTY_PATH`.
    Empty,
}

impl CName {
    pub(crate) fn as_ptr(&self) -> *const c_char {
        match self {
            CName::Owned(name) => name.as_ptr(),
            CName::InBatch { batch, start } => batch[*start..].as_ptr().cast(),
            CName::Empty => c"".as_ptr(),
        }
    }

    pub(crate) fn as_os_str(&self) -> &OsStr {
        let bytes = match self {
            CName::Owned(name) => name.to_bytes(),
            CName::InBatch { batch, start } => CStr::from_bytes_until_nul(&batch[*start..])
                .unwrap_or_default()
                .to_bytes(),
            CName::Empty => b"",
        };
        OsStr::from_bytes(bytes)
    }

    /// A whole path (for calls relative to the working directory).
    pub(crate) fn from_path(path: &Path) -> io::Result<CName> {
        CString::new(path.as_os_str().as_bytes())
            .map(CName::Owned)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
    }
}
