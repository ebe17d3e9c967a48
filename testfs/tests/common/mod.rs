//! What the test files share: whether this machine can mount FUSE.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Why this process cannot mount testfs, if it cannot. Tests print
/// "skipped: <why>" and return in that case.
pub fn cannot_mount() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    // /proc/self belongs to the effective user: no unsafe geteuid needed.
    if fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        return None;
    }
    let helper = ["/usr/bin/fusermount3", "/bin/fusermount3"]
        .iter()
        .any(|p| Path::new(p).exists());
    if !helper {
        return Some("not root and no fusermount3 (Debian package fuse3)".into());
    }
    // fuser opens /dev/fuse as the caller before it falls back to
    // fusermount3, so a device only root may open rules out non-root.
    if let Err(err) = OpenOptions::new().read(true).write(true).open("/dev/fuse") {
        return Some(format!("not root and cannot open /dev/fuse: {err}"));
    }
    None
}
