//! What both Redis stores say on the wire, in one place: a batch as the
//! plan and values of `lua/commit.lua` and of shape scripts (on a server
//! and within one cluster slot), a condition and an operation as each step
//! of the cluster's cross-slot protocol reads them, the longest time to
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

/// A condition as the cluster's protocol steps read it: kind, then the
/// value it compares.
#[cfg(feature = "redis-cluster")]
pub(crate) fn encode_condition(c: &Condition) -> (&'static [u8], &[u8]) {
    match c {
        Condition::Absent(_) => (b"a", b""),
        Condition::Equals(_, v) => (b"e", v),
        Condition::AbsentOrEquals(_, v) => (b"o", v),
        Condition::Present(_) => (b"p", b""),
    }
}

/// An operation as the cluster's protocol steps read it: kind, then two
/// arguments.
#[cfg(feature = "redis-cluster")]
pub(crate) fn encode_op(op: &Op) -> (&'static [u8], Vec<u8>, Vec<u8>) {
    match op {
        Op::Put { value, ttl, .. } => (
            b"p",
            value.clone(),
            ttl.map(ms).unwrap_or_default().into_bytes(),
        ),
        Op::Delete { .. } => (b"d", Vec::new(), Vec::new()),
        Op::DeleteIfEquals { value, .. } => (b"c", value.clone(), Vec::new()),
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
/// operation `f`: the entry, then the retention in ms (feed.lua's
/// `feed_append`).
#[cfg(feature = "redis-cluster")]
pub(crate) fn encode_append(a: &FeedAppend) -> (&'static [u8], Vec<u8>, Vec<u8>) {
    (b"f", a.entry.clone(), ms(a.retain).into_bytes())
}

/// The most keys a commit's plan numbers (three bytes of key number).
const MAX_KEYS: usize = (1 << 22) - 1;

/// `batch` as `commit.lua` reads it: `KEYS` every key the batch touches,
/// once each, in first-seen order; `ARGV[1]` the plan, a kind byte and a
/// key number per condition and per operation, change-feed appends last;
/// then the values the kinds take, in plan order (`commit.lua` lists the
/// kinds). A key number counts from 1, in one byte below 128, else in two
/// bytes (first byte from 128) or three (from 192), big-endian.
pub(crate) fn commit_args(batch: &Batch) -> Result<(Vec<&str>, Vec<Vec<u8>>)> {
    let mut plan = Plan::default();
    let mut argv: Vec<Vec<u8>> = vec![Vec::new()];
    for c in batch.conditions() {
        match c {
            Condition::Absent(k) => plan.entry(b'A', k)?,
            Condition::Equals(k, v) => {
                plan.entry(b'E', k)?;
                argv.push(v.clone());
            }
            Condition::AbsentOrEquals(k, v) => {
                plan.entry(b'O', k)?;
                argv.push(v.clone());
            }
            Condition::Present(k) => plan.entry(b'P', k)?,
        }
    }
    for op in batch.ops() {
        let key = op.key();
        match op {
            Op::Put {
                value, ttl: None, ..
            } => {
                plan.entry(b'p', key)?;
                argv.push(value.clone());
            }
            Op::Put {
                value,
                ttl: Some(ttl),
                ..
            } => {
                plan.entry(b'q', key)?;
                argv.push(value.clone());
                argv.push(ms(*ttl).into_bytes());
            }
            Op::Delete { .. } => plan.entry(b'd', key)?,
            Op::DeleteIfEquals { value, .. } => {
                plan.entry(b'c', key)?;
                argv.push(value.clone());
            }
            Op::Incr {
                delta: 1,
                limit: None,
                ..
            } => plan.entry(b'u', key)?,
            Op::Incr {
                delta: -1,
                limit: None,
                ..
            } => plan.entry(b'v', key)?,
            Op::Incr {
                delta, limit: None, ..
            } => {
                plan.entry(b'i', key)?;
                argv.push(delta.to_string().into_bytes());
            }
            Op::Incr {
                delta,
                limit: Some(limit),
                ..
            } => {
                plan.entry(b'l', key)?;
                argv.push(delta.to_string().into_bytes());
                argv.push(limit.to_string().into_bytes());
            }
            Op::Add { sort, member, .. } => {
                plan.entry(b'z', key)?;
                argv.push(encode_entry(sort, member));
            }
            Op::Remove { sort, member, .. } => {
                plan.entry(b'r', key)?;
                argv.push(encode_entry(sort, member));
            }
            Op::Trim { keep, .. } => {
                plan.entry(b't', key)?;
                argv.push(keep.to_string().into_bytes());
            }
            Op::Expire { ttl, .. } => {
                plan.entry(b'x', key)?;
                argv.push(ms(*ttl).into_bytes());
            }
        }
    }
    for a in batch.appends() {
        plan.entry(b'f', &a.feed)?;
        argv.push(a.entry.clone());
        argv.push(ms(a.retain).into_bytes());
    }
    argv[0] = plan.bytes;
    Ok((plan.keys, argv))
}

/// A plan as it is written: its bytes and the keys it numbers.
#[derive(Default)]
struct Plan<'a> {
    bytes: Vec<u8>,
    keys: Vec<&'a str>,
    index: HashMap<&'a str, usize>,
}

impl<'a> Plan<'a> {
    /// Appends `kind` and the number of `key`, numbering it on first sight.
    fn entry(&mut self, kind: u8, key: &'a str) -> Result<()> {
        let keys = &mut self.keys;
        let n = *self.index.entry(key).or_insert_with(|| {
            keys.push(key);
            keys.len()
        });
        let b = &mut self.bytes;
        b.push(kind);
        // Each byte holds at most 8 bits of `n` (the casts keep those).
        match n {
            0..=127 => b.push(n as u8),
            128..=0x3fff => b.extend_from_slice(&[0x80 | (n >> 8) as u8, n as u8]),
            _ if n <= MAX_KEYS => {
                b.extend_from_slice(&[0xc0 | (n >> 16) as u8, (n >> 8) as u8, n as u8]);
            }
            _ => {
                return Err(Error::InvalidBatch {
                    key: key.to_owned(),
                    reason: format!("a batch on Redis touches at most {MAX_KEYS} keys; split it"),
                });
            }
        }
        Ok(())
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

/// `INFO server`, sent with a `SCAN` in one pipeline: it names the server
/// process (`run_id`) the `SCAN` ran on. A `SCAN` cursor means something
/// only to the process that made it: another one (the server restarted, a
/// replica took over) seeds its hash table differently, and the cursor
/// would skip keys there.
pub(crate) fn info_server_cmd() -> redis::Cmd {
    let mut cmd = redis::cmd("INFO");
    cmd.arg("server");
    cmd
}

/// The `run_id` an `INFO server` reply names.
pub(crate) fn run_id(info: &str) -> Option<&str> {
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .map(str::trim)
        .filter(|id| !id.is_empty() && !id.contains(':'))
}

/// The server process an `INFO server` reply names, or `None` if it names
/// none (`INFO` refused to the user, or renamed away): a scan then cannot
/// tell a restarted server, and goes on as `SCAN` alone would.
pub(crate) fn process_of(info: &Value) -> Option<String> {
    let text = match info {
        Value::BulkString(b) => String::from_utf8_lossy(b),
        Value::VerbatimString { text, .. } => text.as_str().into(),
        _ => return None,
    };
    run_id(&text).map(str::to_owned)
}

/// Whether a scan page ran on another server process (`now`) than the one
/// that made its cursor (`made_on`): the cursor means nothing there, and
/// the scan of that server starts again. Either unknown: as `SCAN` alone.
pub(crate) fn another_process(made_on: Option<&str>, now: Option<&str>) -> bool {
    matches!((made_on, now), (Some(was), Some(now)) if was != now)
}

/// A scan cursor of the form `run_id:cursor`: the server process that
/// made it (empty if the server named none) and its `SCAN` cursor. A bare
/// number, the older form, names no process, so it cannot be trusted on
/// whatever process answers now: the scan starts again (`(None, 0)`).
pub(crate) fn parse_scan_cursor(text: &str) -> Option<(Option<&str>, u64)> {
    match text.split_once(':') {
        Some((run, at)) => Some((Some(run).filter(|r| !r.is_empty()), at.parse().ok()?)),
        None => text.parse::<u64>().ok().map(|_| (None, 0)),
    }
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
    fn a_scan_cursor_names_the_process_that_made_it() {
        let info = "# Server\r\nredis_version:7.0.15\r\nrun_id:9f86d08\r\ntcp_port:6379\r\n";
        assert_eq!(run_id(info), Some("9f86d08"));
        assert_eq!(
            process_of(&Value::BulkString(info.as_bytes().to_vec())).as_deref(),
            Some("9f86d08")
        );
        // An error reply (INFO refused) is not a string.
        assert_eq!(process_of(&Value::Nil), None);
        assert_eq!(
            process_of(&Value::BulkString(b"# Server\r\n".to_vec())),
            None
        );
        assert_eq!(run_id("# Server\r\nrun_id:\r\n"), None);
        assert_eq!(run_id("redis_version:7"), None);
        assert!(another_process(Some("a"), Some("b")));
        assert!(!another_process(Some("a"), Some("a")));
        assert!(!another_process(None, Some("a")) && !another_process(Some("a"), None));
        assert_eq!(parse_scan_cursor("9f86d08:42"), Some((Some("9f86d08"), 42)));
        // A server that named no process.
        assert_eq!(parse_scan_cursor(":42"), Some((None, 42)));
        // The older form, a bare `SCAN` cursor: from the start.
        assert_eq!(parse_scan_cursor("42"), Some((None, 0)));
        for bad in ["r:", "r:x", "x", "r:1:2", "-1"] {
            assert_eq!(parse_scan_cursor(bad), None, "{bad}");
        }
    }

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
        b.absent("a")
            .put("b", b"1".to_vec(), None)
            .delete("a")
            .incr("c", 1)
            .incr("c", -1)
            .incr("c", 5);
        let (keys, argv) = commit_args(&b).unwrap();
        assert_eq!(keys, ["a", "b", "c"]);
        let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        assert_eq!(argv, [&b"A\x01p\x02d\x01u\x03v\x03i\x03"[..], b"1", b"5"]);
    }

    #[test]
    fn key_numbers_past_127_take_two_bytes_and_past_16383_three() {
        let names: Vec<String> = (0..20_000).map(|i| format!("k{i}")).collect();
        let mut b = Batch::new();
        for k in &names {
            b.delete(k);
        }
        let (keys, argv) = commit_args(&b).unwrap();
        assert_eq!(keys.len(), 20_000);
        let plan = &argv[0];
        assert_eq!(&plan[..2], b"d\x01");
        // Key 128: two bytes, 0x80 | 0, then 128.
        assert_eq!(&plan[2 * 127..2 * 127 + 3], b"d\x80\x80");
        // Key 16384 starts after 127 one-byte and 16256 two-byte entries.
        let at = 2 * 127 + 3 * 16_256;
        assert_eq!(&plan[at..at + 4], b"d\xc0\x40\x00");
        assert_eq!(plan.len(), 2 * 127 + 3 * 16_256 + 4 * (20_000 - 16_383));
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
