//! A `Dir`'s reads: the reader's state, a read submitted (GETDENTS on the
//! ring, or `getdents64` on the blocking pool), its completion taken in
//! and the next read started from the last record's `d_off`.

use super::records::first_record;
use super::*;

/// The reader's state.
pub(super) enum Read {
    /// Nothing in flight; the next read may start.
    Idle,
    /// A GETDENTS in flight.
    Ring(InFlightRead),
    /// A fallback fill on the blocking pool, or the entry metadata of a
    /// GETDENTS without readdirplus.
    Thread(JoinHandle<Fill>),
    /// The last read returned 0.
    End,
    /// An error to return once; `None` afterwards.
    Failed(Option<io::Error>),
}

impl Dir {
    pub(super) fn poll_entry(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<DirEntry>>> {
        loop {
            if let Some(item) = self.next_buffered() {
                return Poll::Ready(Some(item));
            }
            match &mut self.read {
                Read::Idle => self.start_read(),
                Read::Ring(op) => {
                    let (res, buf, end) = ready!(Pin::new(op).poll(cx));
                    self.read = Read::Idle;
                    match (res, self.at.config().metadata) {
                        (Ok(n), EntryMetadata::Statx(mask)) if n > 0 && !self.discard => {
                            // No readdirplus: stat the entries on the
                            // blocking pool, one job for the whole read.
                            let fd = self.at.shared_fd().clone();
                            self.read = Read::Thread(tokio::task::spawn_blocking(move || {
                                with_metadata(&fd, buf, n, end, mask)
                            }));
                        }
                        (res, _) => self.finish_read(res, Some(buf), None, end),
                    }
                }
                Read::Thread(task) => {
                    let joined = ready!(Pin::new(task).poll(cx));
                    self.read = Read::Idle;
                    match joined {
                        Ok(fill) => {
                            self.finish_read(fill.res, Some(fill.buf), fill.records, fill.end)
                        }
                        Err(e) => self.finish_read(Err(io::Error::other(e)), None, None, false),
                    }
                }
                Read::End => return Poll::Ready(None),
                Read::Failed(err) => return Poll::Ready(err.take().map(Err)),
            }
        }
    }

    pub(super) fn start_read(&mut self) {
        let buf = self
            .buf
            .take()
            .unwrap_or_else(|| pool::take(self.at.config().buffer_size));
        let fd = self.at.shared_fd();
        let metadata = self.at.config().metadata;
        self.read = match self.at.backend() {
            Backend::Getdents { opcode } => {
                let plus = match metadata {
                    EntryMetadata::Plus(mask) => Some(mask),
                    EntryMetadata::None | EntryMetadata::Statx(_) => None,
                };
                Read::Ring(getdents(fd, buf, self.next_offset, opcode, plus))
            }
            Backend::Fallback => {
                let fd = fd.clone();
                let seek_to = mem::take(&mut self.reposition).then_some(self.next_offset);
                let mask = metadata.mask();
                Read::Thread(tokio::task::spawn_blocking(move || {
                    fill(fd, buf, seek_to, mask)
                }))
            }
        };
    }

    /// Takes in the result of a read of `res` bytes, in `buf` or, when
    /// the records were rewritten with their metadata, in `records`; `end`
    /// when the reader already saw the end of the directory after them.
    pub(super) fn finish_read(
        &mut self,
        res: io::Result<usize>,
        buf: Option<Box<[u8]>>,
        records: Option<Vec<u8>>,
        end: bool,
    ) {
        self.buf = buf;
        if mem::take(&mut self.discard) {
            // A seek came while this read was in flight.
            return;
        }
        let filled = match res {
            Ok(0) => {
                self.read = Read::End;
                self.release_buffer();
                return;
            }
            Ok(n) => match &records {
                Some(records) => records.get(..n),
                None => self.buf.as_deref().and_then(|buf| buf.get(..n)),
            },
            Err(e) => {
                self.read = Read::Failed(Some(self.read_error(e)));
                return;
            }
        };
        let Some(filled) = filled else {
            let e = io::Error::new(
                io::ErrorKind::InvalidData,
                "the kernel reported more bytes than the buffer holds",
            );
            self.read = Read::Failed(Some(self.read_error(e)));
            return;
        };
        // Copying the records (one allocation and a memcpy per read) frees
        // the kernel buffer for the next read right away and keeps what
        // entries pin down to the bytes actually read.
        let batch: Arc<[u8]> = Arc::from(filled);
        self.pos = 0;
        // Chain by the last record's d_off, and read ahead while the caller
        // consumes this batch. A corrupt batch stops the chain; its error
        // comes out of `next_buffered` in order.
        let mut last = None;
        let mut intact = true;
        let mut pos = 0;
        while let Some(record) = first_record(&batch[pos..], self.plus_records()) {
            match record {
                Ok((record, len)) => {
                    last = Some(record.offset());
                    pos += len;
                }
                Err(_) => {
                    intact = false;
                    break;
                }
            }
        }
        self.batch = Some(batch);
        match last {
            Some(_) if intact && end => {
                self.read = Read::End;
                self.release_buffer();
            }
            Some(offset) if intact => {
                self.next_offset = offset;
                self.start_read();
            }
            _ => self.read = Read::Failed(None),
        }
    }

    /// Gives the read buffer back to the thread's stock once no more reads
    /// are expected (a seek takes one again).
    pub(super) fn release_buffer(&mut self) {
        if let Some(buf) = self.buf.take() {
            pool::give(buf);
        }
    }

    pub(super) fn read_error(&self, e: io::Error) -> io::Error {
        PathError::wrap("read directory", self.at.path(), e)
    }
}

#[cfg(test)]
mod tests {
    use crate::fs::{BackendChoice, MIN_BUFFER_SIZE};

    use super::*;

    /// The GETDENTS opcode, or `None` after printing why the test is
    /// skipped; a failure where `IO_URING_GETDENTS_REQUIRE=1` (the VM).
    fn getdents_opcode() -> Option<u8> {
        let support = io_uring_getdents::detect::cached();
        if support.opcode().is_none() {
            assert!(
                std::env::var("IO_URING_GETDENTS_REQUIRE").as_deref() != Ok("1"),
                "IO_URING_GETDENTS_REQUIRE=1 but {support}"
            );
            eprintln!("skipped: {support}");
        }
        support.opcode()
    }

    /// On the patched kernel, a directory that fits in one buffer is read
    /// by one GETDENTS: its completion carries `IORING_CQE_F_DIR_EOF`, so
    /// once its first entry is out no read is in flight and the stream is
    /// at its end (without the flag, the read after it would be on its
    /// way). The entries are still all there, as `std::fs::read_dir` sees
    /// them.
    #[test]
    fn getdents_stops_at_the_kernel_s_end_of_directory_flag() {
        if getdents_opcode().is_none() {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(tmp.path().join(format!("file-{i}")), []).unwrap();
        }
        let mut want: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        want.sort();
        tokio_uring::start(async {
            let mut dir = Dir::builder()
                .backend(BackendChoice::Getdents)
                .open(tmp.path())
                .await
                .unwrap();
            let mut got = vec![dir.next().await.unwrap().unwrap().file_name().to_owned()];
            assert!(
                matches!(dir.read, Read::End),
                "a read is in flight after a directory that fits one buffer"
            );
            while let Some(entry) = dir.next().await {
                got.push(entry.unwrap().file_name().to_owned());
            }
            got.sort();
            assert_eq!(got, want);
        });
    }

    /// A kernel with GETDENTS but without readdirplus: each read's entries
    /// are stat'ed on the blocking pool right after it, and every entry
    /// carries what `statx(2)` gives, as on the other backends.
    #[test]
    fn getdents_without_readdirplus_stats_each_read_s_entries() {
        let Some(opcode) = getdents_opcode() else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..200 {
            std::fs::write(tmp.path().join(format!("file-{i}")), vec![1; i]).unwrap();
        }
        let mut config = DirBuilder::new()
            .backend(BackendChoice::Getdents)
            .buffer_size(MIN_BUFFER_SIZE)
            .entry_metadata(libc::STATX_BASIC_STATS)
            .config(tmp.path())
            .unwrap();
        assert!(matches!(config.backend, Backend::Getdents { opcode: o } if o == opcode));
        config.metadata = EntryMetadata::Statx(libc::STATX_BASIC_STATS);
        tokio_uring::start(async {
            let file = std::fs::File::open(tmp.path()).unwrap();
            let mut dir = Dir::from_parts(file.into(), Arc::from(tmp.path()), config);
            assert!(!dir.readdirplus());
            let mut seen = 0;
            while let Some(entry) = dir.next().await {
                let entry = entry.unwrap();
                let meta = entry.metadata().unwrap().unwrap();
                let want = std::fs::symlink_metadata(tmp.path().join(entry.file_name())).unwrap();
                assert_eq!(meta.ino(), std::os::unix::fs::MetadataExt::ino(&want));
                assert_eq!(meta.size(), want.len());
                seen += 1;
            }
            assert_eq!(seen, 200);
        });
    }
}
