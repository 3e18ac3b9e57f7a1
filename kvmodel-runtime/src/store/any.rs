//! `AnyStore`: a store chosen at run time from a URL.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome, Planned};
use crate::store::memory::MemoryStore;
use crate::store::{MemberRef, RangeRequest, RangeResult, ScanPage, Store, Via};

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
/// | `redis://HOST:PORT[/DB]`, `rediss://…`, `redis+unix://…`, `unix://…` | [`RedisStore::connect(URL)`](crate::RedisStore::connect) (feature `redis`) |
/// | `redis+cluster://HOST:PORT,HOST:PORT,…` | [`RedisClusterStore::connect`](crate::RedisClusterStore::connect) with a `redis://HOST:PORT` seed per node named (feature `redis-cluster`) |
/// | `dynamodb://TABLE?region=REGION&endpoint=URL` | a `DynamoStore` on `TABLE` (feature `dynamodb`; both options optional, the AWS chain fills in the rest; opening creates nothing) |
///
/// A store built by hand (a Redis store with its own timeouts, a memory store
/// on a manual clock) converts with `AnyStore::from(store)`.
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
const FORMS: &str = "`memory:`, `redb:PATH`, `redis://HOST:PORT`, `redis+cluster://HOST:PORT,HOST:PORT` or \
     `dynamodb://TABLE?region=REGION`";

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
            "redis" | "rediss" | "redis+unix" | "unix" => open_redis(url).await,
            "redis+cluster" => open_cluster(url, rest).await,
            "dynamodb" => open_dynamo(url).await,
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

/// The seeds of a `redis+cluster://HOST:PORT,HOST:PORT` URL, as
/// `redis://HOST:PORT` URLs.
fn cluster_seeds(url: &str, rest: &str) -> Result<Vec<String>> {
    let hosts = rest.strip_prefix("//").unwrap_or(rest);
    let seeds: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| format!("redis://{h}"))
        .collect();
    if seeds.is_empty() || hosts.contains(['/', '?', '@']) {
        return Err(Error::InvalidUrl {
            url: url.to_owned(),
            reason: "write the cluster's nodes as `redis+cluster://HOST:PORT,HOST:PORT`, at \
                     least one, with nothing after them"
                .to_owned(),
        });
    }
    Ok(seeds)
}

#[cfg(feature = "redis-cluster")]
async fn open_cluster(url: &str, rest: &str) -> Result<AnyStore> {
    let seeds = cluster_seeds(url, rest)?;
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    crate::RedisClusterStore::connect(&seeds)
        .await
        .map(AnyStore::Cluster)
}

#[cfg(not(feature = "redis-cluster"))]
async fn open_cluster(url: &str, rest: &str) -> Result<AnyStore> {
    cluster_seeds(url, rest)?;
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
}
