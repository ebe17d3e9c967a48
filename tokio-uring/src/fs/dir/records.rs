//! A `Dir`'s batches: the records of one read, plain or readdirplus,
//! parsed into entries one at a time.

use super::*;

impl Dir {
    /// Whether batches hold readdirplus records (entry metadata asked
    /// for, however it is served).
    pub(super) fn plus_records(&self) -> bool {
        self.at.config().metadata != EntryMetadata::None
    }

    /// The next entry of the current batch, skipping `.` and `..`.
    pub(super) fn next_buffered(&mut self) -> Option<io::Result<DirEntry>> {
        let batch = self.batch.as_ref()?;
        let plus = self.plus_records();
        while self.pos < batch.len() {
            match first_record(&batch[self.pos..], plus) {
                Some(Ok((record, len))) => {
                    let start = self.pos;
                    self.pos += len;
                    if record.is_dot_or_dotdot() {
                        continue;
                    }
                    return Some(Ok(DirEntry::new(
                        Arc::clone(batch),
                        start,
                        record.name_bytes().len(),
                        record.d_type(),
                        record.ino(),
                        record.offset(),
                        plus.then(|| self.at.shared_path()),
                    )));
                }
                Some(Err(e)) => {
                    self.batch = None;
                    self.read = Read::Failed(None);
                    return Some(Err(self.read_error(e.into())));
                }
                None => break,
            }
        }
        // Done with this batch: release it, so entries the caller dropped
        // free it now.
        self.batch = None;
        None
    }
}

/// The first record of `bytes` and its length, in the layout of the
/// batch: readdirplus records when `plus`, plain ones otherwise.
pub(super) fn first_record(
    bytes: &[u8],
    plus: bool,
) -> Option<Result<(Dirent<'_>, usize), ParseError>> {
    if plus {
        let mut records = DirentPlusIter::new(bytes);
        let record = records.next()?;
        Some(record.map(|r| (r.dirent(), records.position())))
    } else {
        let mut records = DirentIter::new(bytes);
        let record = records.next()?;
        Some(record.map(|r| (r, records.position())))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use io_uring_getdents::dirent::encode;

    use crate::fs::{BackendChoice, Metadata, MIN_BUFFER_SIZE};

    use super::*;

    /// Records as a FUSE file system may return them (names of 300 and
    /// 1 024 bytes among short ones), in a buffer of the smallest size a
    /// `Dir` uses: every name comes out whole, as `DirEntry`, its C
    /// string, and the name an `open_at`/`statx` of the entry passes.
    #[test]
    fn names_up_to_fuse_s_limit_fit_the_smallest_buffer_and_stay_whole() {
        let names: Vec<Vec<u8>> = vec![
            b".".to_vec(),
            vec![b'x'; 300],
            b"short".to_vec(),
            (0..1024).map(|i| b'a' + (i % 26) as u8).collect(),
        ];
        let mut config = DirBuilder::new()
            .buffer_size(0)
            .backend(BackendChoice::Fallback)
            .config(Path::new("/"))
            .unwrap();
        assert_eq!(config.buffer_size, MIN_BUFFER_SIZE);
        for name in &names[1..] {
            let mut record = Vec::new();
            encode(&mut record, 1, 1, libc::DT_REG, name);
            assert!(
                record.len() <= MIN_BUFFER_SIZE,
                "a {}-byte name needs a {}-byte record, more than the smallest buffer",
                name.len(),
                record.len()
            );
        }
        // One read per name, each the last (`end`), so that no real read
        // of `/` starts behind them.
        config.buffer_size = MIN_BUFFER_SIZE;
        let mut dir = Dir::from_parts(
            std::fs::File::open("/").unwrap().into(),
            Arc::from(Path::new("/")),
            config,
        );
        let mut seen = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut records = Vec::new();
            encode(
                &mut records,
                10 + i as u64,
                100 + i as u64,
                libc::DT_REG,
                name,
            );
            let mut buf = vec![0u8; MIN_BUFFER_SIZE].into_boxed_slice();
            buf[..records.len()].copy_from_slice(&records);
            dir.finish_read(Ok(records.len()), Some(buf), None, true);
            while let Some(entry) = dir.next_buffered() {
                seen.push(entry.unwrap());
            }
        }
        assert_eq!(seen.len(), names.len() - 1, "`.` is skipped");
        for (entry, name) in seen.iter().zip(&names[1..]) {
            assert_eq!(entry.file_name().as_bytes(), &name[..]);
            assert_eq!(entry.file_name_cstr().to_bytes(), &name[..]);
            let child = ChildName::from(entry).to_cname().unwrap();
            assert_eq!(child.as_os_str().as_bytes(), &name[..]);
        }
        assert_eq!(seen[2].file_name().len(), 1024);
        assert!(matches!(dir.read, Read::End));
    }

    /// Readdirplus records as the kernel writes them (`.` with the
    /// directory's statx, `..` with EOPNOTSUPP, an entry removed before
    /// its lookup with ENOENT), taken in by a `Dir` asked for entry
    /// metadata: the dot entries are skipped, the others carry what the
    /// record says, and a failed lookup names the entry's path.
    #[test]
    fn readdirplus_records_give_each_entry_its_metadata() {
        use io_uring_getdents::plus::encode_plus;
        use io_uring_getdents::syscall::statx;

        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("file"), b"12345").unwrap();
        let file = std::fs::File::open(tmp.path()).unwrap();
        let stat = |name: &std::ffi::CStr| {
            statx(Some(file.as_fd()), name, 0, libc::STATX_BASIC_STATS).unwrap()
        };
        let (dot, stx) = (stat(c"."), stat(c"file"));
        let mut records = Vec::new();
        encode_plus(&mut records, dot.stx_ino, 1, libc::DT_DIR, b".", Ok(&dot));
        encode_plus(
            &mut records,
            2,
            2,
            libc::DT_DIR,
            b"..",
            Err(libc::EOPNOTSUPP),
        );
        encode_plus(
            &mut records,
            stx.stx_ino,
            3,
            libc::DT_REG,
            b"file",
            Ok(&stx),
        );
        encode_plus(
            &mut records,
            99,
            4,
            libc::DT_REG,
            b"gone",
            Err(libc::ENOENT),
        );

        let mut config = DirBuilder::new()
            .backend(BackendChoice::Fallback)
            .entry_metadata(libc::STATX_BASIC_STATS)
            .config(tmp.path())
            .unwrap();
        // The kernel's layout, whichever backend this host has.
        config.metadata = EntryMetadata::Plus(libc::STATX_BASIC_STATS);
        let mut dir = Dir::from_parts(file.into(), Arc::from(tmp.path()), config);
        assert!(dir.readdirplus());
        let mut buf = vec![0u8; records.len()].into_boxed_slice();
        buf.copy_from_slice(&records);
        dir.finish_read(Ok(records.len()), Some(buf), None, true);
        let got: Vec<DirEntry> = std::iter::from_fn(|| dir.next_buffered())
            .map(Result::unwrap)
            .collect();
        assert_eq!(got.len(), 2, "`.` and `..` are skipped: {got:?}");
        let meta = got[0].metadata().unwrap().unwrap();
        assert_eq!(meta, Metadata::from_statx(&stx));
        assert_eq!(meta.size(), 5);
        let gone = got[1].metadata().unwrap().unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
        let named = tmp.path().join("gone").display().to_string();
        assert!(gone.to_string().contains(&named), "{gone}");
    }
}
