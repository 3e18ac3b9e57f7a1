//! Lowercase hex text of bytes: how byte positions (cursors, sort keys)
//! are written where only text fits (JSON state, checkpoints, receipts,
//! command lines).

/// Lowercase hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of hex text (either case), or `None` when `text` is not hex.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    // `from_str_radix` alone would take a sign (`+1`).
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let bytes = [0u8, 1, 0x7f, 0x80, 0xff];
        assert_eq!(encode(&bytes), "00017f80ff");
        assert_eq!(decode("00017F80ff").as_deref(), Some(&bytes[..]));
        for bad in ["0", "0g", "é0", "+1"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
