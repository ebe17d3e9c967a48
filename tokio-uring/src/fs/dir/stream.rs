//! `Dir` as a stream: the next entry, `Stream`, and moving the read
//! position.

use super::*;

impl Dir {
    /// The next entry; `None` at the end.
    ///
    /// # Errors
    ///
    /// A failed read gives one error naming the directory (for example
    /// `NotFound` after the directory was removed, or `InvalidData` for a
    /// corrupt record); every later call returns `None` until a
    /// [`seek`](Dir::seek). Never panics, however often it is called.
    ///
    /// # Example
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let mut dir = tokio_uring_getdents::fs::Dir::open(".").await?;
    ///     let mut count = 0;
    ///     while let Some(entry) = dir.next().await {
    ///         entry?;
    ///         count += 1;
    ///     }
    ///     println!("{count} entries");
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub async fn next(&mut self) -> Option<io::Result<DirEntry>> {
        poll_fn(|cx| self.poll_entry(cx)).await
    }

    /// Moves the read position: the next entry returned is the one after
    /// the entry whose [`offset`](DirEntry::offset) is `offset`; 0 (or
    /// [`rewind`](Dir::rewind)) starts again from the beginning. Entries
    /// already buffered are dropped, a read in flight is ignored, and an
    /// earlier error or end is forgotten.
    ///
    /// Only 0 and offsets this directory returned are meaningful; others
    /// give whatever the file system makes of them, possibly an `EINVAL`
    /// error from the next read.
    ///
    /// # Example
    ///
    /// ```
    /// use tokio_uring_getdents::fs::Dir;
    ///
    /// tokio_uring::start(async {
    ///     let mut dir = Dir::open(".").await?;
    ///     if let Some(first) = dir.next().await.transpose()? {
    ///         // Later, maybe in another Dir: continue after `first`.
    ///         let mut again = Dir::open(".").await?;
    ///         again.seek(first.offset());
    ///         let second = again.next().await.transpose()?;
    ///         println!("{first:?} then {second:?}");
    ///     }
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn seek(&mut self, offset: u64) {
        self.batch = None;
        self.pos = 0;
        self.next_offset = offset;
        self.reposition = true;
        match self.read {
            Read::Ring(_) | Read::Thread(_) => self.discard = true,
            Read::Idle | Read::End | Read::Failed(_) => self.read = Read::Idle,
        }
    }

    /// Starts again from the first entry: `seek(0)`.
    ///
    /// ```
    /// tokio_uring::start(async {
    ///     let mut dir = tokio_uring_getdents::fs::Dir::open(".").await?;
    ///     while dir.next().await.transpose()?.is_some() {}
    ///     dir.rewind();
    ///     assert!(dir.next().await.is_some());
    ///     Ok::<_, std::io::Error>(())
    /// })?;
    /// # Ok::<_, std::io::Error>(())
    /// ```
    pub fn rewind(&mut self) {
        self.seek(0);
    }
}

impl Stream for Dir {
    type Item = io::Result<DirEntry>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_entry(cx)
    }
}
