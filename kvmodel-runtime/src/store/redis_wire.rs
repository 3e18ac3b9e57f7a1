//! The wire form every kvmodel Redis script reads, one home for the single
//! server's commit (`redis.lua`) and each step of the cluster's cross-slot
//! protocol (`cluster/lua`): how a condition and an operation are sent, the
//! longest time to live sent, and the `SCAN` pattern of a key prefix.

use crate::store::batch::{Condition, Op};
use crate::store::encode_entry;

/// The longest TTL sent to Redis (100 years): past it Redis rejects `PX`
/// mid-script, so longer ones are capped, which is "forever" in practice.
const MAX_TTL_MS: u128 = 100 * 365 * 24 * 3_600_000;

/// A time to live in whole milliseconds, as the scripts take it (at least
/// 1, at most [`MAX_TTL_MS`]).
fn ms(d: std::time::Duration) -> String {
    d.as_millis().clamp(1, MAX_TTL_MS).to_string()
}

/// A condition as the scripts read it: kind, then the value it compares.
pub(crate) fn encode_condition(c: &Condition) -> (&'static [u8], &[u8]) {
    match c {
        Condition::Absent(_) => (b"a", b""),
        Condition::Equals(_, v) => (b"e", v),
        Condition::AbsentOrEquals(_, v) => (b"o", v),
        Condition::Present(_) => (b"p", b""),
    }
}

/// An operation as the scripts read it: kind, then two arguments.
pub(crate) fn encode_op(op: &Op) -> (&'static [u8], Vec<u8>, Vec<u8>) {
    match op {
        Op::Put { value, ttl, .. } => (
            b"p",
            value.clone(),
            ttl.map(ms).unwrap_or_default().into_bytes(),
        ),
        Op::Delete { .. } => (b"d", Vec::new(), Vec::new()),
        Op::Incr { delta, limit, .. } => (
            b"i",
            delta.to_string().into_bytes(),
            limit
                .map(|l| l.to_string())
                .unwrap_or_default()
                .into_bytes(),
        ),
        Op::Add { sort, member, .. } => (b"z", encode_entry(sort, member), Vec::new()),
        Op::Remove { sort, member, .. } => (b"r", encode_entry(sort, member), Vec::new()),
        Op::Trim { keep, .. } => (b"t", keep.to_string().into_bytes(), Vec::new()),
        Op::Expire { ttl, .. } => (b"x", ms(*ttl).into_bytes(), Vec::new()),
    }
}

/// A `SCAN MATCH` pattern for the keys that start with `prefix`: the glob
/// characters of the prefix escaped, then `*`.
pub(crate) fn prefix_pattern(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 2);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '^' | '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('*');
    out
}

/// The change stamps at the stamp keys of the counters at `keys`, read
/// with one `get_many` (see [`Store::change_stamps`](crate::Store::change_stamps)).
pub(crate) async fn change_stamps<S: crate::Store>(
    store: &S,
    keys: &[String],
) -> crate::Result<Option<Vec<u64>>> {
    use crate::store::counter::{stamp_key, stamps_of};
    let stamps: Vec<String> = keys.iter().map(|k| stamp_key(k)).collect();
    Ok(Some(stamps_of(store.get_many(&stamps).await?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_pattern_escapes_every_glob_character() {
        assert_eq!(prefix_pattern("a*?[]\\^-b:"), "a\\*\\?\\[\\]\\\\\\^\\-b:*");
    }

    #[test]
    fn times_to_live_are_whole_milliseconds_within_a_century() {
        use std::time::Duration;
        assert_eq!(ms(Duration::from_micros(1)), "1");
        assert_eq!(ms(Duration::from_secs(u64::MAX)), MAX_TTL_MS.to_string());
    }
}
