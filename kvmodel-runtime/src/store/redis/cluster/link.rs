//! How the cluster store reaches the cluster: the builder that opens the
//! redis crate's async cluster connection, and how a command or a script is
//! sent on it and a failed request classified.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::Value;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};

use crate::error::{Error, Result};
use crate::store::redis::cluster::{
    DEFAULT_DISCOVERY_SHARDS, DEFAULT_LEASE, Inner, RedisClusterStore,
};
#[cfg(feature = "tls")]
use crate::store::redis::link::is_tls;
use crate::store::redis::link::refuse_tls_off;
use crate::store::redis::scripts::Scripts;
use crate::store::redis::wire::error_reply;
use crate::store::redis::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT};

/// Options for a [`RedisClusterStore`]: seeds, timeouts, the lease of
/// cross-slot writes, a key prefix, the discovery shards.
///
/// ```no_run
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// use std::time::Duration;
/// use kvmodel_runtime::RedisClusterStore;
///
/// let store = RedisClusterStore::builder(&["redis://127.0.0.1:7000"])
///     .lease(Duration::from_secs(2))
///     .key_prefix("app1/")
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisClusterStoreBuilder {
    seeds: Vec<String>,
    prefix: String,
    lease: Duration,
    shards: u16,
    connect_timeout: Duration,
    response_timeout: Duration,
    #[cfg(feature = "tls")]
    tls_roots: Option<Vec<u8>>,
}

impl RedisClusterStoreBuilder {
    /// Options for the cluster that `seeds` (`redis://HOST:PORT` URLs of
    /// some of its nodes, or `rediss://HOST:PORT` for TLS with feature
    /// `tls`) belong to, with the defaults. The first seed's scheme decides
    /// whether every node is reached over TLS.
    pub fn new(seeds: &[&str]) -> Self {
        RedisClusterStoreBuilder {
            seeds: seeds.iter().map(|s| (*s).to_owned()).collect(),
            prefix: String::new(),
            lease: DEFAULT_LEASE,
            shards: DEFAULT_DISCOVERY_SHARDS,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            #[cfg(feature = "tls")]
            tls_roots: None,
        }
    }

    /// Trusts the certificate authorities in `pem` (one or more PEM
    /// certificates) instead of the system's, to verify the nodes of
    /// `rediss://` seeds (see
    /// [`RedisStoreBuilder::tls_root_certificates`](crate::RedisStoreBuilder::tls_root_certificates)).
    #[cfg(feature = "tls")]
    pub fn tls_root_certificates(mut self, pem: Vec<u8>) -> Self {
        self.tls_roots = Some(pem);
        self
    }

    /// How long a cross-slot write may take to reach its commit point
    /// (default [`DEFAULT_LEASE`]). A write that takes longer is abandoned
    /// and retried by its writer; one whose writer is gone is finished or
    /// undone by others once the lease has passed twice. Every client of a
    /// cluster should use the same lease.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(1));
        self
    }

    /// Stores every key under `prefix` (which must not contain `{` or `}`,
    /// the hash-tag braces), so that several applications share a cluster
    /// without seeing each other's keys.
    pub fn key_prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_owned();
        self
    }

    /// How many keys each discovery set is spread over (1 to 1024, default
    /// [`DEFAULT_DISCOVERY_SHARDS`]); `list_all` merges them. Every client
    /// of a cluster must use the same number: data written with one cannot
    /// be listed with another.
    pub fn discovery_shards(mut self, shards: u16) -> Self {
        self.shards = shards.clamp(1, 1024);
        self
    }

    /// How long opening a connection to a node may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a request may wait for its reply.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Connects to the cluster and returns the store.
    pub async fn connect(self) -> Result<RedisClusterStore> {
        let bad = |reason: String| Error::InvalidUrl {
            url: self.seeds.join(","),
            reason,
        };
        if self.seeds.is_empty() {
            return Err(bad(
                "it names no node; give at least one seed, `redis://HOST:PORT`".to_owned(),
            ));
        }
        if self.prefix.contains(['{', '}']) {
            return Err(bad(format!(
                "the key prefix `{}` contains a hash-tag brace; choose one without `{{` and `}}`",
                self.prefix
            )));
        }
        for seed in &self.seeds {
            refuse_tls_off(seed)?;
            redis::Client::open(seed.as_str()).map_err(|e| Error::InvalidUrl {
                url: seed.clone(),
                reason: format!(
                    "{e}; write each seed as `redis://HOST:PORT` or `rediss://HOST:PORT`"
                ),
            })?;
        }
        let builder = ClusterClient::builder(self.seeds.iter().map(String::as_str))
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.response_timeout);
        #[cfg(feature = "tls")]
        if self.seeds.first().is_some_and(|s| is_tls(s)) {
            crate::store::redis::link::ensure_tls_provider();
        }
        #[cfg(feature = "tls")]
        let tls_roots = self.tls_roots.filter(|_| is_tls(&self.seeds[0]));
        #[cfg(feature = "tls")]
        let builder = match &tls_roots {
            Some(pem) => builder.certs(redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem.clone()),
            }),
            None => builder,
        };
        let client = builder
            .build()
            .map_err(|e| bad(format!("{e}; write each seed as `redis://HOST:PORT`")))?;
        let conn = client.get_async_connection().await.map_err(|e| {
            Error::backend(
                "redis-cluster",
                format!("connect to the cluster at `{}`", self.seeds.join(", ")),
                e,
            )
        })?;
        Ok(RedisClusterStore {
            inner: Arc::new(Inner {
                conn,
                seeds: self.seeds,
                prefix: self.prefix,
                lease: self.lease,
                shards: self.shards,
                scripts: Scripts::new(),
                round_trips: AtomicU64::new(0),
                lease_clock_ahead: AtomicU64::new(0),
                connect_timeout: self.connect_timeout,
                #[cfg(feature = "tls")]
                tls_roots,
                blocking: Default::default(),
            }),
            crash: None,
        })
    }
}

impl RedisClusterStore {
    fn conn(&self) -> ClusterConnection {
        self.inner.conn.clone()
    }

    pub(super) async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        context: &'static str,
    ) -> Result<T> {
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        cmd.query_async(&mut self.conn())
            .await
            .map_err(|e| Error::backend("redis-cluster", context, e))
    }

    /// Sends `cmd` to the one node `node` names (not to a key's slot), and
    /// reads its reply.
    pub(super) async fn query_node(
        &self,
        cmd: redis::Cmd,
        node: SingleNodeRoutingInfo,
        context: &'static str,
    ) -> Result<Value> {
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        self.conn()
            .route_command(cmd, RoutingInfo::SingleNode(node))
            .await
            .map_err(|e| Error::backend("redis-cluster", context, e))
    }

    /// Sends the `count` commands of `pipe` in one go to the one node `node`
    /// names, and reads their replies.
    pub(super) async fn query_node_pipe(
        &self,
        pipe: redis::Pipeline,
        count: usize,
        node: SingleNodeRoutingInfo,
        context: &'static str,
    ) -> Result<Vec<Value>> {
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        self.conn()
            .route_pipeline(pipe, 0, count, node)
            .await
            .map_err(|e| Error::backend("redis-cluster", context, e))
    }

    /// Runs `script` with `keys` and `args`; the error is classified as a
    /// commit's: `Ok(Err(e))` when the reply was lost (it may have run).
    pub(super) async fn run(
        &self,
        script: &redis::Script,
        keys: &[String],
        args: &[Vec<u8>],
    ) -> Result<std::result::Result<Value, redis::RedisError>> {
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut inv = script.prepare_invoke();
        inv.key(keys);
        for a in args {
            inv.arg(a.as_slice());
        }
        match inv.invoke_async::<Value>(&mut self.conn()).await {
            Ok(v) => Ok(Ok(v)),
            Err(e) if error_reply(&e) => {
                Err(Error::backend("redis-cluster", "run a commit script", e))
            }
            Err(e) if e.is_connection_refusal() => Err(Error::backend(
                "redis-cluster",
                "reach the node of a slot (nothing was sent)",
                e,
            )),
            Err(e) => Ok(Err(e)),
        }
    }
}
