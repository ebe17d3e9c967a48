//! The program from the issue, unchanged but for the `use` line: lists the
//! working directory.

use tokio_uring_getdents::fs::Dir;

fn main() -> std::io::Result<()> {
    tokio_uring::start(async {
        let mut dir = Dir::open(".").await?;
        while let Some(entry) = dir.next().await {
            let entry = entry?;
            println!("entry: {}", entry.file_name().display());
        }
        dir.close().await?;
        Ok::<_, std::io::Error>(())
    })
}
