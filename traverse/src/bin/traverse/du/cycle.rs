//! du's warning about a directory cycle that no mount point explains (a
//! corrupted filesystem, or one that reports an ancestor's inode number
//! for a directory): fts reports it as `FTS_DC`, and du warns when it
//! follows no link there (coreutils' `cycle_warning_required`) unless a
//! directory of the cycle is a mount point (a bind mount of an ancestor,
//! `mount_point_in_fts_cycle`).

use std::ffi::CString;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{text, Deref};

/// du's words for the cycle met at `path`, a directory that is its
/// ancestor `ancestor`, at `depth` below its PATH; `None` when du passes
/// over it silently.
pub fn warning(deref: Deref, path: &Path, ancestor: &Path, depth: usize) -> Option<String> {
    let warns = match deref {
        Deref::Never => true,
        Deref::Args => depth > 0,
        Deref::Always => false,
    };
    if !warns
        || path
            .ancestors()
            .take_while(|p| *p != ancestor)
            .any(mount_root)
    {
        return None;
    }
    Some(format!(
        "WARNING: Circular directory structure.\n\
         This almost certainly means that you have a corrupted file system.\n\
         NOTIFY YOUR SYSTEM MANAGER.\n\
         The following directory is part of the cycle:\n  {}\n",
        text::quote_if_needed(path.as_os_str().as_bytes())
    ))
}

/// Whether `dir` is the root of a mount: `STATX_ATTR_MOUNT_ROOT` (Linux
/// 5.8), else a device other than its parent's.
fn mount_root(dir: &Path) -> bool {
    let Ok(name) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut stx = MaybeUninit::<libc::statx>::zeroed();
    let flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT;
    // SAFETY: `name` is NUL-terminated and `stx` writable statx memory,
    // both alive through the call.
    let r = unsafe { libc::statx(libc::AT_FDCWD, name.as_ptr(), flags, 0, stx.as_mut_ptr()) };
    if r != 0 {
        return false;
    }
    // SAFETY: zeroed, then filled in by the successful call.
    let stx = unsafe { stx.assume_init() };
    let bit = libc::STATX_ATTR_MOUNT_ROOT as u64;
    if stx.stx_attributes_mask & bit != 0 {
        return stx.stx_attributes & bit != 0;
    }
    use std::os::unix::fs::MetadataExt;
    let dev = |p: &Path| std::fs::symlink_metadata(p).map(|m| m.dev()).ok();
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    dev(dir) != dev(parent.unwrap_or(Path::new(".")))
}
