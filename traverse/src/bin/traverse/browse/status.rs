//! The scan's state and its status line: while it runs, the entries and
//! bytes counted so far, the time, the errors and the directory being
//! read (updated every 1 024 entries inside a large directory, and
//! redrawn five times a second); at the end, how long it took. Sizes with
//! three significant digits.

use std::time::Instant;

use traverse::Progress;

use crate::output::human_path;

/// The scan's state.
pub struct Scan {
    start: Instant,
    /// Seconds the scan took, once over.
    pub done: Option<f64>,
    /// Errors met (each also shown as a message when it comes).
    pub errors: u64,
    /// A directory is being scanned again (`r`).
    pub rescanning: bool,
}

impl Scan {
    pub fn new() -> Scan {
        Scan {
            start: Instant::now(),
            done: None,
            errors: 0,
            rescanning: false,
        }
    }

    /// Whether a walk runs (the first scan or a rescan).
    pub fn running(&self) -> bool {
        self.done.is_none() || self.rescanning
    }

    /// The first scan ended; `errors` as the walk counted them.
    pub fn finish(&mut self, errors: u64) {
        self.errors = self.errors.max(errors);
        self.done = Some(self.start.elapsed().as_secs_f64());
    }

    /// The status line, `width` columns at most: with `progress` while a
    /// walk runs.
    pub fn line(&self, progress: Option<&Progress>, width: usize) -> String {
        let errors = match self.errors {
            0 => String::new(),
            1 => ", 1 error".to_owned(),
            n => format!(", {n} errors"),
        };
        let Some(p) = progress else {
            return match self.done {
                Some(secs) => format!("scanned in {secs:.2} s{errors}"),
                None => String::new(),
            };
        };
        let what = if self.done.is_some() {
            "rescanning"
        } else {
            "scanning"
        };
        let head = format!(
            "{what}: {} entries, {}, {:.1} s{errors}",
            p.entries(),
            size3(u128::from(p.bytes())),
            self.start.elapsed().as_secs_f64()
        );
        match p.path() {
            Some(path) => {
                let room = width.saturating_sub(head.chars().count() + 2);
                format!("{head}: {}", cut_left(&human_path(&path), room))
            }
            None => head,
        }
    }
}

/// `text` cut to its last `room` characters, an ellipsis first.
fn cut_left(text: &str, room: usize) -> String {
    let n = text.chars().count();
    if n <= room {
        return text.to_owned();
    }
    let keep = room.saturating_sub(1);
    let tail: String = text.chars().skip(n - keep).collect();
    format!("…{tail}")
}

/// A size in powers of 1 024 with three significant digits: `512B`,
/// `9.87K`, `19.4M`, `194G`; from 999.5 of a unit on, the next unit
/// (`0.98M`, never `1000K`).
pub fn size3(n: u128) -> String {
    const UNITS: [&str; 7] = ["K", "M", "G", "T", "P", "E", "Z"];
    if n < 1000 {
        return format!("{n}B");
    }
    // The largest sizes (128 bits) pass the last unit: f64 keeps them
    // approximately, which is all three digits show.
    #[allow(clippy::cast_precision_loss)]
    let mut v = n as f64;
    for unit in UNITS {
        v /= 1024.0;
        if v < 999.5 || unit == "Z" {
            return if v < 9.995 {
                format!("{v:.2}{unit}")
            } else if v < 99.95 {
                format!("{v:.1}{unit}")
            } else {
                format!("{v:.0}{unit}")
            };
        }
    }
    unreachable!("the loop returns at the last unit")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_have_three_significant_digits() {
        let cases = [
            (0, "0B"),
            (999, "999B"),
            (1000, "0.98K"),
            (1024, "1.00K"),
            (10_189, "9.95K"),
            (10_240, "10.0K"),
            (20_342_374, "19.4M"),
            (203_423_744, "194M"),
            (1_048_064_000, "0.98G"),
            (5 << 40, "5.00T"),
        ];
        for (n, want) in cases {
            assert_eq!(size3(n), want, "{n}");
        }
        assert_eq!(cut_left("/a/b/c", 4), "…b/c");
        assert_eq!(cut_left("/a", 4), "/a");
    }
}
