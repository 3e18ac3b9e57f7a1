//! `RedisClusterStore`: a Redis Cluster.
//!
//! Routing, `MOVED`/`ASK` redirections and script loading are the redis
//! crate's async cluster client's. This store adds what a cluster needs
//! for the [`Store`] contract:
//!
//! - a batch whose keys share one hash slot commits as one script: the
//!   Redis server's own `lua/commit.lua`, behind a check that no key is
//!   held by an unfinished cross-slot write (`commit`, `docs/cluster.md`);
//! - a batch across slots follows the cross-slot protocol (`protocol`):
//!   locks and early effects, a commit point in the record's slot, late
//!   effects applied once, crash-safe and finished or undone by whoever
//!   meets its leftovers (`recovery`);
//! - the discovery set of an entity (`…#all`) is sharded over several
//!   slots, so it is not one giant key on one node, and an expiry receipt
//!   shares its record's slot (`layout`);
//! - a change feed is one Stream in its own slot, appended to by each
//!   write's commit (late, applied once, when it is not the record's
//!   slot) and read from the node that serves it (`feed`);
//! - `scan` walks every master; `get_many` is one `MGET` the client splits
//!   per slot.
//!
//! Keys may live under a prefix ([`RedisClusterStoreBuilder::key_prefix`]),
//! so that several applications (or tests) share one cluster.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::cluster_async::ClusterConnection;

use crate::error::Result;
use crate::store::batch::{Batch, Outcome};
use crate::store::counter::{stamp_key, stamped, stamps_of};
use crate::store::redis::feed as stream;
use crate::store::redis::scripts::Scripts;
use crate::store::redis::wire::time_to_live;
use crate::store::spread::Spread;
use crate::store::{
    FeedConsumer, FeedEntry, FeedPage, FeedPosition, GroupRead, RangeRequest, RangeResult,
    ScanPage, Store, Via, page_from_entries,
};

mod commit;
mod feed;
mod layout;
mod link;
mod plan;
mod protocol;
mod recovery;
mod scan;
mod slots;

pub use link::RedisClusterStoreBuilder;
pub use protocol::CrashPoint;
pub use recovery::Recovery;

/// How long a cross-slot write may take from its first step to its commit
/// point, unless [`RedisClusterStoreBuilder::lease`] says otherwise. Past
/// it (plus as much again), others may undo it.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(5);

/// How many keys the discovery set of each entity is spread over, unless
/// [`RedisClusterStoreBuilder::discovery_shards`] says otherwise.
pub const DEFAULT_DISCOVERY_SHARDS: u16 = 16;

/// A Redis Cluster store: a cheap-clone handle over the redis crate's
/// async cluster connection.
///
/// ```no_run
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// use kvmodel_runtime::RedisClusterStore;
/// let store = RedisClusterStore::connect(&["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisClusterStore {
    inner: Arc<Inner>,
    crash: Option<CrashPoint>,
}

struct Inner {
    conn: ClusterConnection,
    seeds: Vec<String>,
    prefix: String,
    lease: Duration,
    shards: u16,
    scripts: Scripts,
    round_trips: AtomicU64,
    /// How many ms the clock that leases go by is ahead of the servers'
    /// (and this process's) clock: 0, unless a test moved it on
    /// ([`RedisClusterStore::outlive_leases`]).
    lease_clock_ahead: AtomicU64,
    /// How long opening a connection to a node may take.
    connect_timeout: Duration,
    /// The certificate authorities of `rediss://` seeds, if not the system's.
    #[cfg(feature = "tls")]
    tls_roots: Option<Vec<u8>>,
    /// Connections for blocking feed reads.
    blocking: feed::Blocking,
}

impl std::fmt::Debug for RedisClusterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisClusterStore")
            .field("seeds", &self.inner.seeds)
            .field("prefix", &self.inner.prefix)
            .field("lease", &self.inner.lease)
            .field("round_trips", &self.round_trips())
            .finish_non_exhaustive()
    }
}

impl RedisClusterStore {
    /// Connects to the cluster that `seeds` (`redis://HOST:PORT` URLs of
    /// some of its nodes) belong to, with the defaults
    /// ([`RedisClusterStoreBuilder`] has the options).
    pub async fn connect(seeds: &[&str]) -> Result<Self> {
        RedisClusterStoreBuilder::new(seeds).connect().await
    }

    /// Options for the cluster that `seeds` belong to; then
    /// [`connect`](RedisClusterStoreBuilder::connect).
    pub fn builder(seeds: &[&str]) -> RedisClusterStoreBuilder {
        RedisClusterStoreBuilder::new(seeds)
    }

    /// How many requests this store (and its clones) sent to the cluster.
    /// Requests sent together (the slots of one step, the shards of a
    /// listing) are one round trip of latency but count one each here.
    pub fn round_trips(&self) -> u64 {
        self.inner.round_trips.load(Ordering::Relaxed)
    }

    /// The prefix every key is stored under
    /// ([`RedisClusterStoreBuilder::key_prefix`]; empty for none): with
    /// [`hash_slot`](crate::codec::key::hash_slot), which slot a key is
    /// stored in.
    pub fn key_prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// The lease of cross-slot writes.
    pub fn lease(&self) -> Duration {
        self.inner.lease
    }

    /// For tests of the protocol: moves the clock that this store and its
    /// clones judge leases by on by the lease and its margin, so that every
    /// cross-slot write stamped before this call is overdue to them at
    /// once, as if that much time had passed (recovery, `verify` and a
    /// write meeting its holds may then finish or undo it). Writes stamped
    /// after it go by the moved clock too; only leases do (times to live,
    /// claims and feeds keep the servers' time). Call it only while no
    /// writer of those writes can be running (e.g. after a crash point).
    #[doc(hidden)]
    #[cfg(feature = "conformance")]
    pub fn outlive_leases(&self) {
        let by = self.inner.lease + self.margin() + std::time::Duration::from_millis(1);
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX / 4);
        self.inner
            .lease_clock_ahead
            .fetch_add(by, Ordering::Relaxed);
    }

    /// How many ms the clock leases go by is ahead of real time (0 unless
    /// a test moved it on).
    pub(crate) fn lease_clock_ahead(&self) -> u64 {
        self.inner.lease_clock_ahead.load(Ordering::Relaxed)
    }

    /// For tests of the protocol: a handle whose cross-slot commits stop at
    /// `point`, as if the process died there, and fail. Nothing is undone;
    /// what is left is what a crash at that point leaves.
    #[doc(hidden)]
    pub fn crashing_at(&self, point: CrashPoint) -> Self {
        RedisClusterStore {
            inner: self.inner.clone(),
            crash: Some(point),
        }
    }
}

impl Store for RedisClusterStore {
    fn backend(&self) -> &'static str {
        "redis-cluster"
    }

    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        if batch.is_empty() {
            return Ok(Outcome::Applied);
        }
        let batch = self.physical(stamped(batch))?;
        self.commit_physical(batch).await
    }

    /// The stamps, and for a counter an unfinished cross-slot write holds
    /// (its increment still to come, or its collection member added
    /// early), `u64::MAX`: it cannot be judged now.
    async fn change_stamps(&self, keys: &[String]) -> Result<Option<Vec<u64>>> {
        if keys.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let mut cmd = redis::cmd("MGET");
        for k in keys {
            cmd.arg(self.phys(&stamp_key(k)));
        }
        for k in keys {
            cmd.arg(slots::lock_key(&self.inner.prefix, &self.phys(k)));
        }
        let mut values: Vec<Option<Vec<u8>>> = self.query(&cmd, "read counter stamps").await?;
        let locks = values.split_off(keys.len());
        let shared = futures_util::future::try_join_all(keys.iter().map(|k| async move {
            let mut cmd = redis::cmd("EXISTS");
            cmd.arg(slots::share_key(&self.inner.prefix, &self.phys(k)));
            self.query::<bool>(&cmd, "read shared holds").await
        }))
        .await?;
        let mut stamps = stamps_of(values);
        for ((stamp, lock), shared) in stamps.iter_mut().zip(locks).zip(shared) {
            if lock.is_some() || shared {
                *stamp = u64::MAX;
            }
        }
        Ok(Some(stamps))
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.phys(key));
        self.query(&cmd, "read a value").await
    }

    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        let Some(pointer) = self.get(key).await? else {
            return Ok(None);
        };
        // A value that is not UTF-8 names no key. The target is read with
        // `MGET`, which answers nothing (not an error) for a collection.
        let target = match std::str::from_utf8(&pointer) {
            Ok(k) => self.get_many(&[k.to_owned()]).await?.pop().flatten(),
            Err(_) => None,
        };
        Ok(Some((pointer, target)))
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("MGET");
        for k in keys {
            cmd.arg(self.phys(k));
        }
        self.query(&cmd, "read values").await
    }

    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        match self.shards_of(key) {
            Some(shards) => self.merged_range(&shards, req).await,
            None => {
                let limit = req.limit;
                let entries = self.entries(&self.phys(key), req).await?;
                page_from_entries(entries, limit)
            }
        }
    }

    async fn collection_len(&self, key: &str) -> Result<u64> {
        let keys = self.shards_of(key).unwrap_or_else(|| vec![self.phys(key)]);
        let mut n = 0;
        for k in keys {
            let mut cmd = redis::cmd("ZCARD");
            cmd.arg(k);
            n += self.query::<u64>(&cmd, "count a sorted collection").await?;
        }
        Ok(n)
    }

    async fn time_to_live(&self, key: &str) -> Result<Option<Duration>> {
        let mut cmd = redis::cmd("PTTL");
        cmd.arg(self.phys(key));
        let ms: i64 = self.query(&cmd, "read a time to live").await?;
        Ok(time_to_live(ms))
    }

    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        self.scan_masters(prefix, cursor, count).await
    }

    async fn recover(&self) -> Result<u64> {
        let done = self.recover_writes(false).await?;
        Ok(done.finished + done.undone)
    }

    async fn unfinished_writes(&self) -> Result<Vec<String>> {
        self.stuck_writes().await
    }

    /// A feed is one Stream in its own slot, appended to in the commit of
    /// every write (`docs/feed.md`, "On Redis Cluster").
    fn keeps_feeds(&self) -> bool {
        true
    }

    async fn feed_read(
        &self,
        feed: &str,
        after: Option<FeedPosition>,
        limit: usize,
        wait: Duration,
    ) -> Result<FeedPage> {
        stream::feed_page(self, &self.phys(feed), after, limit, wait).await
    }

    async fn feed_last(&self, feed: &str) -> Result<Option<FeedPosition>> {
        stream::feed_newest(self, &self.phys(feed)).await
    }

    async fn feed_group_read(
        &self,
        feed: &str,
        consumer: FeedConsumer<'_>,
        read: GroupRead,
        limit: usize,
        wait: Duration,
    ) -> Result<Vec<FeedEntry>> {
        stream::feed_group_page(self, &self.phys(feed), consumer, read, limit, wait).await
    }

    async fn feed_ack(&self, feed: &str, group: &str, positions: &[FeedPosition]) -> Result<u64> {
        stream::feed_acknowledge(self, &self.phys(feed), group, positions).await
    }
}
