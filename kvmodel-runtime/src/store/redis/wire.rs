//! What both Redis stores say on the wire, in one place: how a condition
//! and an operation are sent to every script (`lua/commit.lua` on a server
//! and within one cluster slot, each step of the cluster's cross-slot
//! protocol), the `KEYS` and `ARGV` of `commit.lua`, the longest time to
//! live sent, the range command of a page, the `SCAN` pattern of a key
//! prefix, how a time to live is read back, and how a script's reply and a
//! failed request are read.

use std::collections::HashMap;
use std::ops::Bound;
use std::time::Duration;

use redis::{ErrorKind, RedisError, Value};

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Condition, Op};
#[cfg(feature = "redis-cluster")]
use crate::store::feed::FeedAppend;
use crate::store::{Direction, RangeRequest, encode_entry, entry_bounds};

/// The longest TTL sent to Redis (100 years): past it Redis rejects `PX`
/// mid-script, so longer ones are capped, which is "forever" in practice.
const MAX_TTL_MS: u128 = 100 * 365 * 24 * 3_600_000;

/// A time to live in whole milliseconds, as the scripts take it (at least
/// 1, at most [`MAX_TTL_MS`]).
fn ms(d: Duration) -> String {
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

/// A change-feed append as the cluster's protocol steps read it, an
/// operation `f`: the entry, then the retention in ms (prelude.lua's
/// `feed_append`).
#[cfg(feature = "redis-cluster")]
pub(crate) fn encode_append(a: &FeedAppend) -> (&'static [u8], Vec<u8>, Vec<u8>) {
    (b"f", a.entry.clone(), ms(a.retain).into_bytes())
}

/// `batch` as `commit.lua` reads it: `KEYS` every key the batch touches,
/// once each, in first-seen order; `ARGV` the condition count, then kind,
/// key number and value per condition, the operation count, then kind, key
/// number and two arguments per operation, then, when the batch appends to
/// change feeds, the word `#feed`, the append count and per append the stream's key number,
/// its retention in ms and the entry (key numbers count from 1).
pub(crate) fn commit_args(batch: &Batch) -> (Vec<&str>, Vec<Vec<u8>>) {
    let mut keys: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut argv: Vec<Vec<u8>> = vec![batch.conditions().len().to_string().into_bytes()];
    for c in batch.conditions() {
        let (kind, want) = encode_condition(c);
        argv.push(kind.to_vec());
        argv.push(key_index(c.key(), &mut keys, &mut index));
        argv.push(want.to_vec());
    }
    argv.push(batch.ops().len().to_string().into_bytes());
    for op in batch.ops() {
        let (kind, a, b) = encode_op(op);
        argv.push(kind.to_vec());
        argv.push(key_index(op.key(), &mut keys, &mut index));
        argv.push(a);
        argv.push(b);
    }
    if !batch.appends().is_empty() {
        argv.push(b"#feed".to_vec());
        argv.push(batch.appends().len().to_string().into_bytes());
        for a in batch.appends() {
            argv.push(key_index(&a.feed, &mut keys, &mut index));
            argv.push(ms(a.retain).into_bytes());
            argv.push(a.entry.clone());
        }
    }
    (keys, argv)
}

/// The 1-based position of `key` in `KEYS`, adding it on first sight.
fn key_index<'a>(
    key: &'a str,
    keys: &mut Vec<&'a str>,
    index: &mut HashMap<&'a str, usize>,
) -> Vec<u8> {
    let n = *index.entry(key).or_insert_with(|| {
        keys.push(key);
        keys.len()
    });
    n.to_string().into_bytes()
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

/// `SCAN cursor MATCH pattern COUNT count`.
pub(crate) fn scan_cmd(cursor: u64, pattern: &str, count: usize) -> redis::Cmd {
    let mut cmd = redis::cmd("SCAN");
    cmd.arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(count);
    cmd
}

fn bound_arg(b: &Bound<Vec<u8>>, unbounded: &[u8]) -> Vec<u8> {
    match b {
        Bound::Unbounded => unbounded.to_vec(),
        Bound::Included(v) => [b"[".as_slice(), v].concat(),
        Bound::Excluded(v) => [b"(".as_slice(), v].concat(),
    }
}

/// The range command for `req` and its arguments after the key: command
/// name, the two bounds in command order, and how many entries to read
/// (one past the limit, to tell whether more follow).
pub(crate) fn range_args(req: &RangeRequest) -> (&'static str, [Vec<u8>; 3]) {
    let (lo, hi) = entry_bounds(req);
    let (lo, hi) = (bound_arg(&lo, b"-"), bound_arg(&hi, b"+"));
    // Redis counts in an i64: a larger limit asks for everything.
    let count = i64::try_from(req.limit.saturating_add(1))
        .unwrap_or(i64::MAX)
        .to_string()
        .into_bytes();
    match req.direction {
        Direction::Ascending => ("ZRANGEBYLEX", [lo, hi, count]),
        Direction::Descending => ("ZREVRANGEBYLEX", [hi, lo, count]),
    }
}

/// The command that reads up to `req.limit + 1` raw entries of the sorted
/// set at `key`, in scan order ([`range_args`]).
pub(crate) fn range_cmd(key: &str, req: &RangeRequest) -> redis::Cmd {
    let (name, [a, b, count]) = range_args(req);
    let mut cmd = redis::cmd(name);
    cmd.arg(key).arg(a).arg(b).arg("LIMIT").arg(0).arg(count);
    cmd
}

/// A `PTTL` reply as a time to live: `None` for -2 (absent) and -1 (no
/// expiry).
pub(crate) fn time_to_live(pttl: i64) -> Option<Duration> {
    u64::try_from(pttl).ok().map(Duration::from_millis)
}

/// Whether a request that failed with `e` was answered with an error (by
/// the server or a script), so that it did not run and wrote nothing; any
/// other failure after sending (a timeout, a dropped connection) may have
/// been applied.
pub(crate) fn error_reply(e: &RedisError) -> bool {
    matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
}

/// Another write's hold that a cluster step met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Met {
    /// The lock's key, or the key's shared holds.
    pub(crate) lock: String,
    /// Which write holds it (`write|deadline|intent|token`), or `!` for a
    /// claim.
    pub(crate) held: String,
    /// Whether that holder changes the key.
    pub(crate) changes: bool,
}

/// What a script said about a batch (or a part of one): the `{status, …}`
/// reply of `commit.lua` (1, 0 or -1) and of the cluster's scripts (all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `{1, extra}`: done; the extra text some steps return (which members
    /// were new).
    Done(Vec<u8>),
    /// `{0, index[, 'held']}`: condition number `index` of the batch
    /// failed; nothing was written. `held`: it failed on meeting another
    /// unfinished write.
    Failed { index: usize, held: bool },
    /// `{-1, key, reason}`: an operation does not fit its key; nothing was
    /// written.
    Invalid { key: String, reason: String },
    /// `{-2, lock, held, changes}`: a key is held by another unfinished
    /// cross-slot write; nothing was written.
    Locked(Met),
    /// `{-3, why}`: the step was refused (its write was dropped, aborted,
    /// or outlived its lease); nothing was written.
    Refused(String),
}

/// An item of a reply as text (empty for nil or a missing item).
pub(crate) fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
        Some(Value::SimpleString(s)) => s.clone(),
        Some(Value::Int(i)) => i.to_string(),
        Some(Value::Nil) | None => String::new(),
        Some(other) => format!("{other:?}"),
    }
}

/// An item of a reply as bytes.
pub(crate) fn bytes(v: Option<&Value>) -> Vec<u8> {
    match v {
        Some(Value::BulkString(b)) => b.clone(),
        other => text(other).into_bytes(),
    }
}

/// The error of a reply `backend` did not expect.
pub(crate) fn unexpected(backend: &'static str, reply: &Value) -> Error {
    Error::backend(
        backend,
        "read a script reply",
        format!("unexpected reply {reply:?}"),
    )
}

/// Reads the `{status, …}` reply of a commit script run by `backend`.
pub(crate) fn reply(value: &Value, backend: &'static str) -> Result<Reply> {
    let Value::Array(items) = value else {
        return Err(unexpected(backend, value));
    };
    match items.first() {
        Some(Value::Int(1)) => Ok(Reply::Done(bytes(items.get(1)))),
        Some(Value::Int(0)) => match items.get(1) {
            Some(Value::Int(i)) => Ok(Reply::Failed {
                index: usize::try_from(*i).map_err(|_| unexpected(backend, value))?,
                held: items.get(2).is_some(),
            }),
            _ => Err(unexpected(backend, value)),
        },
        Some(Value::Int(-1)) => Ok(Reply::Invalid {
            key: text(items.get(1)),
            reason: text(items.get(2)),
        }),
        Some(Value::Int(-2)) => Ok(Reply::Locked(Met {
            lock: text(items.get(1)),
            held: text(items.get(2)),
            changes: text(items.get(3)) != "0",
        })),
        Some(Value::Int(-3)) => Ok(Reply::Refused(text(items.get(1)))),
        _ => Err(unexpected(backend, value)),
    }
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
        assert_eq!(ms(Duration::from_micros(1)), "1");
        assert_eq!(ms(Duration::from_secs(u64::MAX)), MAX_TTL_MS.to_string());
    }

    #[test]
    fn keys_are_numbered_once_in_first_seen_order() {
        let mut b = Batch::new();
        b.absent("a").put("b", b"1".to_vec(), None).delete("a");
        let (keys, argv) = commit_args(&b);
        assert_eq!(keys, ["a", "b"]);
        let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        assert_eq!(
            argv,
            [
                &b"1"[..],
                b"a",
                b"1",
                b"",
                b"2",
                b"p",
                b"2",
                b"1",
                b"",
                b"d",
                b"1",
                b"",
                b""
            ]
        );
    }

    #[test]
    fn replies_read_every_status() {
        let int = Value::Int;
        let s = |t: &str| Value::BulkString(t.as_bytes().to_vec());
        let read = |items: Vec<Value>| reply(&Value::Array(items), "redis").unwrap();
        assert_eq!(read(vec![int(1)]), Reply::Done(Vec::new()));
        assert_eq!(
            read(vec![int(0), int(2)]),
            Reply::Failed {
                index: 2,
                held: false
            }
        );
        assert_eq!(
            read(vec![int(-1), s("k"), s("why")]),
            Reply::Invalid {
                key: "k".to_owned(),
                reason: "why".to_owned()
            }
        );
        assert_eq!(
            read(vec![int(-3), s("late")]),
            Reply::Refused("late".to_owned())
        );
        assert!(reply(&Value::Array(vec![int(0), int(-1)]), "redis").is_err());
        assert!(reply(&int(1), "redis").is_err());
    }
}
