//! Change feeds on a cluster: each feed is one Stream, one key in its own
//! slot, appended to by the commits of its entity (at the commit point when
//! the stream shares the record's slot, else as a late operation of the
//! write's token there: `plan`). So the server's reader
//! ([`feed`](crate::store::redis::feed)) serves it unchanged, its commands
//! sent to the node that serves the stream's slot: ordinary ones on the
//! cluster connection (the redis crate routes them by key and follows
//! `MOVED`), blocking ones (`XREAD BLOCK`, `XREADGROUP … BLOCK`) on a
//! connection of their own to that node, found by following `MOVED` from
//! the node last seen serving the slot, so that a waiting reader holds up
//! no other request.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Value};

use crate::error::{Error, Result};
use crate::store::redis::DEFAULT_RESPONSE_TIMEOUT;
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::cluster::slots::slot_of;
use crate::store::redis::feed::StreamLink;
use crate::store::redis::link::Failure;

/// The most idle blocking connections kept open per node.
const KEPT_PER_NODE: usize = 8;

/// How many `MOVED` redirections a blocking read follows before it fails
/// (a slot moves at most once at a time; more means the topology is in
/// flux).
const REDIRECTS: usize = 3;

/// Connections for blocking reads, per node, and the node last seen
/// serving each slot.
#[derive(Default)]
pub(crate) struct Blocking {
    idle: Mutex<HashMap<String, Vec<MultiplexedConnection>>>,
    route: Mutex<HashMap<u16, String>>,
}

/// Where the node `host:port` of a seed URL lies in it (after the scheme
/// and credentials, before a path or options).
fn node_span(seed: &str) -> (usize, usize) {
    let start = seed.find("://").map_or(0, |i| i + 3);
    let end = seed[start..]
        .find(['/', '?'])
        .map_or(seed.len(), |i| start + i);
    let start = seed[start..end].rfind('@').map_or(start, |i| start + i + 1);
    (start, end)
}

/// The node `host:port` a seed URL names.
fn seed_node(seed: &str) -> &str {
    let (start, end) = node_span(seed);
    &seed[start..end]
}

/// `seed` with its node replaced by `node` (`host:port`): the scheme,
/// credentials and options of the seed, for a node it redirects to.
fn node_url(seed: &str, node: &str) -> String {
    let (start, end) = node_span(seed);
    format!("{}{node}{}", &seed[..start], &seed[end..])
}

impl RedisClusterStore {
    /// A connection for blocking reads to `node`, idle or new.
    async fn blocking_connection(&self, node: &str) -> Result<MultiplexedConnection, Failure> {
        let idle = self
            .inner
            .blocking
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(node)
            .and_then(Vec::pop);
        if let Some(c) = idle {
            return Ok(c);
        }
        let seed = self.inner.seeds.first().map_or("redis://", String::as_str);
        let client = self
            .node_client(&node_url(seed, node))
            .map_err(Failure::NotSent)?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.inner.connect_timeout))
            .set_response_timeout(None);
        client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(Failure::NotSent)
    }

    fn node_client(&self, url: &str) -> Result<redis::Client, redis::RedisError> {
        #[cfg(feature = "tls")]
        if let Some(pem) = &self.inner.tls_roots {
            return redis::Client::build_with_tls(
                url,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.clone()),
                },
            );
        }
        redis::Client::open(url)
    }

    /// Sends the blocking `cmd` about `key` to the node serving its slot,
    /// following `MOVED`.
    async fn send_blocking_to(
        &self,
        key: &str,
        cmd: &redis::Cmd,
        wait: Duration,
    ) -> Result<Value, Failure> {
        let slot = slot_of(key);
        let blocking = &self.inner.blocking;
        let mut node = blocking
            .route
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&slot)
            .cloned()
            .unwrap_or_else(|| {
                seed_node(self.inner.seeds.first().map_or("", String::as_str)).to_owned()
            });
        for _ in 0..=REDIRECTS {
            let mut conn = self.blocking_connection(&node).await?;
            self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
            let limit = wait + DEFAULT_RESPONSE_TIMEOUT;
            let reply = match tokio::time::timeout(limit, cmd.query_async::<Value>(&mut conn)).await
            {
                Ok(reply) => reply,
                Err(_) => {
                    return Err(Failure::Sent(redis::RedisError::from(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no reply to a blocking read",
                    ))));
                }
            };
            let moved = reply
                .as_ref()
                .err()
                .and_then(|e| e.redirect_node())
                .map(|(addr, _)| addr.to_owned());
            let fit = match &reply {
                Ok(_) => true,
                Err(e) => !e.is_unrecoverable_error(),
            };
            if fit {
                let mut idle = blocking.idle.lock().unwrap_or_else(PoisonError::into_inner);
                let kept = idle.entry(node.clone()).or_default();
                if kept.len() < KEPT_PER_NODE {
                    kept.push(conn);
                }
            }
            match moved {
                Some(to) => {
                    blocking
                        .route
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(slot, to.clone());
                    node = to;
                }
                None => return reply.map_err(Failure::Sent),
            }
        }
        Err(Failure::Sent(redis::RedisError::from(
            std::io::Error::other(format!(
                "the slot of `{key}` kept moving (more than {REDIRECTS} redirections)"
            )),
        )))
    }
}

/// The stream key of a blocking `XREAD`/`XREADGROUP`: the argument after
/// `STREAMS`.
fn stream_of(cmd: &redis::Cmd) -> Option<String> {
    let mut args = cmd.args_iter().filter_map(|a| match a {
        redis::Arg::Simple(b) => Some(b),
        _ => None,
    });
    args.find(|a| a.eq_ignore_ascii_case(b"STREAMS"))?;
    args.next().map(|k| String::from_utf8_lossy(k).into_owned())
}

impl StreamLink for RedisClusterStore {
    const BACKEND: &'static str = "redis-cluster";

    async fn send_cmd(&self, cmd: &redis::Cmd) -> Result<Value, Failure> {
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        cmd.query_async(&mut self.inner.conn.clone())
            .await
            .map_err(|e| {
                if e.is_connection_refusal() {
                    Failure::NotSent(e)
                } else {
                    Failure::Sent(e)
                }
            })
    }

    async fn send_blocking_cmd(&self, cmd: &redis::Cmd, wait: Duration) -> Result<Value, Failure> {
        let Some(key) = stream_of(cmd) else {
            return self.send_cmd(cmd).await;
        };
        self.send_blocking_to(&key, cmd, wait).await
    }

    fn failure(&self, failure: Failure, context: &'static str) -> Error {
        match failure {
            Failure::NotSent(e) => Error::backend(
                "redis-cluster",
                format!("reach the node of a change feed's slot to {context}"),
                e,
            ),
            Failure::Sent(e) => Error::backend("redis-cluster", context, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirection_keeps_the_seed_scheme_and_credentials() {
        assert_eq!(seed_node("redis://127.0.0.1:7000"), "127.0.0.1:7000");
        assert_eq!(seed_node("rediss://u:p@h:1/0?x=1"), "h:1");
        assert_eq!(
            node_url("rediss://u:p@h:1/0", "10.0.0.2:7001"),
            "rediss://u:p@10.0.0.2:7001/0"
        );
        assert_eq!(node_url("redis://h:1", "n:2"), "redis://n:2");
    }

    #[test]
    fn a_blocking_read_names_its_stream() {
        let mut cmd = redis::cmd("XREAD");
        cmd.arg("COUNT").arg(5).arg("BLOCK").arg(10);
        cmd.arg("STREAMS").arg("p/shop:order#feed").arg("0-0");
        assert_eq!(stream_of(&cmd).as_deref(), Some("p/shop:order#feed"));
        assert_eq!(stream_of(&redis::cmd("PING")), None);
    }
}
