//! The `Store` contract every backend implements.

//!
//! The contract ([`Store`], [`Batch`]) and its backends: one
//! module each, plus the helpers they share (collection entries, the
//! pre-write check, counter arithmetic).

use std::future::Future;
use std::ops::Bound;

use crate::error::Result;

mod any;
pub mod batch;
mod check;
pub mod clock;
pub mod counter;
mod entries;
pub mod memory;
#[cfg(feature = "redb")]
mod redb;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_link;

pub use any::AnyStore;
pub use batch::{Batch, Condition, Op, Outcome};
pub use check::{Held, check};
pub use entries::{bounds_empty, decode_entry, encode_entry, entry_bounds, page_from_entries};
pub(crate) use entries::{scan_count, scan_page};
pub use memory::MemoryStore;
#[cfg(feature = "redb")]
pub use redb::RedbStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
#[cfg(feature = "redis")]
pub use redis_link::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT, RedisStoreBuilder};

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

/// A page of a maintenance key scan ([`Store::scan`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScanPage {
    /// Keys that start with the prefix (values, counters and collections).
    pub keys: Vec<String>,
    /// Where the next page starts, or `None` when the scan is complete.
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

    /// How many members the sorted collection at `key` holds (0 when it is
    /// absent or expired). The default walks the collection a page at a
    /// time; the built-in backends answer in one read (`ZCARD` on Redis, an
    /// in-process count on redb and memory).
    fn collection_len(&self, key: &str) -> impl Future<Output = Result<u64>> + Send {
        async move {
            let mut n = 0u64;
            let mut req = RangeRequest::all(1000);
            loop {
                let page = self.range(key, req.clone()).await?;
                n += page.members.len() as u64;
                match page.next {
                    Some(next) => req.after = Some(next),
                    None => return Ok(n),
                }
            }
        }
    }

    /// The store's clock, in milliseconds since the Unix epoch: the clock
    /// its TTLs count on, as far as the store can tell (the default, and
    /// Redis, read the system clock of this process). Expiry bookkeeping
    /// uses it to tell which records are due.
    fn now_ms(&self) -> impl Future<Output = Result<u64>> + Send {
        async { Ok(clock::Clock::now_ms(&clock::SystemClock)) }
    }

    /// Maintenance only (`verify`, `reconcile`, `purge`), never in normal
    /// operation: a page of the keys that start with `prefix`, from `cursor`
    /// (`None`: the start; then a [`ScanPage::next`]). `count` is a hint
    /// for the page size; a page may be empty while `next` is set.
    ///
    /// Every key that holds a live value, counter or non-empty collection
    /// under the prefix for the whole scan is returned at least once; keys
    /// written or removed meanwhile may or may not be, and a key may be
    /// returned twice (Redis `SCAN`). Memory and redb return each key once,
    /// in byte order.
    ///
    /// The default fails: a store that cannot list keys cannot look for
    /// orphans.
    fn scan(
        &self,
        prefix: &str,
        cursor: Option<Vec<u8>>,
        count: usize,
    ) -> impl Future<Output = Result<ScanPage>> + Send {
        let _ = (prefix, cursor, count);
        let backend = self.backend();
        async move {
            Err(crate::Error::backend(
                backend,
                "list keys by prefix",
                "this store does not implement `Store::scan`; implement it to run verify, \
                 reconcile and purge, which look for entries no record owns",
            ))
        }
    }

    /// The counter at `key` (absent counts as 0).
    fn counter(&self, key: &str) -> impl Future<Output = Result<i64>> + Send {
        async move {
            match self.get(key).await? {
                Some(bytes) => counter::read_counter(key, &bytes),
                None => Ok(0),
            }
        }
    }
}
