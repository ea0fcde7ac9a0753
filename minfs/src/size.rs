//! Sizes as the commands take them (`minfs mkfs -s`, `create`, `grow`, `write --offset`,
//! `mkfs.minfs`'s SIZE, `minfs-bench run --capacity`): a number of bytes with an optional
//! unit, one meaning per unit.
//!
//! | unit | bytes |
//! | --- | --- |
//! | none, `B` | 1 |
//! | `K`, `M`, `G`, `T`, `P`, `E` and `KiB`, `MiB`, `GiB`, `TiB`, `PiB`, `EiB` | 1024, 1024², … (binary) |
//! | `KB`, `MB`, `GB`, `TB`, `PB`, `EB` | 1000, 1000², … (decimal, as the reports' MB) |
//!
//! Units are matched without regard to case (`10g`, `4kB`, `1mib`). The number may have a
//! fraction (`1.5G`) as long as the result is a whole number of bytes. A space may separate
//! the number and the unit.

use std::fmt;

/// Every accepted unit, for error messages and help texts.
pub const UNITS: &str = "K, M, G, T, P, E or KiB, MiB, GiB, TiB, PiB, EiB (powers of 1024), \
    KB, MB, GB, TB, PB, EB (powers of 1000), B or none (bytes)";

/// What was wrong with a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// Empty, negative, or not a number.
    NotANumber {
        /// The text given.
        value: String,
    },
    /// The unit is none of [`UNITS`].
    UnknownUnit {
        /// The text given.
        value: String,
        /// The unit in it.
        unit: String,
    },
    /// The number and unit make a fraction of a byte.
    NotWhole {
        /// The text given.
        value: String,
    },
    /// More than 2^64 - 1 bytes.
    TooLarge {
        /// The text given.
        value: String,
    },
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::NotANumber { value } if value.trim_start().starts_with('-') => {
                write!(f, "invalid size {value:?}: sizes are positive")?
            }
            SizeError::NotANumber { value } => write!(
                f,
                "invalid size {value:?}: not a size (a number, optionally with a fraction)"
            )?,
            SizeError::UnknownUnit { value, unit } => {
                write!(f, "invalid size {value:?}: unknown unit {unit:?}")?
            }
            SizeError::NotWhole { value } => {
                write!(f, "invalid size {value:?}: not a whole number of bytes")?
            }
            SizeError::TooLarge { value } => write!(
                f,
                "invalid size {value:?}: too large (more than 2^64 - 1 bytes)"
            )?,
        }
        write!(
            f,
            "; a size is a number of bytes with an optional unit: {UNITS}; e.g. 4096, 256K, 10G, 500MB"
        )
    }
}

/// The number of bytes one `unit` stands for (case-insensitive), or `None` for an unknown one.
pub fn unit_bytes(unit: &str) -> Option<u64> {
    let u = unit.to_ascii_uppercase();
    let (prefix, kind) = match u.as_str() {
        "" | "B" => return Some(1),
        _ if u.len() == 1 => (u.as_str(), 1024u64),
        _ if u.len() == 3 && u.ends_with("IB") => (&u[..1], 1024),
        _ if u.len() == 2 && u.ends_with('B') => (&u[..1], 1000),
        _ => return None,
    };
    let power = match prefix {
        "K" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        "P" => 5,
        "E" => 6,
        _ => return None,
    };
    Some(kind.pow(power))
}

/// Parses a size: see the [module](self) documentation.
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let text = s.trim();
    let digits_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..digits_end], text[digits_end..].trim_start());
    let not_a_number = || SizeError::NotANumber {
        value: s.to_string(),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty()
        || fraction.contains('.')
        || number.starts_with('.') && fraction.is_empty()
    {
        return Err(not_a_number());
    }
    let Some(per_unit) = unit_bytes(unit) else {
        return Err(SizeError::UnknownUnit {
            value: s.to_string(),
            unit: unit.to_string(),
        });
    };
    let too_large = || SizeError::TooLarge {
        value: s.to_string(),
    };
    // (whole + fraction / 10^digits) × per_unit, exactly, in u128.
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > 30 {
        return Err(SizeError::NotWhole {
            value: s.to_string(),
        });
    }
    let scale = 10u128.pow(fraction.len() as u32);
    let parse = |d: &str| -> Result<u128, SizeError> {
        if d.is_empty() {
            Ok(0)
        } else {
            d.parse::<u128>().map_err(|_| too_large())
        }
    };
    let numerator = parse(whole)?
        .checked_mul(scale)
        .and_then(|w| w.checked_add(parse(fraction).ok()?))
        .and_then(|n| n.checked_mul(u128::from(per_unit)))
        .ok_or_else(too_large)?;
    if numerator % scale != 0 {
        return Err(SizeError::NotWhole {
            value: s.to_string(),
        });
    }
    u64::try_from(numerator / scale).map_err(|_| too_large())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_decimal_units() {
        for (text, bytes) in [
            ("4096", 4096),
            ("0", 0),
            ("12B", 12),
            ("1K", 1 << 10),
            ("1k", 1 << 10),
            ("1KiB", 1 << 10),
            ("1kib", 1 << 10),
            ("1KB", 1000),
            ("1kB", 1000),
            ("64M", 64 << 20),
            ("64MiB", 64 << 20),
            ("1MB", 1_000_000),
            ("1mb", 1_000_000),
            ("10G", 10 << 30),
            ("10GB", 10_000_000_000),
            ("3T", 3 << 40),
            ("20TB", 20_000_000_000_000),
            ("2TiB", 2 << 40),
            ("1P", 1 << 50),
            ("1PB", 1_000_000_000_000_000),
            ("15E", 15 << 60),
            ("18EB", 18_000_000_000_000_000_000),
            ("1.5G", 3 << 29),
            ("1.5GB", 1_500_000_000),
            ("0.5K", 512),
            ("2.0M", 2 << 20),
            ("10 G", 10 << 30),
            (" 7 ", 7),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn bad_sizes_are_named_with_every_unit() {
        for (text, says) in [
            ("", "not a size"),
            ("G", "not a size"),
            ("-1G", "sizes are positive"),
            ("1X", "unknown unit \"X\""),
            ("1GIBS", "unknown unit \"GIBS\""),
            ("1Mi", "unknown unit \"Mi\""),
            ("1.2.3K", "not a size"),
            (".", "not a size"),
            ("0.1K", "not a whole number of bytes"),
            ("1.5", "not a whole number of bytes"),
            ("16E", "more than 2^64 - 1 bytes"),
            ("16385P", "more than 2^64 - 1 bytes"),
            ("99999999999999999999999999999999999999999", "more than"),
        ] {
            let e = parse_size(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(e.contains(&format!("{text:?}")), "{text:?}: {e}");
            for unit in [
                "K, M, G, T, P, E",
                "KiB, MiB, GiB, TiB, PiB, EiB",
                "KB, MB, GB, TB, PB, EB",
            ] {
                assert!(e.contains(unit), "{text:?}: {e}");
            }
        }
        assert_eq!(parse_size("16383P"), Ok(16383 << 50));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }
}
