//! Names of directory entries as callers pass them to operations relative
//! to a directory.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::DirEntry;
use crate::op::name::CName;

/// The name of an entry of a directory, for [`Dir::statx`] and
/// [`Dir::open_at`]: a [`&DirEntry`](DirEntry) (its name is used without a
/// copy) or any `&str`, `&OsStr`, `&Path` (and their owned forms by
/// reference).
///
/// The name must be one path component: not empty, no `/`, no NUL, not
/// `.` or `..`; so an operation relative to a directory cannot leave it.
///
/// [`Dir::statx`]: super::Dir::statx
/// [`Dir::open_at`]: super::Dir::open_at
///
/// # Example
///
/// ```
/// use tokio_uring_getdents::fs::ChildName;
/// let _from_str: ChildName<'_> = "Cargo.toml".into();
/// let _from_path: ChildName<'_> = std::path::Path::new("src").into();
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ChildName<'a>(Inner<'a>);

#[derive(Clone, Copy, Debug)]
enum Inner<'a> {
    Entry(&'a DirEntry),
    Name(&'a OsStr),
}

impl ChildName<'_> {
    /// The name as the kernel will see it.
    pub(crate) fn to_cname(self) -> io::Result<CName> {
        match self.0 {
            Inner::Entry(entry) => Ok(entry.cname()),
            Inner::Name(name) => {
                let bytes = name.as_bytes();
                if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not a single path component (empty, `.`, `..` or containing `/`)",
                    ));
                }
                CString::new(bytes).map(CName::Owned).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte")
                })
            }
        }
    }

    /// The name for error messages.
    pub(crate) fn as_os_str(&self) -> &OsStr {
        match self.0 {
            Inner::Entry(entry) => entry.file_name(),
            Inner::Name(name) => name,
        }
    }
}

impl<'a> From<&'a DirEntry> for ChildName<'a> {
    fn from(entry: &'a DirEntry) -> ChildName<'a> {
        ChildName(Inner::Entry(entry))
    }
}

impl<'a> From<&'a OsStr> for ChildName<'a> {
    fn from(name: &'a OsStr) -> ChildName<'a> {
        ChildName(Inner::Name(name))
    }
}

impl<'a> From<&'a OsString> for ChildName<'a> {
    fn from(name: &'a OsString) -> ChildName<'a> {
        ChildName(Inner::Name(name))
    }
}

impl<'a> From<&'a str> for ChildName<'a> {
    fn from(name: &'a str) -> ChildName<'a> {
        ChildName(Inner::Name(name.as_ref()))
    }
}

impl<'a> From<&'a String> for ChildName<'a> {
    fn from(name: &'a String) -> ChildName<'a> {
        ChildName(Inner::Name(name.as_ref()))
    }
}

impl<'a> From<&'a Path> for ChildName<'a> {
    fn from(name: &'a Path) -> ChildName<'a> {
        ChildName(Inner::Name(name.as_os_str()))
    }
}

impl<'a> From<&'a PathBuf> for ChildName<'a> {
    fn from(name: &'a PathBuf) -> ChildName<'a> {
        ChildName(Inner::Name(name.as_os_str()))
    }
}
