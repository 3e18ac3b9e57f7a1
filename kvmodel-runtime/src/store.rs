//! The `Store` contract every backend implements.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Bound;

use crate::batch::{Batch, Op, Outcome, parse_counter};
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
    /// If one fails, nothing is written and its index is reported.
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

/// The state of one counter key while a batch is being validated.
#[derive(Clone, Copy)]
enum Slot {
    Int(i64),
    NotInt,
}

/// Checks, before anything is written, that every `Incr` of a batch applies to
/// an integer and does not overflow, following earlier puts and deletes of the
/// same batch. `current` reads the live value of a key.
pub fn validate_counters(
    batch: &Batch,
    mut current: impl FnMut(&str) -> Result<Option<Vec<u8>>>,
) -> Result<()> {
    if !batch.ops().iter().any(|op| matches!(op, Op::Incr { .. })) {
        return Ok(());
    }
    let mut slots: HashMap<&str, Slot> = HashMap::new();
    let parse = |key: &str, v: Option<&[u8]>| match v {
        None => Slot::Int(0),
        Some(b) => parse_counter(key, b).map_or(Slot::NotInt, Slot::Int),
    };
    for op in batch.ops() {
        match op {
            Op::Put { key, value, .. } => {
                slots.insert(key, parse(key, Some(value)));
            }
            Op::Delete { key } => {
                slots.insert(key, Slot::Int(0));
            }
            Op::Incr { key, delta } => {
                let slot = match slots.get(key.as_str()) {
                    Some(s) => *s,
                    None => parse(key, current(key)?.as_deref()),
                };
                let Slot::Int(v) = slot else {
                    return Err(Error::InvalidBatch {
                        key: key.clone(),
                        reason: "it holds a value that is not an integer counter".to_owned(),
                    });
                };
                let v = v.checked_add(*delta).ok_or_else(|| Error::InvalidBatch {
                    key: key.clone(),
                    reason: format!("adding {delta} would overflow the 64-bit counter"),
                })?;
                slots.insert(key, Slot::Int(v));
            }
            Op::Add { .. } | Op::Remove { .. } | Op::Expire { .. } => {}
        }
    }
    Ok(())
}
