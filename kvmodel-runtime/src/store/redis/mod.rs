//! The Redis wing: every store that speaks the Redis protocol, and what
//! they share.
//!
//! - [`RedisStore`] (`server`), on one Redis server, over the connection
//!   its builder opens (`link`).
//! - `RedisClusterStore` (`cluster`, feature `redis-cluster`), on a Redis
//!   Cluster: a batch within one hash slot commits as on a server, one
//!   across slots follows the cross-slot protocol (`docs/cluster.md`).
//!
//! Both speak one wire form (`wire`): how a condition and an operation are
//! sent to a script, the longest time to live, the range command of a page,
//! the `SCAN` pattern of a key prefix, and how a script's reply is read.
//! Both run Lua put together from one set of pieces in `lua/` (`scripts`):
//! the prelude every writing script starts with, the one-step commit a
//! server runs and a cluster runs within one slot, the server's reads, and
//! the steps of the cross-slot protocol (`lua/cluster/`). A server commits
//! the few shapes of batch a repository sends with scripts written for
//! each (`shape`).

#[cfg(feature = "redis-cluster")]
mod cluster;
mod feed;
mod link;
mod plan;
mod scripts;
mod server;
mod shape;
mod wire;

#[cfg(feature = "redis-cluster")]
pub use cluster::{
    CrashPoint, DEFAULT_DISCOVERY_SHARDS, DEFAULT_LEASE, Recovery, RedisClusterStore,
    RedisClusterStoreBuilder,
};
#[cfg(all(feature = "tls", feature = "conformance"))]
pub(crate) use link::ensure_tls_provider;
pub use link::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT, RedisStoreBuilder};
pub use server::RedisStore;
