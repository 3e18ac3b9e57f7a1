//! `scan` across every master of the cluster, and the maintenance walks of
//! the store's own keys.
//!
//! A cursor names a master (its position among the masters sorted by
//! address) and that master's `SCAN` cursor. A topology change between pages
//! may skip or repeat keys, as any key written meanwhile may be.

use redis::cluster_routing::SingleNodeRoutingInfo;
use redis::{FromRedisValue, Value};

use crate::error::{Error, Result};
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::wire::{prefix_pattern, scan_cmd};
use crate::store::{ScanPage, scan_count};

fn bad_cursor() -> Error {
    Error::InvalidCursor {
        reason: "it is not a Redis Cluster scan cursor".to_owned(),
    }
}

impl RedisClusterStore {
    /// The masters, as (host, port), sorted.
    pub(crate) async fn masters(&self) -> Result<Vec<(String, u16)>> {
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("NODES");
        let reply = self
            .query_node(
                cmd,
                SingleNodeRoutingInfo::RandomPrimary,
                "list the masters of the cluster",
            )
            .await?;
        let text = match reply {
            Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            Value::VerbatimString { text, .. } => text,
            Value::SimpleString(s) => s,
            other => {
                return Err(Error::backend(
                    "redis-cluster",
                    "list the masters of the cluster",
                    format!("unexpected reply {other:?}"),
                ));
            }
        };
        let mut masters: Vec<(String, u16)> = text
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                let flags = fields.get(2)?;
                if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
                    return None;
                }
                // Only masters that serve slots hold keys.
                fields.get(8)?;
                let addr = fields.get(1)?.split('@').next()?;
                let (host, port) = addr.rsplit_once(':')?;
                Some((host.to_owned(), port.parse().ok()?))
            })
            .collect();
        masters.sort();
        Ok(masters)
    }

    /// One `SCAN` step on the master `node`: (next cursor, stored keys).
    pub(crate) async fn scan_node(
        &self,
        node: &(String, u16),
        cursor: u64,
        pattern: &str,
        count: usize,
    ) -> Result<(u64, Vec<String>)> {
        let cmd = scan_cmd(cursor, pattern, count);
        let node = SingleNodeRoutingInfo::ByAddress {
            host: node.0.clone(),
            port: node.1,
        };
        let reply = self.query_node(cmd, node, "scan keys").await?;
        <(u64, Vec<String>)>::from_redis_value(reply)
            .map_err(|e| Error::backend("redis-cluster", "read a scan reply", e))
    }

    /// Every stored key matching `pattern`, on every master (maintenance).
    pub(crate) async fn scan_all(&self, pattern: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for node in self.masters().await? {
            let mut cursor = 0;
            loop {
                let (next, keys) = self.scan_node(&node, cursor, pattern, 1000).await?;
                out.extend(keys);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// [`Store::scan`](crate::Store::scan): one page from one master.
    pub(crate) async fn scan_masters(
        &self,
        prefix: &str,
        cursor: Option<Vec<u8>>,
        count: usize,
    ) -> Result<ScanPage> {
        let (mut node, mut at) = match cursor {
            None => (0usize, 0u64),
            Some(c) => {
                let text = std::str::from_utf8(&c).map_err(|_| bad_cursor())?;
                let (n, at) = text.split_once(':').ok_or_else(bad_cursor)?;
                (
                    n.parse().map_err(|_| bad_cursor())?,
                    at.parse().map_err(|_| bad_cursor())?,
                )
            }
        };
        let masters = self.masters().await?;
        let pattern = prefix_pattern(&self.phys(prefix));
        let mut keys = Vec::new();
        while node < masters.len() {
            let (next, found) = self
                .scan_node(&masters[node], at, &pattern, scan_count(count))
                .await?;
            keys.extend(found.iter().filter_map(|k| self.logical(k)));
            if next != 0 {
                at = next;
                break;
            }
            node += 1;
            at = 0;
            if !keys.is_empty() {
                break;
            }
        }
        keys.sort();
        keys.dedup();
        let next = (node < masters.len()).then(|| format!("{node}:{at}").into_bytes());
        Ok(ScanPage { keys, next })
    }
}
