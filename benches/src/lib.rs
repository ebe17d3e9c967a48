//! Support code for the benchmarks: a seeded random generator and a stable
//! hash, so that generated corpora are identical from one run to the next.
//!
//! The binaries live in `src/bin/`: `corpus` (test trees), `floor` (the
//! single-threaded system-call lower bound). The criterion benchmarks live in
//! `benches/`, the hyperfine comparison in the `compare` script.
#![warn(missing_docs)]

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where the micro-benchmarks keep their fixture directories: the corpus
/// location (`TRAVERSE_CORPUS`, default `/var/tmp/traverse-corpus`), which
/// is on a disk filesystem, unlike a tmpfs `/tmp` would be.
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("TRAVERSE_CORPUS")
        .map_or_else(|| PathBuf::from("/var/tmp/traverse-corpus"), PathBuf::from)
}

/// Returns `path`, a directory holding exactly `count` empty files with
/// names of 8 to 40 bytes, creating it (or recreating it, when its entry
/// count differs) first. Creating 100 000 files takes a few seconds, so the
/// directory is reused across benchmark runs.
///
/// # Errors
///
/// Any error creating or reading the directory, with its path.
///
/// # Example
///
/// ```
/// let tmp = tempfile::tempdir()?;
/// let dir = traverse_benches::populated_dir(&tmp.path().join("d"), 10)?;
/// assert_eq!(std::fs::read_dir(&dir)?.count(), 10);
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn populated_dir(path: &Path, count: usize) -> io::Result<PathBuf> {
    let ctx = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    if path.is_dir() {
        if fs::read_dir(path).map_err(ctx)?.count() == count {
            return Ok(path.to_path_buf());
        }
        fs::remove_dir_all(path).map_err(ctx)?;
    }
    fs::create_dir_all(path).map_err(ctx)?;
    let mut rng = SplitMix64::new(count as u64);
    for i in 0..count {
        // A counter keeps names unique; random padding varies record sizes.
        let pad = rng.range(0, 32) as usize;
        let name = format!("e{i:07}{}", "x".repeat(pad));
        fs::File::create(path.join(name)).map_err(ctx)?;
    }
    Ok(path.to_path_buf())
}

/// SplitMix64: a tiny generator with a fixed, documented output sequence.
///
/// The corpora must not change when a dependency updates its algorithm, so
/// the generator is spelled out here (Steele, Lea and Flood's constants).
///
/// # Example
///
/// ```
/// use traverse_benches::SplitMix64;
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence depends only on `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`). The multiply-shift map has a bias of at
    /// most n / 2^64, irrelevant for picking file sizes and parents.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

/// 64-bit FNV-1a, a hash whose value never changes between Rust releases
/// (unlike `DefaultHasher`), used for the corpus markers.
///
/// # Example
///
/// ```
/// use traverse_benches::Fnv64;
/// let mut h = Fnv64::new();
/// h.write(b"a");
/// assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
/// ```
#[derive(Clone, Debug)]
pub struct Fnv64(u64);

impl Fnv64 {
    /// A hash of nothing yet.
    pub fn new() -> Fnv64 {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    /// Feeds bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Feeds a number as 8 little-endian bytes.
    pub fn write_u64(&mut self, n: u64) {
        self.write(&n.to_le_bytes());
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv64 {
    fn default() -> Fnv64 {
        Fnv64::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_published_sequence() {
        // First outputs for seed 1234567 from the reference C implementation
        // (Vigna's splitmix64.c), as listed in many ports' test suites.
        let mut g = SplitMix64::new(1_234_567);
        assert_eq!(g.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(g.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn range_stays_in_bounds_and_covers_ends() {
        let mut g = SplitMix64::new(3);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let v = g.range(10, 13);
            assert!((10..=13).contains(&v));
            seen[(v - 10) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn fill_handles_tails() {
        let mut g = SplitMix64::new(9);
        let mut buf = [0u8; 13];
        g.fill(&mut buf);
        assert!(buf.iter().any(|&b| b != 0));
    }

    #[test]
    fn fnv_empty_is_offset_basis() {
        assert_eq!(Fnv64::new().finish(), 0xcbf2_9ce4_8422_2325);
    }
}
