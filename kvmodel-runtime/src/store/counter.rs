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

/// [`add_to_counter`], and the error the batch fails with when the sum
/// leaves `±limit` further than the counter already was (a shard of a
/// sharded counter, whose total must stay readable; a shard beyond its
/// limit may still move back toward 0).
pub fn add_within(key: &str, current: i64, delta: i64, limit: Option<i64>) -> crate::Result<i64> {
    let next = add_to_counter(key, current, delta)?;
    match limit {
        Some(limit)
            if next.unsigned_abs() > limit.unsigned_abs()
                && next.unsigned_abs() > current.unsigned_abs() =>
        {
            Err(crate::Error::InvalidBatch {
                key: key.to_owned(),
                reason: beyond_limit(delta, limit),
            })
        }
        _ => Ok(next),
    }
}

/// Why an increment past its limit fails (the Redis scripts say the same).
pub(crate) fn beyond_limit(delta: i64, limit: i64) -> String {
    format!(
        "adding {delta} would take this shard of a sharded counter beyond ±{limit}, its share of \
         what a 64-bit total holds, so the total could no longer be read; nothing was written"
    )
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

/// The key of the change stamp of the counter stored at `key`, on the
/// stores that keep stamps (Redis and Redis Cluster; see
/// [`Store::change_stamps`](crate::Store::change_stamps)). It starts with
/// `~`, outside every namespace, so no scan of derived keys meets it, and
/// it has the counter's hash tag (the counter key itself when it has none),
/// so the two share a cluster slot.
///
/// ```ignore
/// assert_eq!(stamp_key("shop:user#count:total"), "~{shop:user#count:total}");
/// assert_eq!(stamp_key("shop:o#count:per:{u1}"), "~shop:o#count:per:{u1}");
/// ```
pub(crate) fn stamp_key(key: &str) -> String {
    let tagged = key
        .find('{')
        .is_some_and(|open| key[open + 1..].find('}').is_some_and(|len| len > 0));
    if tagged {
        format!("~{key}")
    } else {
        format!("~{{{key}}}")
    }
}

/// The least stamp of a removed counter ([`Store::change_stamps`](crate::Store::change_stamps)):
/// a commit that deletes a counter sets its stamp to this or more, for
/// [`STAMP_AFTERLIFE`]. No counter moves 2^62 times, so a stamp this high
/// is always one of these; it proves nothing about the counter, which a
/// later write may have made again.
pub const REMOVED_STAMP: u64 = 1 << 62;

/// How long the stamp of a removed counter stays after the commit that
/// removed it; then it goes, so that counters made and removed again and
/// again (link counts, the counts of a cascade's children, the counters
/// `reconcile` removes) leave no key behind. Within it, a counter made
/// again has a stamp that reads as removed. A measurement that trusts a
/// stamp must end within half of it: a stamp read before it could, after
/// a removal and its afterlife, have gone and come back to the same number.
pub const STAMP_AFTERLIFE: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Whether `stamp` can prove that nothing moved its counter: it is not
/// that of a removed counter ([`REMOVED_STAMP`]) nor the mark of a counter
/// that cannot be judged now (`u64::MAX`).
pub(crate) fn stamp_proves(stamp: u64) -> bool {
    stamp < REMOVED_STAMP
}

/// The stamp a commit that removes a counter gives it: [`REMOVED_STAMP`]
/// plus the time of the commit in milliseconds (its low 40 bits) times
/// 2^20, so that two removals far apart in time leave different stamps, and
/// a counter made again moves its stamp up from there (a million moves
/// before it could reach the next millisecond's).
#[cfg(any(feature = "redis", feature = "dynamodb"))]
fn removed_stamp() -> u64 {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    REMOVED_STAMP + ((ms & ((1 << 40) - 1)) << 20)
}

/// `batch` with the change stamp of every counter it moves, in the same
/// commit: what a store that keeps stamps commits. A counter it increments
/// has its stamp raised by one; one it deletes (and perhaps makes again)
/// has its stamp set to that of a removed counter ([`REMOVED_STAMP`]) for
/// [`STAMP_AFTERLIFE`]. Only the counters maintenance judges have stamps:
/// derived counter keys (`#count:` or `#nlink:`, which no user component
/// can spell, shards included); a standalone counter (`#tally:`) or any
/// other key a batch increments has none.
#[cfg(any(feature = "redis", feature = "dynamodb"))]
pub(crate) fn stamped(mut batch: crate::store::Batch) -> crate::store::Batch {
    use crate::codec::key::Derived;
    // Whether a `#` of the key starts `{kind}:` of a counter kind; no
    // allocation on the write path.
    let counter = |key: &str| {
        key.match_indices('#').any(|(at, _)| {
            let rest = &key[at + 1..];
            [Derived::Counter, Derived::LinkCount].iter().any(|d| {
                rest.strip_prefix(d.as_str())
                    .is_some_and(|r| r.starts_with(':'))
            })
        })
    };
    // Stamp key, and whether the batch deletes its counter (which sorts
    // after an increment of the same one, and is the one kept).
    let mut stamps: Vec<(String, bool)> = batch
        .ops()
        .iter()
        .filter_map(|op| match op {
            crate::store::Op::Incr { key, .. } if counter(key) => Some((stamp_key(key), false)),
            crate::store::Op::Delete { key } if counter(key) => Some((stamp_key(key), true)),
            _ => None,
        })
        .collect();
    if stamps.is_empty() {
        return batch;
    }
    stamps.sort_unstable();
    stamps.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        kept.1 |= same && later.1;
        same
    });
    for (stamp, removed) in stamps {
        if removed {
            let mark = removed_stamp().to_string().into_bytes();
            batch.put(stamp, mark, Some(STAMP_AFTERLIFE));
        } else {
            batch.incr(stamp, 1);
        }
    }
    batch
}

/// The stamps read at the stamp keys: 0 where none is stored, and the
/// highest stamp for a value that is not one (a tampered key can never
/// prove that nothing moved).
pub(crate) fn stamps_of(values: Vec<Option<Vec<u8>>>) -> Vec<u64> {
    values
        .into_iter()
        .map(|v| match v {
            None => 0,
            Some(bytes) => counter_value(&bytes)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(u64::MAX),
        })
        .collect()
}

#[cfg(test)]
mod stamp_tests {
    use super::*;

    #[test]
    fn a_stamp_shares_its_counters_hash_tag() {
        assert_eq!(stamp_key("s:user#count:total"), "~{s:user#count:total}");
        assert_eq!(stamp_key("s:o#count:per:{u1}"), "~s:o#count:per:{u1}");
        // An empty tag is no tag: Redis hashes the whole key.
        assert_eq!(stamp_key("s:o#count:per:{}"), "~{s:o#count:per:{}}");
    }

    #[test]
    #[cfg(any(feature = "redis", feature = "dynamodb"))]
    fn every_counter_a_batch_moves_gets_one_stamp_increment() {
        let mut b = crate::store::Batch::new();
        b.incr("s:e#count:c", 1)
            .incr("s:e#count:c", 2)
            .put("v", b"x".to_vec(), None)
            .incr("s:e#count:d#2", -1)
            .incr("s:e#tally:{t}", 1)
            .incr("plain", 1);
        let b = stamped(b);
        let stamps: Vec<&str> = b.ops()[6..].iter().map(|op| op.key()).collect();
        assert_eq!(stamps, ["~{s:e#count:c}", "~{s:e#count:d#2}"]);
        let mut b = crate::store::Batch::new();
        b.delete("s:p#nlink:tags:p1")
            .delete("s:p#countless")
            .delete("s:u#count:total");
        let b = stamped(b);
        let stamps: Vec<&str> = b.ops()[3..].iter().map(|op| op.key()).collect();
        assert_eq!(stamps, ["~{s:p#nlink:tags:p1}", "~{s:u#count:total}"]);
        // A removed counter's stamp is marked, for its afterlife, even when
        // the batch also moves it.
        for op in &b.ops()[3..] {
            let crate::store::Op::Put { value, ttl, .. } = op else {
                panic!("{op:?}");
            };
            let mark = counter_value(value).expect("a counter") as u64;
            assert!(mark >= REMOVED_STAMP && !stamp_proves(mark), "{mark}");
            assert_eq!(*ttl, Some(STAMP_AFTERLIFE));
        }
        let mut b = crate::store::Batch::new();
        b.incr("s:u#count:total", 1)
            .delete("s:u#count:total")
            .incr("s:u#count:total", 1);
        let b = stamped(b);
        assert_eq!(b.ops().len(), 4, "{:?}", b.ops());
        assert!(
            matches!(&b.ops()[3], crate::store::Op::Put { key, ttl: Some(_), .. } if key == "~{s:u#count:total}")
        );
        assert!(stamp_proves(REMOVED_STAMP - 1) && !stamp_proves(u64::MAX));
        assert_eq!(
            stamps_of(vec![None, Some(b"7".to_vec()), Some(b"x".to_vec())]),
            [0, 7, u64::MAX]
        );
    }
}
