//! `AnyStore`: a store chosen at run time from a URL.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome, Planned};
use crate::store::memory::MemoryStore;
use crate::store::{
    MemberRef, PlanDelete, PlannedDelete, RangeRequest, RangeResult, ScanPage, Store, Via,
};

/// One of the built-in stores, chosen at run time (for example from a
/// configuration value): [`Store`] is generic, not `dyn`, so a program that
/// picks its backend at run time holds an `AnyStore`, which every generated
/// repository accepts and which forwards each call to the store inside.
///
/// [`AnyStore::open`] reads a URL:
///
/// | URL | store |
/// |---|---|
/// | `memory:` | a fresh [`MemoryStore`] |
/// | `redb:PATH` | [`RedbStore::open(PATH)`](crate::RedbStore::open) (feature `redb`) |
/// | `redis://HOST:PORT[/DB]`, `redis+unix://…`, `unix://…` | [`RedisStore::connect(URL)`](crate::RedisStore::connect) (feature `redis`) |
/// | `rediss://HOST:PORT[/DB][#insecure]` | the same over TLS (feature `tls`) |
/// | `redis+cluster://[USER:PASSWORD@]HOST:PORT,HOST:PORT,…` | [`RedisClusterStore::connect`](crate::RedisClusterStore::connect) with a `redis://[USER:PASSWORD@]HOST:PORT` seed per node named (feature `redis-cluster`) |
/// | `rediss+cluster://HOST:PORT,…[#insecure]` | the same over TLS, with `rediss://HOST:PORT` seeds (features `redis-cluster` and `tls`) |
/// | `dynamodb://TABLE?region=REGION&endpoint=URL` | a `DynamoStore` on `TABLE` (feature `dynamodb`; both options optional, the AWS chain fills in the rest; opening creates nothing) |
///
/// Over TLS the server's certificate is verified against the system's roots
/// (or the PEM file `SSL_CERT_FILE` names) and must name the host; a URL
/// ending in `#insecure` skips that check (for tests only). A private CA
/// can also be given to the builders (`tls_root_certificates`).
///
/// A store built by hand (a Redis store with its own timeouts, a memory store
/// on a manual clock) converts with `AnyStore::from(store)`.
///
/// `AnyStore` is `Clone`, and cheap to clone: a clone is another handle on
/// the same store, never a copy of its data: clones of a memory store share
/// its contents and clock, of a redb store its one open database, of a Redis
/// store its one multiplexed connection, of a cluster store its connections
/// to the nodes. Clone it to give each repository (or each task) its own
/// handle rather than wrapping it in an `Arc`; a write through one clone is
/// seen by every other.
///
/// ```
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// use kvmodel_runtime::{Batch, Store, store::AnyStore};
///
/// let store = AnyStore::open("memory:").await?;
/// let other = store.clone();
/// let mut batch = Batch::new();
/// batch.put("greeting", b"hello".to_vec(), None);
/// other.commit(batch).await?;
/// assert_eq!(store.get("greeting").await?, Some(b"hello".to_vec()));
/// # Ok(()) }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
/// ```
///
/// ```
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// use kvmodel_runtime::{Batch, Store, store::AnyStore};
///
/// let store = AnyStore::open("memory:").await?;
/// let mut batch = Batch::new();
/// batch.put("greeting", b"hello".to_vec(), None);
/// store.commit(batch).await?;
/// assert_eq!(store.backend(), "memory");
/// # Ok(()) }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AnyStore {
    /// An in-memory store.
    Memory(MemoryStore),
    /// An embedded redb file.
    #[cfg(feature = "redb")]
    Redb(crate::RedbStore),
    /// A Redis server.
    #[cfg(feature = "redis")]
    Redis(crate::RedisStore),
    /// A Redis Cluster.
    #[cfg(feature = "redis-cluster")]
    Cluster(crate::RedisClusterStore),
    /// An Amazon DynamoDB table.
    #[cfg(feature = "dynamodb")]
    Dynamo(crate::DynamoStore),
}

/// The URL forms [`AnyStore::open`] reads, for messages.
const FORMS: &str = "`memory:`, `redb:PATH`, `redis://HOST:PORT`, `rediss://HOST:PORT`, \
                     `redis+cluster://HOST:PORT,HOST:PORT`, \
                     `rediss+cluster://HOST:PORT,HOST:PORT` or `dynamodb://TABLE?region=REGION`";

impl AnyStore {
    /// Opens the store `url` names (see [`AnyStore`]). A URL of no known
    /// form, or of a backend whose cargo feature is off, is
    /// [`Error::InvalidUrl`]; a store that cannot be opened fails as its
    /// backend does.
    pub async fn open(url: &str) -> Result<AnyStore> {
        let (scheme, rest) = url.split_once(':').ok_or_else(|| Error::InvalidUrl {
            url: url.to_owned(),
            reason: format!("it names no store; write {FORMS}"),
        })?;
        match scheme.to_ascii_lowercase().as_str() {
            "memory" => {
                if !rest.is_empty() && rest != "//" {
                    return Err(Error::InvalidUrl {
                        url: url.to_owned(),
                        reason: "a memory store takes nothing after `memory:`; write `memory:`"
                            .to_owned(),
                    });
                }
                Ok(AnyStore::Memory(MemoryStore::new()))
            }
            "redb" => open_redb(url, rest),
            "redis" | "redis+unix" | "unix" => open_redis(url).await,
            "rediss" => open_redis_tls(url).await,
            "redis+cluster" => open_cluster(url, cluster_seeds(url, rest, false)?).await,
            "dynamodb" => open_dynamo(url).await,
            "rediss+cluster" => {
                let seeds = cluster_seeds(url, rest, true)?;
                if cfg!(feature = "tls") {
                    open_cluster(url, seeds).await
                } else {
                    Err(feature_off(url, "tls", "RedisClusterStore over TLS"))
                }
            }
            _ => Err(Error::InvalidUrl {
                url: url.to_owned(),
                reason: format!("`{scheme}:` is not a known store; write {FORMS}"),
            }),
        }
    }
}

#[cfg(feature = "redb")]
fn open_redb(url: &str, path: &str) -> Result<AnyStore> {
    if path.is_empty() {
        return Err(Error::InvalidUrl {
            url: url.to_owned(),
            reason: "it names no file; write `redb:PATH`, e.g. `redb:data/app.redb`".to_owned(),
        });
    }
    crate::RedbStore::open(path).map(AnyStore::Redb)
}

#[cfg(not(feature = "redb"))]
fn open_redb(url: &str, _path: &str) -> Result<AnyStore> {
    Err(feature_off(url, "redb", "RedbStore"))
}

#[cfg(feature = "redis")]
async fn open_redis(url: &str) -> Result<AnyStore> {
    crate::RedisStore::connect(url).await.map(AnyStore::Redis)
}

#[cfg(not(feature = "redis"))]
async fn open_redis(url: &str) -> Result<AnyStore> {
    Err(feature_off(url, "redis", "RedisStore"))
}

#[cfg(feature = "tls")]
async fn open_redis_tls(url: &str) -> Result<AnyStore> {
    open_redis(url).await
}

#[cfg(not(feature = "tls"))]
async fn open_redis_tls(url: &str) -> Result<AnyStore> {
    Err(feature_off(url, "tls", "RedisStore over TLS"))
}

/// The seeds of a `redis+cluster://[USER:PASSWORD@]HOST:PORT,HOST:PORT`
/// URL, as `redis://[USER:PASSWORD@]HOST:PORT` URLs (the credentials, if
/// any, for every node); of a `rediss+cluster://…[#insecure]` one, as
/// `rediss://…[#insecure]` URLs.
fn cluster_seeds(url: &str, rest: &str, tls: bool) -> Result<Vec<String>> {
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) if tls => (rest, format!("#{fragment}")),
        _ => (rest, String::new()),
    };
    // A password may hold `@` only percent-encoded, as in any URL; the
    // hosts never do.
    let (credentials, hosts) = match rest.rsplit_once('@') {
        Some((user, hosts)) if !user.is_empty() && !user.contains(['/', '?', '#', ',']) => {
            (format!("{user}@"), hosts)
        }
        _ => (String::new(), rest),
    };
    let scheme = if tls { "rediss" } else { "redis" };
    let seeds: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| format!("{scheme}://{credentials}{h}{fragment}"))
        .collect();
    if seeds.is_empty() || hosts.contains(['/', '?', '@', '#']) {
        return Err(Error::InvalidUrl {
            url: url.to_owned(),
            reason: format!(
                "write the cluster's nodes as `{scheme}+cluster://HOST:PORT,HOST:PORT` \
                 (`{scheme}+cluster://USER:PASSWORD@HOST:PORT,…` with credentials), at \
                 least one, with nothing after them{}",
                if tls { " but `#insecure`" } else { "" }
            ),
        });
    }
    Ok(seeds)
}

#[cfg(feature = "redis-cluster")]
async fn open_cluster(_url: &str, seeds: Vec<String>) -> Result<AnyStore> {
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    crate::RedisClusterStore::connect(&seeds)
        .await
        .map(AnyStore::Cluster)
}

#[cfg(not(feature = "redis-cluster"))]
async fn open_cluster(url: &str, _seeds: Vec<String>) -> Result<AnyStore> {
    Err(feature_off(url, "redis-cluster", "RedisClusterStore"))
}

#[cfg(feature = "dynamodb")]
async fn open_dynamo(url: &str) -> Result<AnyStore> {
    crate::DynamoStore::open_url(url)
        .await
        .map(AnyStore::Dynamo)
}

#[cfg(not(feature = "dynamodb"))]
async fn open_dynamo(url: &str) -> Result<AnyStore> {
    Err(feature_off(url, "dynamodb", "DynamoStore"))
}

/// The error for a URL whose backend was compiled out.
#[cfg_attr(
    all(
        feature = "redb",
        feature = "redis",
        feature = "redis-cluster",
        feature = "tls",
        feature = "dynamodb"
    ),
    allow(dead_code)
)]
fn feature_off(url: &str, feature: &str, store: &str) -> Error {
    Error::InvalidUrl {
        url: url.to_owned(),
        reason: format!(
            "it names the {store}, which this build leaves out; enable the cargo feature \
             `{feature}` of kvmodel (`kvmodel = {{ version = \"…\", features = [\"{feature}\"] }}`)"
        ),
    }
}

impl From<MemoryStore> for AnyStore {
    fn from(store: MemoryStore) -> Self {
        AnyStore::Memory(store)
    }
}

#[cfg(feature = "redb")]
impl From<crate::RedbStore> for AnyStore {
    fn from(store: crate::RedbStore) -> Self {
        AnyStore::Redb(store)
    }
}

#[cfg(feature = "redis")]
impl From<crate::RedisStore> for AnyStore {
    fn from(store: crate::RedisStore) -> Self {
        AnyStore::Redis(store)
    }
}

#[cfg(feature = "redis-cluster")]
impl From<crate::RedisClusterStore> for AnyStore {
    fn from(store: crate::RedisClusterStore) -> Self {
        AnyStore::Cluster(store)
    }
}

#[cfg(feature = "dynamodb")]
impl From<crate::DynamoStore> for AnyStore {
    fn from(store: crate::DynamoStore) -> Self {
        AnyStore::Dynamo(store)
    }
}

/// `$body` with `$s` bound to the store inside `$any`.
macro_rules! each {
    ($any:expr, $s:ident => $body:expr) => {
        match $any {
            AnyStore::Memory($s) => $body,
            #[cfg(feature = "redb")]
            AnyStore::Redb($s) => $body,
            #[cfg(feature = "redis")]
            AnyStore::Redis($s) => $body,
            #[cfg(feature = "redis-cluster")]
            AnyStore::Cluster($s) => $body,
            #[cfg(feature = "dynamodb")]
            AnyStore::Dynamo($s) => $body,
        }
    };
}

impl Store for AnyStore {
    fn backend(&self) -> &'static str {
        each!(self, s => s.backend())
    }

    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        each!(self, s => s.commit(batch).await)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        each!(self, s => s.get(key).await)
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        each!(self, s => s.get_many(keys).await)
    }

    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        each!(self, s => s.range(key, req).await)
    }

    fn orders_keys(&self) -> bool {
        each!(self, s => s.orders_keys())
    }

    fn keeps_feeds(&self) -> bool {
        each!(self, s => s.keeps_feeds())
    }

    async fn feed_read(
        &self,
        feed: &str,
        after: Option<crate::store::FeedPosition>,
        limit: usize,
        wait: std::time::Duration,
    ) -> Result<crate::store::FeedPage> {
        each!(self, s => s.feed_read(feed, after, limit, wait).await)
    }

    async fn feed_last(&self, feed: &str) -> Result<Option<crate::store::FeedPosition>> {
        each!(self, s => s.feed_last(feed).await)
    }

    async fn feed_group_read(
        &self,
        feed: &str,
        consumer: crate::store::FeedConsumer<'_>,
        read: crate::store::GroupRead,
        limit: usize,
        wait: std::time::Duration,
    ) -> Result<Vec<crate::store::FeedEntry>> {
        each!(self, s => s.feed_group_read(feed, consumer, read, limit, wait).await)
    }

    async fn feed_ack(
        &self,
        feed: &str,
        group: &str,
        positions: &[crate::store::FeedPosition],
    ) -> Result<u64> {
        each!(self, s => s.feed_ack(feed, group, positions).await)
    }

    async fn range_keys_with<T, K, F>(
        &self,
        prefix: &str,
        keep: K,
        req: RangeRequest,
        read: F,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)>
    where
        T: Send,
        K: Fn(&str) -> bool + Send,
        F: FnMut(&str, Option<&[u8]>) -> T + Send,
    {
        each!(self, s => s.range_keys_with(prefix, keep, req, read).await)
    }

    async fn commit_after_read<T, F>(&self, keys: &[String], plan: F) -> Result<(Outcome, T)>
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        each!(self, s => s.commit_after_read(keys, plan).await)
    }

    async fn get_via(&self, key: &str) -> Result<Option<Via>> {
        each!(self, s => s.get_via(key).await)
    }

    async fn range_values(
        &self,
        key: &str,
        req: RangeRequest,
    ) -> Result<(RangeResult, Vec<Option<Vec<u8>>>)> {
        each!(self, s => s.range_values(key, req).await)
    }

    async fn get_with<T, F>(&self, key: &str, read: F) -> Result<T>
    where
        T: Send,
        F: FnOnce(Option<&[u8]>) -> T + Send,
    {
        each!(self, s => s.get_with(key, read).await)
    }

    async fn range_values_with<T, F>(
        &self,
        key: &str,
        req: RangeRequest,
        read: F,
    ) -> Result<(Vec<T>, Option<Vec<u8>>)>
    where
        T: Send,
        F: FnMut(MemberRef<'_>, Option<&[u8]>) -> T + Send,
    {
        each!(self, s => s.range_values_with(key, req, read).await)
    }

    async fn time_to_live(&self, key: &str) -> Result<Option<Duration>> {
        each!(self, s => s.time_to_live(key).await)
    }

    async fn counter(&self, key: &str) -> Result<i64> {
        each!(self, s => s.counter(key).await)
    }

    async fn collection_len(&self, key: &str) -> Result<u64> {
        each!(self, s => s.collection_len(key).await)
    }

    async fn now_ms(&self) -> Result<u64> {
        each!(self, s => s.now_ms().await)
    }

    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        each!(self, s => s.scan(prefix, cursor, count).await)
    }

    async fn recover(&self) -> Result<u64> {
        each!(self, s => s.recover().await)
    }

    async fn unfinished_writes(&self) -> Result<Vec<String>> {
        each!(self, s => s.unfinished_writes().await)
    }

    async fn snapshot(&self) -> Result<Option<Self>> {
        Ok(match self {
            AnyStore::Memory(s) => s.snapshot().await?.map(AnyStore::Memory),
            #[cfg(feature = "redb")]
            AnyStore::Redb(s) => s.snapshot().await?.map(AnyStore::Redb),
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.snapshot().await?.map(AnyStore::Redis),
            #[cfg(feature = "redis-cluster")]
            AnyStore::Cluster(s) => s.snapshot().await?.map(AnyStore::Cluster),
            #[cfg(feature = "dynamodb")]
            AnyStore::Dynamo(s) => s.snapshot().await?.map(AnyStore::Dynamo),
        })
    }

    async fn change_stamps(&self, keys: &[String]) -> Result<Option<Vec<u64>>> {
        each!(self, s => s.change_stamps(keys).await)
    }

    fn delete_plans(&self) -> Option<PlanDelete> {
        each!(self, s => s.delete_plans())
    }

    fn holds_plans(&self) -> bool {
        each!(self, s => s.holds_plans())
    }

    async fn delete_planned(
        &self,
        key: &str,
        plan: &str,
        unless: &str,
        tag: u64,
    ) -> Result<PlannedDelete> {
        each!(self, s => s.delete_planned(key, plan, unless, tag).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_left_out_backend_says_which_feature_to_enable() {
        let text = feature_off("redis://h:1", "redis", "RedisStore").to_string();
        assert!(text.contains("`redis://h:1`"), "{text}");
        assert!(text.contains("features = [\"redis\"]"), "{text}");
    }

    #[test]
    fn a_tls_cluster_url_gives_tls_seeds() {
        let url = "rediss+cluster://a:1,b:2";
        let seeds = cluster_seeds(url, "//a:1,b:2", true).unwrap();
        assert_eq!(seeds, ["rediss://a:1", "rediss://b:2"]);
        let seeds = cluster_seeds(url, "//a:1,b:2#insecure", true).unwrap();
        assert_eq!(seeds, ["rediss://a:1#insecure", "rediss://b:2#insecure"]);
        let seeds = cluster_seeds(url, "//a:1,b:2", false).unwrap();
        assert_eq!(seeds, ["redis://a:1", "redis://b:2"]);
        assert!(cluster_seeds(url, "//a:1#insecure", false).is_err());
    }

    #[test]
    fn cluster_credentials_go_to_every_seed_and_stay_out_of_errors() {
        let url = "redis+cluster://ops:p%40ss@a:1,b:2";
        let seeds = cluster_seeds(url, "//ops:p%40ss@a:1,b:2", false).unwrap();
        assert_eq!(seeds, ["redis://ops:p%40ss@a:1", "redis://ops:p%40ss@b:2"]);
        let seeds = cluster_seeds(url, "//ops:p%40ss@a:1#insecure", true).unwrap();
        assert_eq!(seeds, ["rediss://ops:p%40ss@a:1#insecure"]);
        let bad = "redis+cluster://ops:s3cret@a:1,b:2/0";
        let e = cluster_seeds(bad, "//ops:s3cret@a:1,b:2/0", false).unwrap_err();
        let text = e.to_string();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("redis+cluster://ops:***@a:1,b:2/0"), "{text}");
        assert!(text.contains("USER:PASSWORD@"), "{text}");
    }

    #[test]
    fn a_tls_url_without_the_feature_names_it() {
        let text = feature_off("rediss://h:1", "tls", "RedisStore over TLS").to_string();
        assert!(text.contains("features = [\"tls\"]"), "{text}");
    }

    #[cfg(not(feature = "tls"))]
    #[tokio::test]
    async fn tls_urls_are_refused_without_the_feature() {
        for url in ["rediss://127.0.0.1:1", "rediss+cluster://127.0.0.1:1"] {
            let err = AnyStore::open(url).await.unwrap_err();
            assert!(err.to_string().contains("feature `tls`"), "{url}: {err}");
        }
    }
}
