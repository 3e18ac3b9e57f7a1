//! The `Store` contract every backend implements.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Bound;

use crate::batch::{
    Batch, NOT_A_COUNTER, Op, Outcome, add_to_counter, counter_value, parse_counter,
};
use crate::error::{Error, Result};
use crate::key::{read_terminated, write_terminated};

/// Direction of a range scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Direction {
    /// Smallest sort key first.
    #[default]
    Ascending,
    /// Largest sort key first.
    Descending,
}

/// A range request over one sorted collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeRequest {
    /// Lower bound on the sort key.
    pub lower: Bound<Vec<u8>>,
    /// Upper bound on the sort key.
    pub upper: Bound<Vec<u8>>,
    /// At most this many members are returned.
    pub limit: usize,
    /// Scan direction.
    pub direction: Direction,
    /// Resume after this position (a [`RangeResult::next`] of an earlier page).
    pub after: Option<Vec<u8>>,
}

impl RangeRequest {
    /// The whole collection, ascending, at most `limit` members.
    pub fn all(limit: usize) -> Self {
        RangeRequest {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
            limit,
            direction: Direction::Ascending,
            after: None,
        }
    }
}

/// One member of a sorted collection.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Member {
    /// Its sort key.
    pub sort: Vec<u8>,
    /// The member bytes.
    pub member: Vec<u8>,
}

/// A page of a range scan.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RangeResult {
    /// Members in scan order.
    pub members: Vec<Member>,
    /// Position to resume from, or `None` when the range is exhausted.
    pub next: Option<Vec<u8>>,
}

/// A key-value store that kvmodel repositories run on.
///
/// The core is [`commit`](Store::commit): a [`Batch`] of conditions and
/// operations applied all-or-nothing. Every method returns a `Send` future, so
/// repositories can be used from `tokio::spawn`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kvmodel store",
    note = "use `kvmodel::MemoryStore`, `kvmodel::RedbStore` or another type implementing `kvmodel::Store`"
)]
pub trait Store: Clone + Send + Sync + 'static {
    /// A short backend name for messages (`memory`, `redb`, `redis`, …).
    fn backend(&self) -> &'static str;

    /// Checks every condition; if all hold, applies every operation, atomically.
    /// If one fails, nothing is written and its index is reported. A batch
    /// whose operations do not fit the keys they meet ([`check`]) is an error,
    /// and nothing is written either.
    fn commit(&self, batch: Batch) -> impl Future<Output = Result<Outcome>> + Send;

    /// The value at `key`, if any (expired values are absent).
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// The values at `keys`, in order, in one round trip; missing keys give `None`.
    fn get_many(
        &self,
        keys: &[String],
    ) -> impl Future<Output = Result<Vec<Option<Vec<u8>>>>> + Send;

    /// A page of the sorted collection at `key`.
    fn range(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> impl Future<Output = Result<RangeResult>> + Send;

    /// How long the value at `key` has left to live: `None` when it is
    /// absent, never expires, or the store cannot tell (the default). Used to
    /// give repaired entries of an expiring record the record's lifetime.
    fn time_to_live(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Option<std::time::Duration>>> + Send {
        let _ = key;
        async { Ok(None) }
    }

    /// The counter at `key` (absent counts as 0).
    fn counter(&self, key: &str) -> impl Future<Output = Result<i64>> + Send {
        async move {
            match self.get(key).await? {
                Some(bytes) => parse_counter(key, &bytes),
                None => Ok(0),
            }
        }
    }
}

/// Encodes a collection entry: the sort key, terminated, then the member. Entry
/// byte order equals `(sort, member)` order.
pub fn encode_entry(sort: &[u8], member: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sort.len() + member.len() + 2);
    write_terminated(&mut out, sort);
    out.extend_from_slice(member);
    out
}

/// Splits an entry into its sort key and member.
pub fn decode_entry(entry: &[u8]) -> Result<Member> {
    let (sort, member) = read_terminated(entry).ok_or_else(|| Error::InvalidCursor {
        reason: "it does not encode a collection position".to_owned(),
    })?;
    Ok(Member {
        sort,
        member: member.to_vec(),
    })
}

fn with_last(sort: &[u8], last: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(sort.len() + 2);
    write_terminated(&mut out, sort);
    *out.last_mut().expect("terminator written") = last;
    out
}

/// The entry-space bounds `[lower, upper]` of a request: sort bounds mapped to
/// entry bytes, narrowed by the cursor in the scan direction.
pub fn entry_bounds(req: &RangeRequest) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    // Entries with sort key s lie in [T(s) 00 01, T(s) 00 02).
    let lower = match &req.lower {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(s) => Bound::Included(with_last(s, 1)),
        Bound::Excluded(s) => Bound::Included(with_last(s, 2)),
    };
    let upper = match &req.upper {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(s) => Bound::Excluded(with_last(s, 2)),
        Bound::Excluded(s) => Bound::Excluded(with_last(s, 1)),
    };
    match (&req.after, req.direction) {
        (None, _) => (lower, upper),
        (Some(after), Direction::Ascending) => (tighter(lower, after, true), upper),
        (Some(after), Direction::Descending) => (lower, tighter(upper, after, false)),
    }
}

/// The tighter of a bound and "strictly past `after`".
fn tighter(bound: Bound<Vec<u8>>, after: &[u8], is_lower: bool) -> Bound<Vec<u8>> {
    let keep = match &bound {
        Bound::Unbounded => false,
        Bound::Included(b) => {
            if is_lower {
                b.as_slice() > after
            } else {
                b.as_slice() < after
            }
        }
        Bound::Excluded(b) => {
            if is_lower {
                b.as_slice() >= after
            } else {
                b.as_slice() <= after
            }
        }
    };
    if keep {
        bound
    } else {
        Bound::Excluded(after.to_vec())
    }
}

/// True when no value can lie between `lo` and `hi` (inverted or empty
/// bounds): ordered maps panic on such ranges, an empty page is the answer.
pub fn bounds_empty<T: PartialOrd>(lo: &Bound<T>, hi: &Bound<T>) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(u)) => l > u,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u)) => l >= u,
        _ => false,
    }
}

/// Builds a [`RangeResult`] from up to `limit + 1` entries in scan order.
pub fn page_from_entries(mut entries: Vec<Vec<u8>>, limit: usize) -> Result<RangeResult> {
    let more = entries.len() > limit;
    entries.truncate(limit);
    let next = if more { entries.last().cloned() } else { None };
    let members = entries
        .iter()
        .map(|e| decode_entry(e))
        .collect::<Result<Vec<_>>>()?;
    Ok(RangeResult { members, next })
}

/// What a key holds now, as a backend reports it to [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Nothing, or only expired data.
    Nothing,
    /// A value (counters are values too).
    Value(Vec<u8>),
    /// A sorted collection with at least one member.
    Collection,
}

/// What a key will hold at one point of a batch being checked.
#[derive(Clone, Copy)]
enum Slot {
    Nothing,
    Counter(i64),
    Text,
    Collection,
}

impl Slot {
    fn value(bytes: &[u8]) -> Slot {
        counter_value(bytes).map_or(Slot::Text, Slot::Counter)
    }

    fn of(held: &Held) -> Slot {
        match held {
            Held::Nothing => Slot::Nothing,
            Held::Value(v) => Slot::value(v),
            Held::Collection => Slot::Collection,
        }
    }
}

fn refuse(key: &str, reason: &str) -> Error {
    Error::InvalidBatch {
        key: key.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Decides, before anything is written, what committing `batch` does:
/// [`Outcome::Failed`] for the first condition (in order) that does not hold,
/// an error for the first operation (in order) that could not be applied,
/// otherwise [`Outcome::Applied`], and then applying every operation cannot
/// fail. `current` tells what a key holds now.
///
/// The rules, which the Redis commit script applies in the same order:
/// a key holds nothing, a value or a sorted collection; a condition on a
/// collection, a put over a collection, an increment of a collection, and an
/// add to or remove from a value fail the batch (a delete first makes room
/// for the other kind); an increment needs a counter as [`parse_counter`]
/// reads it and a sum within 64 bits ([`add_to_counter`]). Each operation sees
/// what the earlier ones of the batch left.
pub fn check(batch: &Batch, mut current: impl FnMut(&str) -> Result<Held>) -> Result<Outcome> {
    let mut slots: HashMap<&str, Slot> = HashMap::new();
    for (index, cond) in batch.conditions().iter().enumerate() {
        let key = cond.key();
        let held = current(key)?;
        let value = match &held {
            Held::Nothing => None,
            Held::Value(v) => Some(v.as_slice()),
            Held::Collection => {
                return Err(refuse(
                    key,
                    "a condition inspects a key that holds a sorted collection",
                ));
            }
        };
        if !cond.holds(value) {
            return Ok(Outcome::Failed { index });
        }
        slots.insert(key, Slot::of(&held));
    }
    for op in batch.ops() {
        let key = op.key();
        if matches!(op, Op::Expire { .. }) {
            continue; // any kind expires; nothing changes
        }
        let slot = match (op, slots.get(key)) {
            (Op::Delete { .. }, _) => Slot::Nothing,
            (_, Some(slot)) => *slot,
            (_, None) => Slot::of(&current(key)?),
        };
        let next = match (op, slot) {
            (Op::Delete { .. }, _) => Slot::Nothing,
            (Op::Put { .. }, Slot::Collection) => {
                return Err(refuse(
                    key,
                    "a put meets a sorted collection; delete it first",
                ));
            }
            (Op::Put { value, .. }, _) => Slot::value(value),
            (Op::Incr { delta, .. }, Slot::Nothing) => {
                Slot::Counter(add_to_counter(key, 0, *delta)?)
            }
            (Op::Incr { delta, .. }, Slot::Counter(v)) => {
                Slot::Counter(add_to_counter(key, v, *delta)?)
            }
            (Op::Incr { .. }, Slot::Text) => return Err(refuse(key, NOT_A_COUNTER)),
            (Op::Incr { .. }, Slot::Collection) => {
                return Err(refuse(
                    key,
                    "an increment meets a sorted collection, not a counter",
                ));
            }
            (Op::Add { .. } | Op::Remove { .. }, Slot::Counter(_) | Slot::Text) => {
                return Err(refuse(key, "a sorted-collection operation meets a value"));
            }
            (Op::Add { .. }, _) => Slot::Collection,
            (Op::Remove { .. } | Op::Expire { .. }, slot) => slot,
        };
        slots.insert(key, next);
    }
    Ok(Outcome::Applied)
}
