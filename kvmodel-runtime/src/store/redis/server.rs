//! `RedisStore`: a real Redis server.
//!
//! `commit` is one script: the one written for the batch's shape
//! (`shape`), or the commit script (`lua/commit.lua`, with `lua/general.lua`
//! behind it; loaded on `NOSCRIPT`). Either checks every condition and
//! validates every operation with the rules of
//! [`check`](fn@crate::store::check) (or moves back what it moved when a
//! command refuses a key of another kind), so a failed condition or a
//! malformed batch writes nothing. Sorted collections are sorted sets whose members are the
//! order-preserving entries (all scores 0, read with `ZRANGEBYLEX`); TTLs
//! are native (`PX`); counters are `INCRBY`; `get_many` is one `MGET`;
//! `get_via` and `range_values` are one run of the read script
//! (`lua/read.lua`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::{ErrorKind, Value};

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};
use crate::store::counter::{stamp_key, stamped, stamps_of};
use crate::store::redis::link::{Failure, Link, RedisStoreBuilder};
use crate::store::redis::scripts::{COMMIT, DELETE, READ};
use crate::store::redis::shape::{Shape, Shapes, handed_on};
use crate::store::redis::wire::{
    Reply, another_process, commit_args, error_reply, info_server_cmd, parse_scan_cursor,
    prefix_pattern, process_of, range_args, range_cmd, reply, scan_cmd, time_to_live, unexpected,
};
use crate::store::{
    FeedPage, FeedPosition, PlanDelete, PlannedDelete, RangeRequest, RangeResult, ScanPage, Store,
    Via, member_keys, page_from_entries, page_from_entries_with, scan_count,
};

/// A Redis store: a cheap-clone handle over one multiplexed connection,
/// opened again on the next call after it drops.
///
/// An unreachable server fails a call at once (one connection attempt within
/// the connect timeout, no retries). A commit whose reply is lost (response
/// timeout, connection dropped after sending) fails with
/// [`Error::OutcomeUnknown`]: it may have been applied. Timeouts are set with
/// [`RedisStore::builder`].
///
/// ```no_run
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// let store = kvmodel_runtime::RedisStore::connect("redis://127.0.0.1:6379").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    pub(super) link: Arc<Link>,
    sha: Arc<str>,
    read_sha: Arc<str>,
    delete_sha: Arc<str>,
    /// Whether writes keep delete plans ([`RedisStoreBuilder::delete_plans`]).
    plans: bool,
    shapes: Arc<Shapes<Shape>>,
    round_trips: Arc<AtomicU64>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("address", &self.link.address())
            .field("round_trips", &self.round_trips())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port[/db]`) with the default
    /// timeouts ([`RedisStoreBuilder`] has them).
    pub async fn connect(url: &str) -> Result<Self> {
        RedisStoreBuilder::new(url).connect().await
    }

    /// Options for the server at `url`: connect and response timeouts; then
    /// [`connect`](RedisStoreBuilder::connect).
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder::new(url)
    }

    /// Options for a `redis::Client` built by the caller.
    pub fn builder_from_client(client: redis::Client) -> RedisStoreBuilder {
        RedisStoreBuilder::from_client(client)
    }

    pub(crate) fn on(link: Link, plans: bool) -> Self {
        RedisStore {
            link: Arc::new(link),
            sha: Arc::from(redis::Script::new(COMMIT).get_hash()),
            read_sha: Arc::from(redis::Script::new(READ).get_hash()),
            delete_sha: Arc::from(redis::Script::new(DELETE).get_hash()),
            plans,
            shapes: Arc::new(Shapes::new(Shape::for_server)),
            round_trips: Arc::default(),
        }
    }

    /// How many requests this store (and its clones) sent to the server.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Counts one request sent.
    pub(super) fn count_round_trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        context: &'static str,
    ) -> Result<T> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        self.link
            .send(cmd)
            .await
            .map_err(|failure| self.read_failure(failure, context))
    }

    /// The error of a commit that failed with `failure`: a commit that was
    /// not sent, or was answered with an error, wrote nothing; one whose
    /// reply was lost may have been applied, or may be applied still.
    fn commit_failure(&self, failure: Failure) -> Error {
        match failure {
            Failure::NotSent(e) => Error::backend(
                "redis",
                format!(
                    "connect to `{}` to commit a batch (it was not sent; nothing was written)",
                    self.link.address()
                ),
                e,
            ),
            Failure::Sent(e) if error_reply(&e) => self
                .cluster_node(&e)
                .unwrap_or_else(|| Error::backend("redis", "run the commit script", e)),
            Failure::Sent(e) => Error::OutcomeUnknown {
                backend: "redis",
                source: Box::new(e),
            },
        }
    }

    /// The text of the commit script (for benchmarks).
    #[doc(hidden)]
    pub const COMMIT_SCRIPT: &'static str = COMMIT;

    /// The text of the script written for the shape of `batch`, when the
    /// store commits it with one (for tests).
    #[doc(hidden)]
    pub fn shape_script(batch: &Batch) -> Result<Option<String>> {
        let (_, argv) = commit_args(batch)?;
        Ok(crate::store::redis::shape::script(&argv[0]))
    }

    /// The `EVALSHA` arguments `commit` sends for `batch`: script SHA, `KEYS`,
    /// `ARGV` (for benchmarks and debugging with `redis-cli`).
    #[doc(hidden)]
    pub fn script_invocation(batch: &Batch) -> Result<(String, Vec<String>, Vec<Vec<u8>>)> {
        let (keys, argv) = commit_args(batch)?;
        let sha = redis::Script::new(COMMIT).get_hash().to_owned();
        Ok((sha, keys.into_iter().map(str::to_owned).collect(), argv))
    }

    /// Runs the commit script: `EVALSHA`, and on `NOSCRIPT` (the first
    /// commit on a server that has not seen it) `EVAL` with its text, which
    /// also caches it: at most two round trips.
    async fn eval(&self, keys: &[&str], argv: &[Vec<u8>]) -> Result<Value> {
        self.run_script(COMMIT, &self.sha, keys, argv)
            .await
            .map_err(|f| self.commit_failure(f))
    }

    /// Runs the shape script `shape`: `EVAL` with its text the first time
    /// this store sends it, `EVALSHA` after (and `EVAL` on `NOSCRIPT`).
    async fn eval_shape(&self, shape: &Shape, keys: &[&str], argv: &[Vec<u8>]) -> Result<Value> {
        let sent = if shape.sent.load(Ordering::Relaxed) {
            self.run_script(&shape.text, &shape.sha, keys, argv).await
        } else {
            let mut eval = redis::cmd("EVAL");
            eval.arg(&shape.text).arg(keys.len()).arg(keys).arg(argv);
            self.round_trips.fetch_add(1, Ordering::Relaxed);
            self.link.send(&eval).await
        };
        let value = sent.map_err(|f| self.commit_failure(f))?;
        shape.sent.store(true, Ordering::Relaxed);
        Ok(value)
    }

    /// Runs a read of the read script, as [`eval`](Self::eval) runs the
    /// commit script.
    async fn eval_read<T: redis::FromRedisValue>(
        &self,
        key: &str,
        argv: &[Vec<u8>],
        context: &'static str,
    ) -> Result<T> {
        let reply = self
            .run_script(READ, &self.read_sha, &[key], argv)
            .await
            .map_err(|failure| self.read_failure(failure, context))?;
        redis::from_redis_value(reply).map_err(|e| Error::backend("redis", context, e))
    }

    async fn run_script(
        &self,
        text: &str,
        sha: &str,
        keys: &[&str],
        argv: &[Vec<u8>],
    ) -> std::result::Result<Value, Failure> {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(sha).arg(keys.len()).arg(keys).arg(argv);
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        match self.link.send(&evalsha).await {
            Err(Failure::Sent(e))
                if e.kind() == ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                let mut eval = redis::cmd("EVAL");
                eval.arg(text).arg(keys.len()).arg(keys).arg(argv);
                self.round_trips.fetch_add(1, Ordering::Relaxed);
                self.link.send(&eval).await
            }
            other => other,
        }
    }

    /// The error of a read that failed with `failure`.
    pub(super) fn read_failure(&self, failure: Failure, context: &'static str) -> Error {
        match failure {
            Failure::NotSent(e) => Error::backend(
                "redis",
                format!("connect to `{}` to {context}", self.link.address()),
                e,
            ),
            Failure::Sent(e) => self
                .cluster_node(&e)
                .unwrap_or_else(|| Error::backend("redis", context, e)),
        }
    }

    /// The error of a store opened on one node of a Redis Cluster, told by
    /// the node's refusal of a key it does not serve (`MOVED`, `ASK`) or of
    /// keys of several slots (`CROSSSLOT`): such a refusal comes before the
    /// command runs, so nothing was written.
    fn cluster_node(&self, e: &redis::RedisError) -> Option<Error> {
        use redis::ServerErrorKind::{Ask, ClusterDown, CrossSlot, Moved};
        let ErrorKind::Server(Moved | Ask | CrossSlot | ClusterDown) = e.kind() else {
            return None;
        };
        let at = self.link.address();
        Some(Error::backend(
            "redis",
            format!(
                "use `{at}`: it is a node of a Redis Cluster, which RedisStore does not \
                 route (nothing was written); open it as a cluster with \
                 `redis+cluster://{at}` (RedisClusterStore, feature `redis-cluster`)"
            ),
            e.clone(),
        ))
    }
}

impl Store for RedisStore {
    fn backend(&self) -> &'static str {
        "redis"
    }

    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        if batch.is_empty() {
            return Ok(Outcome::Applied);
        }
        let batch = stamped(batch);
        let (keys, argv) = commit_args(&batch)?;
        let value = match self.shapes.get(&argv[0]) {
            Some(shape) => {
                let value = self.eval_shape(&shape, &keys, &argv).await?;
                if handed_on(&value) {
                    self.eval(&keys, &argv).await?
                } else {
                    value
                }
            }
            None => self.eval(&keys, &argv).await?,
        };
        match reply(&value, "redis")? {
            Reply::Done(_) => Ok(Outcome::Applied),
            Reply::Failed { index, .. } => Ok(Outcome::Failed { index }),
            Reply::Invalid { key, reason } => Err(Error::InvalidBatch { key, reason }),
            // Only the cluster's scripts answer these.
            Reply::Locked(_) | Reply::Refused(_) => Err(unexpected("redis", &value)),
        }
    }

    fn delete_plans(&self) -> Option<PlanDelete> {
        self.plans
            .then_some(crate::store::redis::plan::encode as PlanDelete)
    }

    fn holds_plans(&self) -> bool {
        true
    }

    async fn delete_planned(
        &self,
        key: &str,
        plan: &str,
        unless: &str,
        tag: u64,
    ) -> Result<PlannedDelete> {
        let tag = crate::store::redis::plan::tag_arg(tag);
        let value = self
            .run_script(DELETE, &self.delete_sha, &[key, plan, unless], &[tag])
            .await
            .map_err(|f| self.commit_failure(f))?;
        crate::store::redis::plan::answer(&value, "redis")
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(key);
        self.query(&cmd, "read a value").await
    }

    async fn change_stamps(&self, keys: &[String]) -> Result<Option<Vec<u64>>> {
        let stamps: Vec<String> = keys.iter().map(|k| stamp_key(k)).collect();
        Ok(Some(stamps_of(self.get_many(&stamps).await?)))
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("MGET");
        cmd.arg(keys);
        self.query(&cmd, "read values").await
    }

    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        let cmd = range_cmd(key, &req);
        let entries: Vec<Vec<u8>> = self.query(&cmd, "read a sorted collection").await?;
        page_from_entries(entries, req.limit)
    }

    async fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        let (name, args) = range_args(&req);
        let mut argv = vec![b"page".to_vec(), name.as_bytes().to_vec()];
        argv.extend(args);
        let (entries, mut values): (Vec<Vec<u8>>, Vec<Option<Vec<u8>>>) = self
            .eval_read(key, &argv, "read a sorted collection and its records")
            .await?;
        values.truncate(req.limit);
        let (range, mut values) = page_from_entries_with(entries, values, req.limit);
        // The script reads raw member bytes; a member that is not UTF-8
        // names no key.
        for (value, name) in values.iter_mut().zip(member_keys(&range)) {
            if name.is_none() {
                *value = None;
            }
        }
        Ok((range, values))
    }

    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        let reply: Vec<Option<Vec<u8>>> = self
            .eval_read(key, &[b"via".to_vec()], "read a key and the key it names")
            .await?;
        let mut reply = reply.into_iter();
        let Some(Some(pointer)) = reply.next() else {
            return Ok(None);
        };
        // A value that is not UTF-8 names no key.
        let target = reply
            .next()
            .flatten()
            .filter(|_| std::str::from_utf8(&pointer).is_ok());
        Ok(Some((pointer, target)))
    }

    async fn collection_len(&self, key: &str) -> Result<u64> {
        let mut cmd = redis::cmd("ZCARD");
        cmd.arg(key);
        self.query(&cmd, "count a sorted collection").await
    }

    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        let (mut made_on, mut at) = match &cursor {
            Some(c) => std::str::from_utf8(c)
                .ok()
                .and_then(parse_scan_cursor)
                .ok_or_else(|| Error::InvalidCursor {
                    reason: "it is not a Redis scan cursor".to_owned(),
                })?,
            None => (None, 0),
        };
        loop {
            // One write on one connection: both run on one server process.
            let mut pipe = redis::pipe();
            pipe.add_command(info_server_cmd())
                .add_command(scan_cmd(at, &prefix_pattern(prefix), scan_count(count)))
                .ignore_errors();
            self.round_trips.fetch_add(1, Ordering::Relaxed);
            let (info, scan): (Value, Value) = self
                .link
                .send_pipe(&pipe)
                .await
                .map_err(|failure| self.read_failure(failure, "scan keys"))?;
            let now = process_of(&info);
            if another_process(made_on, now.as_deref()) {
                // Another server process than the one that made the cursor:
                // its keys from the start (some again, none missed).
                (made_on, at) = (None, 0);
                continue;
            }
            let (next, keys): (u64, Vec<String>) = redis::from_redis_value(scan)
                .map_err(|e| Error::backend("redis", "scan keys", e))?;
            let now = now.unwrap_or_default();
            return Ok(ScanPage {
                keys,
                next: (next != 0).then(|| format!("{now}:{next}").into_bytes()),
            });
        }
    }

    fn keeps_feeds(&self) -> bool {
        true
    }

    async fn feed_read(
        &self,
        feed: &str,
        after: Option<FeedPosition>,
        limit: usize,
        wait: std::time::Duration,
    ) -> Result<FeedPage> {
        super::feed::feed_page(self, feed, after, limit, wait).await
    }

    async fn feed_last(&self, feed: &str) -> Result<Option<FeedPosition>> {
        super::feed::feed_newest(self, feed).await
    }

    async fn feed_group_read(
        &self,
        feed: &str,
        consumer: crate::store::FeedConsumer<'_>,
        read: crate::store::GroupRead,
        limit: usize,
        wait: std::time::Duration,
    ) -> Result<Vec<crate::store::FeedEntry>> {
        super::feed::feed_group_page(self, feed, consumer, read, limit, wait).await
    }

    async fn feed_ack(&self, feed: &str, group: &str, positions: &[FeedPosition]) -> Result<u64> {
        super::feed::feed_acknowledge(self, feed, group, positions).await
    }

    async fn time_to_live(&self, key: &str) -> Result<Option<std::time::Duration>> {
        let mut cmd = redis::cmd("PTTL");
        cmd.arg(key);
        let ms: i64 = self.query(&cmd, "read a time to live").await?;
        Ok(time_to_live(ms))
    }
}
