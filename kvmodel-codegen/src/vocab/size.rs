//! Sizes in bytes (`max_size`, `compress.above`): `256KiB`, `1MiB`, `512B`,
//! `64KB`, or a plain number of bytes.

use super::mistake::Mistake;

/// The largest record any entity may store, in bytes: the runtime's
/// `codec::record::MAX_RECORD_BYTES` (64 MiB), which a test keeps equal.
pub const MAX_RECORD_SIZE: u64 = 64 * 1024 * 1024;

/// Units, largest first within each family, as written.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

/// The mistake of a size that does not parse (E130).
fn not_a_size(text: &str) -> Mistake {
    Mistake::new(
        "E130",
        format!(
            "`{text}` is not a size; expected a whole number of bytes with a unit (B, KiB, MiB, GiB, KB, MB, GB), such as `256KiB`"
        ),
    )
}

/// Parses a size such as `256KiB`, `1 MiB`, `64KB` or `512B` into bytes
/// (E130). A number without a unit is a number of bytes.
pub fn parse_size(text: &str) -> Result<u64, Mistake> {
    let s = text.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| not_a_size(text))?;
    let unit = unit.trim();
    let mult = if unit.is_empty() {
        1
    } else {
        SIZE_UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .ok_or_else(|| not_a_size(text))?
            .1
    };
    n.checked_mul(mult).ok_or_else(|| not_a_size(text))
}

/// A size in bytes from a plain integer (YAML `max_size: 1024`, attribute
/// `max_size = 1024`), E130 when it is negative.
pub fn size_from_int(i: i64) -> Result<u64, Mistake> {
    u64::try_from(i).map_err(|_| not_a_size(&i.to_string()))
}

/// Formats bytes in the largest binary unit that holds them exactly
/// (`256KiB`, `1500B`); [`parse_size`] reads it back.
pub fn format_size(bytes: u64) -> String {
    let (unit, n) = SIZE_UNITS
        .iter()
        .filter(|(u, _)| u.contains('i') || *u == "B")
        .find(|(_, n)| bytes.is_multiple_of(*n) && bytes > 0)
        .copied()
        .unwrap_or(("B", 1));
    format!("{}{unit}", bytes / n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print_back() {
        for (text, bytes) in [
            ("256KiB", 256 * 1024),
            ("1 MiB", 1 << 20),
            ("64KB", 64_000),
            ("512B", 512),
            ("1000", 1000),
            ("0B", 0),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
            assert_eq!(parse_size(&format_size(bytes)), Ok(bytes), "{text}");
        }
        assert_eq!(format_size(256 * 1024), "256KiB");
        assert_eq!(format_size(1500), "1500B");
        for bad in [
            "",
            "KiB",
            "1.5KiB",
            "-1KiB",
            "10kb",
            "99999999999999GiB",
            "1 KiB B",
        ] {
            assert_eq!(parse_size(bad).unwrap_err().code, "E130", "{bad}");
        }
    }
}
