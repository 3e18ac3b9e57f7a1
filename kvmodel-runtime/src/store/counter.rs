//! Counter arithmetic: one rule for every backend.

// Counter arithmetic: one rule for every backend. Memory and redb apply these
// functions; the Redis commit script mirrors them (`parse_int`, `add`) and
// `INCRBY` applies the same rule itself. The conformance suite checks all of
// them against one table (`conformance::COUNTER_TEXTS`).

/// Parses a stored counter: exactly the text Redis `INCRBY` accepts, a
/// canonical decimal `i64` (an optional `-`, then `0` or digits without a
/// leading zero; no `+`, no `-0`, no spaces).
///
/// ```
/// use kvmodel_runtime::store::counter::parse_counter;
/// assert_eq!(parse_counter("k", b"-42").unwrap(), -42);
/// assert!(parse_counter("k", b"007").is_err());
/// assert!(parse_counter("k", b"+5").is_err());
/// ```
///
/// Its error is the one a batch fails with ([`Error::InvalidBatch`](crate::Error::InvalidBatch));
/// reads use [`read_counter`].
pub fn parse_counter(key: &str, bytes: &[u8]) -> crate::Result<i64> {
    counter_value(bytes).ok_or_else(|| crate::Error::InvalidBatch {
        key: key.to_owned(),
        reason: NOT_A_COUNTER.to_owned(),
    })
}

/// Reads a stored counter with the rule of [`parse_counter`]; a value that
/// is not a counter is a read error ([`Error::NotACounter`](crate::Error::NotACounter)),
/// not a refused batch.
///
/// ```
/// use kvmodel_runtime::store::counter::read_counter;
/// assert_eq!(read_counter("k", b"12").unwrap(), 12);
/// assert!(matches!(read_counter("k", b"x"), Err(kvmodel_runtime::Error::NotACounter { .. })));
/// ```
pub fn read_counter(key: &str, bytes: &[u8]) -> crate::Result<i64> {
    counter_value(bytes).ok_or_else(|| crate::Error::NotACounter {
        key: key.to_owned(),
    })
}

/// Why a batch that increments a non-counter value fails.
pub(crate) const NOT_A_COUNTER: &str =
    "it holds a value that is not a 64-bit decimal integer counter";

/// [`parse_counter`] without an error to build.
pub(crate) fn counter_value(bytes: &[u8]) -> Option<i64> {
    // At most 20 bytes (`-9223372036854775808`): large records fail at once.
    if bytes.len() > 20 {
        return None;
    }
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let canonical = match digits {
        [] => false,
        [b'0'] => digits.len() == bytes.len(),
        [b'0', ..] => false,
        _ => digits.iter().all(u8::is_ascii_digit),
    };
    if !canonical {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// `current + delta` for the counter at `key`, or the error the batch fails
/// with when the sum leaves the 64-bit range.
pub fn add_to_counter(key: &str, current: i64, delta: i64) -> crate::Result<i64> {
    current
        .checked_add(delta)
        .ok_or_else(|| crate::Error::InvalidBatch {
            key: key.to_owned(),
            reason: format!("adding {delta} would overflow the 64-bit counter"),
        })
}

/// Splits an exact amount into the fewest `i64` increments of one sign.
/// Applied in order they pass only between the start and the end value, so
/// they overflow exactly when the end value does.
///
/// ```
/// use kvmodel_runtime::store::counter::counter_increments;
/// assert_eq!(counter_increments(5), vec![5]);
/// assert_eq!(counter_increments(1 << 63), vec![i64::MAX, 1]);
/// assert!(counter_increments(0).is_empty());
/// ```
pub fn counter_increments(mut delta: i128) -> Vec<i64> {
    let mut parts = Vec::with_capacity(1);
    while delta != 0 {
        let part = delta.clamp(i128::from(i64::MIN), i128::from(i64::MAX));
        parts.push(part as i64);
        delta -= part;
    }
    parts
}
