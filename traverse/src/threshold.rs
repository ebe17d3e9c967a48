//! The `-t SIZE` argument of `du`, for the programs built on the library.

/// Reads a `-t` SIZE as `du` reads it (see below); positive: the least
/// size shown, negative: the most.
///
/// ```
/// assert_eq!(traverse::parse_threshold("1K"), Ok(1024));
/// assert_eq!(traverse::parse_threshold("-1MB"), Ok(-1_000_000));
/// assert!(traverse::parse_threshold("-0").is_err());
/// ```
///
/// A SIZE as du reads it: an integer (decimal, `0x` hex or `0`
/// octal) with an optional sign, then an optional unit: k K m M G T P E Z
/// Y R Q, powers of 1024, or of 1000 when followed by `B` or `D` (`1MB`),
/// of 1024 again with `iB` (`1MiB`). `-0` means nothing and is refused.
pub fn parse_threshold(s: &str) -> Result<i64, String> {
    let (negative, rest) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) =
        if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            (16, hex)
        } else if rest.len() > 1 && rest.starts_with('0') {
            (8, &rest[1..])
        } else {
            (10, rest)
        };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return Err("not a number".to_owned());
    }
    let too_large = || "too large".to_owned();
    let mut value = u128::from_str_radix(&digits[..end], radix).map_err(|_| too_large())?;
    let unit = &digits[end..];
    if let Some(letter) = unit.chars().next() {
        let power: u32 = match letter {
            'k' | 'K' => 1,
            'm' | 'M' => 2,
            'G' => 3,
            'T' => 4,
            'P' => 5,
            'E' => 6,
            'Z' => 7,
            'Y' => 8,
            'R' => 9,
            'Q' => 10,
            _ => return Err("invalid suffix".to_owned()),
        };
        let base: u128 = match &unit[1..] {
            "" | "iB" => 1024,
            "B" | "D" => 1000,
            _ => return Err("invalid suffix".to_owned()),
        };
        value = base
            .checked_pow(power)
            .and_then(|scale| value.checked_mul(scale))
            .ok_or_else(too_large)?;
    }
    let value = i64::try_from(value).map_err(|_| too_large())?;
    if negative && value == 0 {
        return Err("-0 means nothing".to_owned());
    }
    Ok(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_read_as_du_reads_them() {
        let ok = [
            ("0", 0),
            ("1", 1),
            ("+7", 7),
            ("-1", -1),
            ("1k", 1024),
            ("1K", 1024),
            ("1KiB", 1024),
            ("1KB", 1000),
            ("2m", 2 << 20),
            ("1MD", 1_000_000),
            ("1G", 1 << 30),
            ("-3T", -3 << 40),
            ("0x10", 16),
            ("010", 8),
            ("7E", 7 << 60),
        ];
        for (arg, want) in ok {
            assert_eq!(parse_threshold(arg), Ok(want), "{arg}");
        }
        for bad in [
            "", "-", "-0", "1b", "1e", "1g", "1.5M", "1Mx", "1iB", "8E", "1Z", "x",
        ] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }
}
