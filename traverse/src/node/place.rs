//! Where an entry came in its directory's listing.

/// Where an entry came in its directory's listing: its position in the
/// order `getdents64` gave (`.` and `..` left out), and its `d_ino`. What
/// `du`'s output order is made of ([`crate::ListingOrder`],
/// [`crate::ListingRule`]); a listed entry has it
/// ([`Entry::listing_place`](crate::Entry::listing_place)).
///
/// ```
/// use traverse::{Event, WalkBuilder};
///
/// let dir = tempfile::tempdir()?;
/// for name in ["a", "b", "c"] {
///     std::fs::write(dir.path().join(name), b"")?;
/// }
/// let mut seqs = Vec::new();
/// WalkBuilder::new().list(true).build().run_with(dir.path(), |event| {
///     if let Event::Entry(e) = event {
///         seqs.extend(e.listing_place().map(|p| p.seq()));
///     }
/// });
/// seqs.sort();
/// assert_eq!(seqs, [0, 1, 2]);
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListingPlace {
    pub(crate) seq: u32,
    pub(crate) ino: u64,
}

impl ListingPlace {
    /// Its position in the listing: 0 for the first entry `getdents64`
    /// gave, not counting `.` and `..`.
    pub fn seq(self) -> u32 {
        self.seq
    }

    /// The entry's `d_ino`.
    pub fn ino(self) -> u64 {
        self.ino
    }

    /// The place of the next entry read, whose `d_ino` is `ino`: the
    /// `*seq`th of its listing (`*seq` counts it).
    pub(crate) fn next(seq: &mut u32, ino: u64) -> ListingPlace {
        let place = ListingPlace { seq: *seq, ino };
        *seq = seq.wrapping_add(1);
        place
    }
}
