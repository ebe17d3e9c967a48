//! Walks a tree from an ordinary `#[tokio::main]` application: the walk
//! runs on a thread with its own tokio-uring runtime
//! (`WalkBuilder::spawn`) and the entries come back over a channel.
//! Prints the number of files and their bytes per depth, skipping `.git`
//! and `target` directories.
//!
//! `cargo run -p tokio-uring-getdents --example walk -- [DIR]`

use std::collections::BTreeMap;

use tokio_uring_getdents::fs::{FileType, STATX_SIZE};
use tokio_uring_getdents::walk::{Visit, WalkBuilder};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let root = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let mut walk = WalkBuilder::new(&root)
        .statx(STATX_SIZE)
        .max_open(64)
        .filter(|entry| match entry.file_name().to_str() {
            Some(".git" | "target") if entry.depth() > 0 => Visit::Skip,
            _ => Visit::Continue,
        })
        .spawn()?;
    // depth -> (files, bytes)
    let mut per_depth: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    while let Some(entry) = walk.next().await {
        match entry {
            Ok(entry) if entry.file_type() == FileType::Regular => {
                let size = entry.metadata().map_or(0, |m| m.size());
                let row = per_depth.entry(entry.depth()).or_default();
                row.0 += 1;
                row.1 += size;
            }
            Ok(_) => {}
            // The error names the path; the walk goes on.
            Err(e) => eprintln!("walk: {e}"),
        }
    }
    for (depth, (files, bytes)) in per_depth {
        println!("depth {depth}: {files} files, {bytes} bytes");
    }
    Ok(())
}
