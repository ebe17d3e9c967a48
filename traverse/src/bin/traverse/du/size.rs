//! Sizes as du reads and writes them: `-B SIZE` (and the `DU_BLOCK_SIZE`,
//! `BLOCK_SIZE`, `BLOCKSIZE` variables), and the numbers of its lines:
//! blocks rounded up, or autoscaled with `-h`/`--si` (`-t SIZE` is the
//! library's `traverse::parse_threshold`).

use crate::output::{autoscale, UNIT_LETTERS as LETTERS};

/// How the sizes of du's lines are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Units {
    /// Numbers of `block`-byte units, rounded up (`-k`: 1024, `-b`: 1),
    /// followed by `suffix` when the block size was given by its unit
    /// alone (`-BK` prints `98K`, `-BKiB` `98KiB`, `-BkB` `98kB`).
    Blocks { block: u128, suffix: String },
    /// Autoscaled in powers of `base`: 1024 (`-h`: `4.0K`, `1.5M`) or
    /// 1000 (`--si`: `4.1k`).
    Human { base: u128 },
}

impl Default for Units {
    /// du's own default: 1024-byte blocks, or 512 with `POSIXLY_CORRECT`,
    /// unless `DU_BLOCK_SIZE`, `BLOCK_SIZE` or `BLOCKSIZE` says otherwise.
    fn default() -> Units {
        for var in ["DU_BLOCK_SIZE", "BLOCK_SIZE", "BLOCKSIZE"] {
            if let Some(spec) = std::env::var_os(var) {
                // du ignores a variable it cannot read.
                if let Some(units) = spec.to_str().and_then(|s| block_size(s).ok()) {
                    return units;
                }
                break;
            }
        }
        let block = if std::env::var_os("POSIXLY_CORRECT").is_some() {
            512
        } else {
            1024
        };
        Units::Blocks {
            block,
            suffix: String::new(),
        }
    }
}

/// Parses a number as du's `xstrtoumax` does: decimal, `0x` hex or `0`
/// octal, then an optional unit letter among `letters` (its power of
/// 1024, or of 1000 when followed by `B` or `D`, of 1024 again with
/// `iB`). Returns the value, whether digits were given, and the unit's
/// base and power. A missing number with a unit is 1 unit.
fn number(s: &str, letters: &str) -> Result<(u128, bool, u128, u32), String> {
    let (radix, digits) = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, hex)
    } else if s.len() > 1 && s.starts_with('0') && s.as_bytes()[1].is_ascii_digit() {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let too_large = || "too large".to_owned();
    let value = if end == 0 {
        1
    } else {
        u128::from_str_radix(&digits[..end], radix).map_err(|_| too_large())?
    };
    let unit = &digits[end..];
    let Some(letter) = unit.chars().next() else {
        return if end == 0 {
            Err("not a number".to_owned())
        } else {
            Ok((value, true, 1024, 0))
        };
    };
    if !letters.contains(letter) {
        return Err("invalid suffix".to_owned());
    }
    let power = match letter.to_ascii_uppercase() {
        'K' => 1,
        c => {
            LETTERS
                .iter()
                .position(|&l| l == c)
                .ok_or("invalid suffix")? as u32
                + 1
        }
    };
    let base: u128 = match &unit[1..] {
        "" | "iB" => 1024,
        "B" | "D" => 1000,
        _ => return Err("invalid suffix".to_owned()),
    };
    base.checked_pow(power)
        .and_then(|scale| value.checked_mul(scale))
        .ok_or_else(too_large)
        .map(|v| (v, end > 0, base, power))
}

/// A `-B`/`--block-size` SIZE (or the value of `BLOCK_SIZE`) as du reads
/// it: `human-readable`, `si`, a number (`1024`, `1K`, `1MB`), or a unit
/// alone, whose name then follows every size (`K`, `KiB`, `MB`). A
/// leading `'` (digit grouping) is accepted; the C locale groups nothing.
pub fn block_size(spec: &str) -> Result<Units, String> {
    let spec = spec.strip_prefix('\'').unwrap_or(spec);
    match spec {
        "human-readable" => return Ok(Units::Human { base: 1024 }),
        "si" => return Ok(Units::Human { base: 1000 }),
        _ => {}
    }
    let (block, digits, base, power) = number(spec, "eEgGkKmMpPtTyYzZRQ")?;
    if block == 0 {
        return Err("invalid block size".to_owned());
    }
    let suffix = if digits || power == 0 {
        String::new()
    } else {
        let letter = if base == 1000 && power == 1 {
            'k'
        } else {
            LETTERS[power as usize - 1]
        };
        let tail = &spec[spec.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0) + 1..];
        format!("{letter}{tail}")
    };
    Ok(Units::Blocks { block, suffix })
}

impl Units {
    /// `n` (bytes, or entries with `--inodes`) as du writes it.
    pub fn format(&self, n: u128) -> String {
        match self {
            Units::Blocks { block, suffix } => format!("{}{suffix}", n.div_ceil(*block)),
            Units::Human { base } => autoscale(n, *base),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The units of coreutils' tests/du/block-size.sh: the sizes of its
    /// files (1000, 10 000... bytes) printed with each unit spelling.
    #[test]
    fn block_sizes_print_as_coreutils_block_size_test_expects() {
        let cases: [(&str, u128, &str); 10] = [
            ("KiB", 100_000, "98KiB"),
            ("kiB", 1000, "1KiB"),
            ("1KiB", 100_000_000, "97657"),
            ("K", 10_000_000, "9766K"),
            ("k", 1_048_576, "1024K"),
            ("1k", 1000, "1"),
            ("MiB", 100_000_000, "96MiB"),
            ("m", 104_857_600, "100M"),
            ("1M", 10_000, "1"),
            ("kB", 1000, "1kB"),
        ];
        for (spec, n, want) in cases {
            assert_eq!(block_size(spec).unwrap().format(n), want, "-B{spec} {n}");
        }
        assert_eq!(block_size("si"), Ok(Units::Human { base: 1000 }));
        assert_eq!(block_size("'1"), block_size("1"));
        for bad in ["", "0", "x", "1x", "1Ki"] {
            assert!(block_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn human_sizes_round_up_as_du_does() {
        let cases: [(u128, u128, &str); 14] = [
            (0, 1024, "0"),
            (1023, 1024, "1023"),
            (1024, 1024, "1.0K"),
            (1025, 1024, "1.1K"),
            (4096, 1024, "4.0K"),
            (10 * 1024 - 1, 1024, "10K"),
            (10 * 1024 + 1, 1024, "11K"),
            (1024 * 1024 - 1, 1024, "1.0M"),
            (1536 * 1024, 1024, "1.5M"),
            (12 << 30, 1024, "12G"),
            (u128::from(u64::MAX) * 3, 1024, "48E"),
            // tests/du/inodes.sh: 1024 entries.
            (1024, 1000, "1.1k"),
            (999, 1000, "999"),
            (1_000_000, 1000, "1.0M"),
        ];
        for (n, base, want) in cases {
            assert_eq!(autoscale(n, base), want, "{n} in {base}");
        }
    }
}
