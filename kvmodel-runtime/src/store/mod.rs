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
#[cfg(feature = "dynamodb")]
mod dynamo;
mod entries;
pub mod feed;
pub mod memory;
#[cfg(feature = "redb")]
mod redb;
#[cfg(feature = "redis")]
mod redis;
#[cfg(any(feature = "redis-cluster", feature = "dynamodb"))]
mod spread;

pub use crate::error::redact_url;
pub use any::AnyStore;
pub use batch::{Batch, Condition, Op, Outcome, Planned};
pub use check::{Expect, Held, check};
#[cfg(feature = "dynamodb")]
pub use dynamo::DynamoStore;
#[cfg(feature = "redis")]
pub(crate) use entries::page_from_entries_with;
pub(crate) use entries::{KeyPage, key_bounds, scan_count, scan_page};
pub use entries::{
    bounds_empty, decode_entry, encode_entry, entry_bounds, page_from_entries, split_entry,
};
pub use feed::{
    FeedAppend, FeedConsumer, FeedEntry, FeedPage, FeedPosition, GroupRead, GroupStart,
};
pub use memory::MemoryStore;
#[cfg(feature = "redb")]
pub use redb::RedbStore;
#[cfg(all(feature = "tls", feature = "conformance"))]
pub(crate) use redis::ensure_tls_provider;
#[cfg(feature = "redis-cluster")]
pub use redis::{
    CrashPoint, DEFAULT_DISCOVERY_SHARDS, DEFAULT_LEASE, Recovery, RedisClusterStore,
    RedisClusterStoreBuilder,
};
#[cfg(feature = "redis")]
pub use redis::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT, RedisStore, RedisStoreBuilder};

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

impl Member {
    /// The member, borrowed.
    pub fn as_ref(&self) -> MemberRef<'_> {
        MemberRef {
            sort: &self.sort,
            member: &self.member,
        }
    }
}

/// One member of a sorted collection, borrowed where a store lends it
/// ([`Store::range_values_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberRef<'a> {
    /// Its sort key.
    pub sort: &'a [u8],
    /// The member bytes.
    pub member: &'a [u8],
}

impl MemberRef<'_> {
    /// The member, owned.
    pub fn to_member(self) -> Member {
        Member {
            sort: self.sort.to_vec(),
            member: self.member.to_vec(),
        }
    }
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

/// A value and the value at the key it holds ([`Store::get_via`]).
pub type Via = (Vec<u8>, Option<Vec<u8>>);

/// The values at `keys`, read with one `get` for one key (so stores that
/// wrap `get` see every single read) and one `get_many` otherwise.
async fn read_keys<S: Store>(store: &S, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
    match keys {
        [one] => Ok(vec![store.get(one).await?]),
        _ => store.get_many(keys).await,
    }
}

/// [`Store::commit_after_read`] the optimistic way, as the trait's default
/// does it: read the keys, let `plan` decide, commit what it decided. Nothing
/// stops another writer between the read and the commit, so the batch's
/// conditions on what was read may fail; the caller retries.
pub async fn commit_after_read_optimistic<S, T, F>(
    store: &S,
    keys: &[String],
    plan: F,
) -> Result<(Outcome, T)>
where
    S: Store,
    F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>>,
{
    let values = read_keys(store, keys).await?;
    let now = store.now_ms().await?;
    match plan(values, now)? {
        Planned::Commit(batch, t) => Ok((store.commit(batch).await?, t)),
        Planned::Skip(t) => Ok((Outcome::Applied, t)),
    }
}

/// The values at the keys a collection's members name, in member order:
/// `None` for a member that is not UTF-8 or whose key holds nothing.
pub(crate) fn member_keys(range: &RangeResult) -> Vec<Option<&str>> {
    range
        .members
        .iter()
        .map(|m| std::str::from_utf8(&m.member).ok())
        .collect()
}

/// How a store writes a record's delete plan
/// ([`Store::delete_plans`]): from the record's stored bytes, the tag of
/// the code that derived its entries (the entity's `PLAN_TAG`) and the
/// batch that deletes it, the bytes stored beside it.
pub type PlanDelete = fn(record: &[u8], tag: u64, delete: Batch) -> Result<Vec<u8>>;

/// What [`Store::delete_planned`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannedDelete {
    /// The record, its plan and everything the plan names are gone.
    Deleted,
    /// There was no record (a plan left without one went).
    Absent,
    /// Nothing was written: there is no plan, or it was written for other
    /// bytes than the record holds (by a writer that keeps none), or
    /// `unless` holds a value, or the store would commit the plan's batch
    /// only after checking it whole. The caller deletes the usual way.
    Unplanned,
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
    /// whose operations do not fit the keys they meet ([`check`](fn@check)) is an error,
    /// and nothing is written either.
    fn commit(&self, batch: Batch) -> impl Future<Output = Result<Outcome>> + Send;

    /// The value at `key`, if any (expired values are absent).
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// [`get`](Store::get), handing the value to `read` instead of
    /// returning it: an embedded store (redb) lends it where it lies, so a
    /// caller that decodes it copies nothing. The default calls `get`.
    fn get_with<T, F>(&self, key: &str, read: F) -> impl Future<Output = Result<T>> + Send
    where
        T: Send,
        F: FnOnce(Option<&[u8]>) -> T + Send,
    {
        async move { Ok(read(self.get(key).await?.as_deref())) }
    }

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

    /// Whether the store ranges over its keys in byte order
    /// ([`range_keys_with`](Store::range_keys_with)): memory and redb do.
    /// The engine then finds an entity's records by the range of their keys
    /// and keeps no discovery set; on a store that cannot (the default,
    /// Redis, Redis Cluster), every write keeps the entity's discovery set
    /// in step instead.
    fn orders_keys(&self) -> bool {
        false
    }

    /// A page of the keys holding values that start with `prefix` and that
    /// `keep` accepts, in byte order (`req.direction` says which way; the
    /// sort-key bounds of `req` do not apply), resuming after `req.after`
    /// (a `next` of an earlier page) and holding at most `req.limit` keys.
    /// `read` gets each key and its value: `None` where the value has
    /// expired and the store still holds it (a store may leave such keys
    /// out instead). Returns what `read` returned for each key, in key order, and
    /// the position to resume from (`None` after the last).
    ///
    /// Only called when [`orders_keys`](Store::orders_keys) is true; the
    /// default fails.
    fn range_keys_with<T, K, F>(
        &self,
        prefix: &str,
        keep: K,
        req: RangeRequest,
        read: F,
    ) -> impl Future<Output = Result<(Vec<T>, Option<Vec<u8>>)>> + Send
    where
        T: Send,
        K: Fn(&str) -> bool + Send,
        F: FnMut(&str, Option<&[u8]>) -> T + Send,
    {
        let _ = (prefix, keep, req, read);
        let backend = self.backend();
        async move {
            Err(crate::Error::backend(
                backend,
                "range over keys",
                "this store does not range over its keys in order \
                 (`Store::orders_keys` is false), so it keeps a discovery set instead",
            ))
        }
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

    /// Reads the values at `keys` (expired values are absent), lets `plan`
    /// decide from them and from the store's clock ([`now_ms`](Store::now_ms))
    /// what to write, and commits that batch: the read-modify-write of
    /// `update`, `modify` and `delete`. `plan` runs once; an error from it
    /// writes nothing and comes back as is; [`Planned::Skip`] writes nothing.
    ///
    /// The store chooses the protocol. A store with a single writer (memory,
    /// redb) reads, plans and commits inside one write transaction, so what
    /// was read cannot change before the commit. The default, and Redis,
    /// read, plan and commit one after the other
    /// ([`commit_after_read_optimistic`]): another writer may come in
    /// between, so `plan` must make its batch conditional on everything it
    /// relied on, and a failed condition means "read again and retry".
    ///
    /// `plan` may run while the store holds its write lock: it must not
    /// call the store.
    fn commit_after_read<T, F>(
        &self,
        keys: &[String],
        plan: F,
    ) -> impl Future<Output = Result<(Outcome, T)>> + Send
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        commit_after_read_optimistic(self, keys, plan)
    }

    /// The value at `key` and, when that value is a key (UTF-8), the value
    /// at that key: `None` when `key` holds nothing. A unique claim and the
    /// record it points to, read together: one round trip on Redis, one
    /// read transaction on redb. The default reads one after the other.
    fn get_via(&self, key: &str) -> impl Future<Output = Result<Option<Via>>> + Send {
        async move {
            let Some(pointer) = self.get(key).await? else {
                return Ok(None);
            };
            let target = match std::str::from_utf8(&pointer) {
                Ok(k) => self.get(k).await?,
                Err(_) => None,
            };
            Ok(Some((pointer, target)))
        }
    }

    /// A page of the sorted collection at `key` whose members are keys, with
    /// the value at each member's key, in member order (`None` where the key
    /// holds nothing, or the member is not UTF-8). A page of an index and its
    /// records, read together: one round trip on Redis, one read
    /// transaction on redb. The default is a [`range`](Store::range), then
    /// one [`get_many`](Store::get_many).
    fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> impl Future<Output = Result<(RangeResult, Vec<Option<Vec<u8>>>)>> + Send {
        async move {
            let range = self.range(key, req).await?;
            let names = member_keys(&range);
            let keys: Vec<String> = names.iter().flatten().map(|k| (*k).to_owned()).collect();
            let mut found = self.get_many(&keys).await?.into_iter();
            let values = names
                .iter()
                .map(|k| k.and_then(|_| found.next().flatten()))
                .collect();
            Ok((range, values))
        }
    }

    /// [`range_values`](Store::range_values), handing each member and its
    /// value to `read` instead of returning them: an embedded store (redb)
    /// lends `read` the member and the value where they lie, so a caller
    /// that decodes each value copies nothing it does not keep. `read` gets
    /// `None` where `range_values` has `None`. Returns what `read` returned
    /// for each member, in member order, and the position to resume from
    /// ([`RangeResult::next`]). The default calls `range_values`.
    fn range_values_with<T, F>(
        &self,
        key: &str,
        req: RangeRequest,
        mut read: F,
    ) -> impl Future<Output = Result<(Vec<T>, Option<Vec<u8>>)>> + Send
    where
        T: Send,
        F: FnMut(MemberRef<'_>, Option<&[u8]>) -> T + Send,
    {
        async move {
            let (range, values) = self.range_values(key, req).await?;
            let out = range
                .members
                .iter()
                .zip(values)
                .map(|(m, v)| read(m.as_ref(), v.as_deref()))
                .collect();
            Ok((out, range.next))
        }
    }

    /// Maintenance: finishes or undoes the writes a crash left half done
    /// and whose lease has passed, and returns how many. Only a store whose
    /// commit is not one atomic step has any (Redis Cluster, across hash
    /// slots); the default has none. `reconcile` calls it first.
    fn recover(&self) -> impl Future<Output = Result<u64>> + Send {
        async { Ok(0) }
    }

    /// Maintenance: the writes a crash left half done and whose lease has
    /// passed, one line each, for `verify` to report; [`recover`](Store::recover)
    /// finishes or undoes them. The default has none.
    fn unfinished_writes(&self) -> impl Future<Output = Result<Vec<String>>> + Send {
        async { Ok(Vec::new()) }
    }

    /// Maintenance: a read-only view of the whole store as it is now, or
    /// `None` when the store cannot give one (the default, and Redis).
    /// Every read of the view sees the data of that one instant, whatever
    /// is committed meanwhile; a commit to the view fails. `verify` and
    /// `reconcile` measure a counter against the records of one view, so
    /// that their measurement holds beside live writers: memory copies its
    /// data, redb keeps a read transaction open.
    fn snapshot(&self) -> impl Future<Output = Result<Option<Self>>> + Send {
        async { Ok(None) }
    }

    /// Maintenance: the change stamp of the counter at each of `keys`, or
    /// `None` when the store keeps none (the default). A store that keeps
    /// them raises a counter's stamp in every commit that moves it (0:
    /// never moved), so equal stamps read before and after a measurement
    /// prove nothing moved the counter meanwhile. A commit that removes a
    /// counter sets its stamp to [`REMOVED_STAMP`](counter::REMOVED_STAMP)
    /// or more, which proves nothing, and the stamp goes
    /// [`STAMP_AFTERLIFE`](counter::STAMP_AFTERLIFE) later (back to 0): a
    /// measurement that trusts stamps ends within half of that. Redis,
    /// Redis Cluster and DynamoDB keep them (they have no
    /// [`snapshot`](Store::snapshot)).
    fn change_stamps(
        &self,
        keys: &[String],
    ) -> impl Future<Output = Result<Option<Vec<u64>>>> + Send {
        let _ = keys;
        async { Ok(None) }
    }

    /// Whether writes keep a delete plan beside each record whose entity
    /// allows one, and how: from the record's stored bytes and the batch
    /// that deletes it and its entries, the bytes stored beside the record
    /// (`{ns}:{key space}#drop:{record key without its namespace}`), in the
    /// write's commit. A
    /// store that keeps them deletes such a record in one round trip
    /// ([`delete_planned`](Store::delete_planned)). `None`, the default,
    /// keeps none; [`RedisStore`] keeps them when built with
    /// `delete_plans(true)`.
    fn delete_plans(&self) -> Option<PlanDelete> {
        None
    }

    /// Whether the store may hold delete plans, written by this process
    /// or another ([`delete_plans`](Store::delete_plans)): every delete
    /// then removes the record's plan, and so does maintenance that changes
    /// a record's entries without writing it. The default: when it keeps
    /// them.
    fn holds_plans(&self) -> bool {
        self.delete_plans().is_some()
    }

    /// Deletes the record at `key` by the plan at `plan` (see
    /// [`delete_plans`](Store::delete_plans)), in one commit, when that plan
    /// was written for the bytes the record holds with `tag`, and `unless`
    /// holds nothing; [`PlannedDelete::Unplanned`], writing nothing,
    /// otherwise (the caller then deletes the usual way). The default plans
    /// nothing.
    fn delete_planned(
        &self,
        key: &str,
        plan: &str,
        unless: &str,
        tag: u64,
    ) -> impl Future<Output = Result<PlannedDelete>> + Send {
        let _ = (key, plan, unless, tag);
        async { Ok(PlannedDelete::Unplanned) }
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

    /// Whether the store keeps change feeds: applies a batch's
    /// [`appends`](Batch::appends) in its commit and answers
    /// [`feed_read`](Store::feed_read). The default keeps none; a write of
    /// an entity with a feed then fails, naming the store, rather than
    /// commit without its event.
    fn keeps_feeds(&self) -> bool {
        false
    }

    /// A page of the feed at `feed`: at most `limit` entries after `after`
    /// (`None`: from the oldest retained), oldest first. When there are
    /// none yet, waits up to `wait` for one to be appended (a store wakes
    /// the reader when it is, it does not poll). The page says how far
    /// retention has removed entries, so a reader can tell it missed some.
    ///
    /// The default fails: this store has no change feed.
    fn feed_read(
        &self,
        feed: &str,
        after: Option<FeedPosition>,
        limit: usize,
        wait: std::time::Duration,
    ) -> impl Future<Output = Result<FeedPage>> + Send {
        let _ = (feed, after, limit, wait);
        let backend = self.backend();
        async move { Err(feed::no_feed(backend)) }
    }

    /// The position of the newest entry of the feed at `feed` (`None` when
    /// it has none): where a reader that wants only new entries starts.
    ///
    /// The default fails: this store has no change feed.
    fn feed_last(&self, feed: &str) -> impl Future<Output = Result<Option<FeedPosition>>> + Send {
        let _ = feed;
        let backend = self.backend();
        async move { Err(feed::no_feed(backend)) }
    }

    /// At most `limit` entries of the feed at `feed` for `consumer` of a
    /// consumer group, as `read` says, creating the group (at
    /// [`FeedConsumer::start`]) when it does not exist. An entry stays
    /// pending for its consumer until [`feed_ack`](Store::feed_ack).
    /// Entries retention removed before the group was given them are
    /// [`Error::FeedBehind`](crate::Error::FeedBehind), never a silent gap.
    ///
    /// The default fails: this store keeps no consumer groups.
    fn feed_group_read(
        &self,
        feed: &str,
        consumer: FeedConsumer<'_>,
        read: GroupRead,
        limit: usize,
        wait: std::time::Duration,
    ) -> impl Future<Output = Result<Vec<FeedEntry>>> + Send {
        let _ = (feed, consumer, read, limit, wait);
        let backend = self.backend();
        async move { Err(feed::no_groups(backend)) }
    }

    /// Acknowledges entries a consumer of `group` handled: they are not
    /// given again. Returns how many were pending.
    ///
    /// The default fails: this store keeps no consumer groups.
    fn feed_ack(
        &self,
        feed: &str,
        group: &str,
        positions: &[FeedPosition],
    ) -> impl Future<Output = Result<u64>> + Send {
        let _ = (feed, group, positions);
        let backend = self.backend();
        async move { Err(feed::no_groups(backend)) }
    }
}
