//! An `ls -l` (the README's example): entries, then their metadata in one
//! call.

use tokio_uring_getdents::fs::{Dir, FileType, STATX_BASIC_STATS};

fn main() -> std::io::Result<()> {
    let path = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    tokio_uring_getdents::start(async {
        let mut dir = Dir::open(&path).await?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.next().await {
            entries.push(entry?);
        }
        let parent = dir.parent_metadata(STATX_BASIC_STATS).await?;
        println!("{:o} {:>8} ..", parent.mode() & 0o7777, parent.size());
        for (entry, meta) in dir.statx_many(entries, STATX_BASIC_STATS).await? {
            let meta = meta?;
            let kind = match meta.file_type() {
                FileType::Directory => 'd',
                FileType::Symlink => 'l',
                _ => '-',
            };
            print!(
                "{kind}{:o} {:>3} {:>5} {:>5} {:>8} ",
                meta.mode() & 0o7777,
                meta.nlink(),
                meta.uid(),
                meta.gid(),
                meta.size()
            );
            print!("{}", entry.file_name().display());
            if meta.is_symlink() {
                print!(" -> {}", dir.read_link(&entry).await?.display());
            }
            println!();
        }
        dir.close().await
    })
}
