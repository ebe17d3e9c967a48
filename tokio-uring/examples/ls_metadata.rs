//! Every entry of a directory with its metadata, read with the listing
//! (`DirBuilder::entry_metadata`): the README's example.
//!
//! `cargo run -p tokio-uring-getdents --example ls_metadata`

use tokio_uring_getdents::fs::{Dir, STATX_BASIC_STATS};

fn main() -> std::io::Result<()> {
    tokio_uring_getdents::start(async {
        let mut dir = Dir::builder()
            .entry_metadata(STATX_BASIC_STATS)
            .open(".")
            .await?;
        while let Some(entry) = dir.next().await {
            let entry = entry?;
            // None only without entry_metadata; an error if the entry went
            // away between the read and its lookup (NotFound).
            if let Some(meta) = entry.metadata() {
                let meta = meta?;
                println!(
                    "{:o} {:>8} {}",
                    meta.mode(),
                    meta.size(),
                    entry.file_name().display()
                );
            }
        }
        println!("readdirplus: {}", dir.readdirplus());
        dir.close().await
    })
}
