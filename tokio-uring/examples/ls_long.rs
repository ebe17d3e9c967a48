//! An `ls -l` (the README's example): entries, then their metadata in one
//! call, and the links' targets in another.

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
        let stats = dir.statx_many(entries, STATX_BASIC_STATS).await?;
        // The links' targets in one more call, not one call per link.
        let links = stats
            .iter()
            .filter(|(_, meta)| meta.as_ref().is_ok_and(|m| m.is_symlink()));
        let mut targets = dir
            .read_links(links.map(|(entry, _)| entry))
            .await?
            .into_iter();
        for (entry, meta) in stats {
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
                let target = targets.next().expect("a target for each link");
                print!(" -> {}", target?.display());
            }
            println!();
        }
        dir.close().await
    })
}
