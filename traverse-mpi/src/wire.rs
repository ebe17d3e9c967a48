//! The bytes that cross between ranks: integers little-endian, byte
//! strings with their length first. Every rank runs the same binary, so
//! the format needs no version; a message cut short is a bug, reported by
//! [`Reader`] as a panic that aborts the whole run (never a wrong total).

use traverse::Totals;

/// Appends values to a message.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u128(&mut self, v: u128) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn bytes(&mut self, v: &[u8]) {
        self.u32(u32::try_from(v.len()).expect("a path shorter than 4 GiB"));
        self.0.extend_from_slice(v);
    }

    /// A place in du's order, one key per level.
    pub fn keys(&mut self, v: &[u128]) {
        self.u32(u32::try_from(v.len()).expect("fewer than 4 G levels"));
        for &k in v {
            self.u128(k);
        }
    }

    pub fn totals(&mut self, t: &Totals) {
        for n in [t.files, t.dirs, t.symlinks, t.other, t.errors] {
            self.u64(n);
        }
        self.u128(t.bytes);
        self.u128(t.disk_bytes);
        self.u128(t.dir_bytes);
    }
}

/// Takes values off a message in the order they were written.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        assert!(
            self.0.len() >= n,
            "a message from another rank is cut short"
        );
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }

    pub fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }

    pub fn u128(&mut self) -> u128 {
        u128::from_le_bytes(self.take(16).try_into().expect("16 bytes"))
    }

    pub fn bytes(&mut self) -> &'a [u8] {
        let n = self.u32() as usize;
        self.take(n)
    }

    pub fn keys(&mut self) -> Vec<u128> {
        let n = self.u32() as usize;
        self.take(n.saturating_mul(16))
            .chunks_exact(16)
            .map(|k| u128::from_le_bytes(k.try_into().expect("16 bytes")))
            .collect()
    }

    pub fn totals(&mut self) -> Totals {
        let mut t = Totals::default();
        (t.files, t.dirs, t.symlinks, t.other) = (self.u64(), self.u64(), self.u64(), self.u64());
        t.errors = self.u64();
        t.bytes = self.u128();
        t.disk_bytes = self.u128();
        t.dir_bytes = self.u128();
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_in_order() {
        let mut w = Writer::default();
        let mut t = Totals::default();
        (t.files, t.dirs, t.symlinks, t.other) = (1, 2, 3, 4);
        (t.bytes, t.disk_bytes, t.errors) = (u128::from(u64::MAX) + 5, 6, 7);
        t.dir_bytes = 8;
        w.u8(9);
        w.bytes(b"a/b");
        w.totals(&t);
        w.u64(u64::MAX);
        w.keys(&[1 << 100, 0, 5]);
        let mut r = Reader(&w.0);
        assert_eq!(r.u8(), 9);
        assert_eq!(r.bytes(), b"a/b");
        assert_eq!(r.totals(), t);
        assert_eq!(r.u64(), u64::MAX);
        assert_eq!(r.keys(), [1 << 100, 0, 5]);
        assert!(r.is_empty());
    }

    #[test]
    #[should_panic(expected = "cut short")]
    fn a_short_message_is_refused() {
        Reader(&[1, 0, 0, 0]).bytes();
    }
}
