//! A walker's readdirplus buffers: each record counted as it is parsed,
//! from the statx it carries.

use super::*;

impl<'p> Walker<'p> {
    /// Counts the entries of one readdirplus buffer of the directory `ai`
    /// as its records are parsed, from the statx each one carries; keeps
    /// for the stat phase only the names a read from the dcache only did
    /// not look up. Returns the last record's `d_off`, or the error of a
    /// record that does not parse (those before it counted).
    pub(super) fn count_plus(&mut self, ai: usize, buf: &[u8]) -> io::Result<Option<u64>> {
        let shared = self.pool.shared;
        let Some(Active {
            dir,
            phase: Phase::Reading(r),
            ..
        }) = &mut self.io.active[ai]
        else {
            unreachable!("only a directory being read is counted")
        };
        let dir = Arc::clone(dir);
        let fd = Arc::clone(&r.fd);
        // Held from its first records on: its subdirectories are queued
        // while it is still being read.
        if r.parts.is_none() {
            r.parts = Some(Parts::hold(&dir, Arc::clone(&r.fd), &shared.budget));
        }
        let link_dev = r.link_dev;
        let (mut names, mut ents) = (std::mem::take(&mut r.names), std::mem::take(&mut r.ents));
        let mut seq = r.seq;
        let links = self.pool.links.as_ref().filter(|_| link_dev.is_some());
        let known = self.pool.links.as_ref().zip(link_dev);
        let defer_dirs = self.defers_dirs(&dir);
        self.focus(ai);
        let (mut offset, mut missed) = (None, false);
        let mut records = DirentPlusIter::new(buf);
        let parsed = records.try_for_each(|record| {
            let plus = record?;
            offset = Some(plus.offset());
            if plus.is_dot_or_dotdot() {
                return Ok(());
            }
            let (name, ino, d_type) = (plus.name_bytes(), plus.ino(), plus.d_type());
            let place = ListingPlace::next(&mut seq, ino);
            let st = match shared.step((&dir, fd.as_fd()), name, ino, d_type, defer_dirs, known) {
                Step::Skip => return Ok(()),
                Step::Known(key) => {
                    self.worker.at(place);
                    self.worker.known_link(shared, name, d_type, key);
                    return Ok(());
                }
                Step::Count => None,
                // A directory needs no stat through its own descriptor
                // once open either.
                Step::Stat | Step::Defer => match plus.stat() {
                    Ok(stx) => Some(Stat::from_statx(&stx)),
                    Err(e) if e.raw_os_error() == Some(NOT_LOOKED_UP) => {
                        missed = true;
                        ents.push(Ent::push(&mut names, place, name, d_type));
                        return Ok(());
                    }
                    Err(cause) => {
                        self.worker.stat_failed(shared, name, d_type, cause);
                        return Ok(());
                    }
                },
            };
            self.worker.at(place);
            let child =
                self.worker
                    .count_named(shared, &dir, name, d_type, st.as_ref(), links, || {
                        plus.name()
                    });
            if let Some(child) = child {
                self.adopt(&dir, child);
            }
            Ok::<(), io_uring_getdents::dirent::ParseError>(())
        });
        if missed {
            self.pool.engine.plus_missed.store(true, Ordering::Relaxed);
        }
        if let Some(Active {
            phase: Phase::Reading(r),
            ..
        }) = &mut self.io.active[ai]
        {
            (r.names, r.ents, r.seq) = (names, ents, seq);
        }
        parsed?;
        Ok(offset)
    }
}
