//! The connection under [`RedisStore`]: how it is opened (the builder and its
//! timeouts), kept and replaced, and how a failed request is classified.
//!
//! One multiplexed connection serves every clone of a store. It is opened on
//! first need with the connect timeout and no retries, so an unreachable
//! server fails a call at once instead of after a round of backoff; callers
//! that arrive while it opens wait for that one attempt. A connection that
//! drops is replaced on the next call. A request that fails says whether it
//! reached the connection ([`Failure::Sent`]) or not ([`Failure::NotSent`]):
//! only the first can have been applied.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, RedisError};
use tokio::sync::OnceCell;

use crate::error::{Error, Result};
use crate::store::RedisStore;

/// How long opening a connection may take before the call fails, unless
/// [`RedisStoreBuilder::connect_timeout`] says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a request may wait for its reply before the call fails, unless
/// [`RedisStoreBuilder::response_timeout`] says otherwise. A write whose reply
/// does not come in time fails with [`Error::OutcomeUnknown`].
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Options for a [`RedisStore`]: where to connect and how long to wait.
///
/// ```no_run
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// use std::time::Duration;
/// use kvmodel_runtime::RedisStore;
///
/// let store = RedisStore::builder("redis://127.0.0.1:6379")
///     .connect_timeout(Duration::from_millis(500))
///     .response_timeout(Duration::from_secs(30))
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisStoreBuilder {
    target: Target,
    connect_timeout: Duration,
    response_timeout: Option<Duration>,
    delete_plans: bool,
    #[cfg(feature = "tls")]
    tls_roots: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
enum Target {
    Url(String),
    /// Boxed: a client with TLS parameters is large.
    Client(Box<Client>),
}

impl RedisStoreBuilder {
    /// Options for the server at `url` (`redis://HOST:PORT[/DB]`, or
    /// `rediss://HOST:PORT[/DB]` for TLS with feature `tls`), with the
    /// default timeouts.
    pub fn new(url: &str) -> Self {
        RedisStoreBuilder::with_target(Target::Url(url.to_owned()))
    }

    /// Options for a `redis::Client` built by the caller (for settings a URL
    /// cannot carry), with the default timeouts.
    pub fn from_client(client: Client) -> Self {
        RedisStoreBuilder::with_target(Target::Client(Box::new(client)))
    }

    fn with_target(target: Target) -> Self {
        RedisStoreBuilder {
            target,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            response_timeout: Some(DEFAULT_RESPONSE_TIMEOUT),
            delete_plans: false,
            #[cfg(feature = "tls")]
            tls_roots: None,
        }
    }

    /// Trusts the certificate authorities in `pem` (one or more PEM
    /// certificates) instead of the system's, to verify the server of a
    /// `rediss://` URL: for a server whose certificate a private CA signed.
    /// The server's certificate must still name the URL's host. Without
    /// this, the system's roots are used (`SSL_CERT_FILE` replaces them).
    /// Ignored for a store built [`from_client`](Self::from_client).
    ///
    /// ```no_run
    /// # async fn demo() -> kvmodel_runtime::Result<()> {
    /// use kvmodel_runtime::RedisStore;
    ///
    /// let ca = std::fs::read("/etc/redis/ca.pem").unwrap();
    /// let store = RedisStore::builder("rediss://redis.internal:6380")
    ///     .tls_root_certificates(ca)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "tls")]
    pub fn tls_root_certificates(mut self, pem: Vec<u8>) -> Self {
        self.tls_roots = Some(pem);
        self
    }

    /// How long opening a connection may take (default
    /// [`DEFAULT_CONNECT_TIMEOUT`]). A refused connection fails at once
    /// whatever this says; each call tries once, without retries.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a request may wait for its reply (default
    /// [`DEFAULT_RESPONSE_TIMEOUT`]). A read that times out fails with
    /// [`Error::Backend`]; a commit that times out fails with
    /// [`Error::OutcomeUnknown`], since the server may still apply it.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = Some(timeout);
        self
    }

    /// Waits for every reply as long as it takes.
    pub fn no_response_timeout(mut self) -> Self {
        self.response_timeout = None;
        self
    }

    /// Keeps a delete plan beside every record whose delete needs only its
    /// entries (records that do not expire, keep no change feed, and whose
    /// delete enforces no `on_delete`), so that a delete is one script
    /// instead of a read and a commit ([`Store::delete_plans`]). It costs
    /// memory (a plan takes about three times what a small record takes)
    /// and a `SET` more on every create and update; off by default. A
    /// store with it off still removes the plan of a record it deletes.
    ///
    /// [`Store::delete_plans`]: crate::Store::delete_plans
    pub fn delete_plans(mut self, on: bool) -> Self {
        self.delete_plans = on;
        self
    }

    /// Opens the connection (once, within the connect timeout) and returns
    /// the store.
    pub async fn connect(self) -> Result<RedisStore> {
        let client = match self.target {
            Target::Client(client) => *client,
            Target::Url(url) => {
                refuse_tls_off(&url)?;
                #[cfg(feature = "tls")]
                if is_tls(&url) {
                    ensure_tls_provider();
                }
                #[cfg(feature = "tls")]
                let opened = match self.tls_roots {
                    Some(pem) if is_tls(&url) => Client::build_with_tls(
                        url.as_str(),
                        redis::TlsCertificates {
                            client_tls: None,
                            root_cert: Some(pem),
                        },
                    ),
                    _ => Client::open(url.as_str()),
                };
                #[cfg(not(feature = "tls"))]
                let opened = Client::open(url.as_str());
                opened.map_err(|e| Error::InvalidUrl {
                    reason: format!(
                        "{e}; write it as `redis://HOST:PORT[/DB]` or `rediss://HOST:PORT[/DB]`"
                    ),
                    url,
                })?
            }
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(self.response_timeout);
        let link = Link {
            address: client.get_connection_info().addr().to_string(),
            client,
            config,
            slot: Mutex::default(),
            blocking: Mutex::default(),
        };
        link.connection()
            .await
            .map_err(|e| Error::backend("redis", format!("connect to `{}`", link.address), e))?;
        Ok(RedisStore::on(link, self.delete_plans))
    }
}

/// Whether `url` asks for TLS (`rediss:`, or `valkeys:` which the redis
/// crate reads alike).
pub(crate) fn is_tls(url: &str) -> bool {
    url.split_once(':').is_some_and(|(scheme, _)| {
        scheme.eq_ignore_ascii_case("rediss") || scheme.eq_ignore_ascii_case("valkeys")
    })
}

/// Makes sure rustls has a process-wide crypto provider before a TLS
/// connection: rustls picks one by itself only when exactly one of its
/// providers is compiled in, and another dependency of the application (the
/// AWS SDK, for one) may bring a second. Installs ring, this crate's
/// provider, unless the application installed one of its own first.
#[cfg(feature = "tls")]
pub(crate) fn ensure_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one in between: either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Refuses a TLS URL when this build has no TLS, naming the feature that
/// brings it; any URL passes with feature `tls`.
pub(crate) fn refuse_tls_off(url: &str) -> Result<()> {
    if cfg!(feature = "tls") || !is_tls(url) {
        return Ok(());
    }
    Err(tls_off(url))
}

/// The error for a TLS URL in a build without TLS.
pub(crate) fn tls_off(url: &str) -> Error {
    Error::InvalidUrl {
        url: url.to_owned(),
        reason: "it asks for TLS, which this build leaves out; enable the cargo feature `tls` \
                 of kvmodel (`kvmodel = { version = \"…\", features = [\"tls\"] }`), or \
                 write `redis://` for a server without TLS"
            .to_owned(),
    }
}

/// One connection attempt and what it gave: every caller that shares a slot
/// shares its outcome.
type Slot = Arc<OnceCell<Result<MultiplexedConnection, RedisError>>>;

/// The client, its options and the current connection.
pub(crate) struct Link {
    client: Client,
    config: AsyncConnectionConfig,
    address: String,
    slot: Mutex<Slot>,
    /// Connections for blocking reads (`XREAD BLOCK`), kept apart so a
    /// waiting reader holds up no other request; each serves one reader
    /// at a time.
    blocking: Mutex<Vec<MultiplexedConnection>>,
}

/// The most idle connections for blocking reads kept open.
const BLOCKING_KEPT: usize = 8;

/// Why a request failed.
pub(crate) enum Failure {
    /// No connection could be opened: the request was not sent.
    NotSent(RedisError),
    /// The request was handed to the connection and its reply did not come
    /// back as a value: an error reply, or none (timeout, dropped connection).
    Sent(RedisError),
}

impl Link {
    /// `host:port` (or the socket path), for messages.
    pub(crate) fn address(&self) -> &str {
        &self.address
    }

    /// The open connection, or one attempt to open it.
    async fn connection(&self) -> Result<(Slot, MultiplexedConnection), RedisError> {
        let slot = self.current();
        let opened = slot
            .get_or_init(|| async {
                self.client
                    .get_multiplexed_async_connection_with_config(&self.config)
                    .await
            })
            .await;
        match opened {
            Ok(conn) => Ok((slot.clone(), conn.clone())),
            Err(e) => {
                let e = e.clone();
                self.discard(&slot);
                Err(e)
            }
        }
    }

    fn current(&self) -> Slot {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets `stale` (if it is still current) so the next call opens a new
    /// connection.
    fn discard(&self, stale: &Slot) {
        let mut current = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if Arc::ptr_eq(&current, stale) {
            *current = Slot::default();
        }
    }

    /// Sends `cmd`, a command that blocks on the server for up to `wait`,
    /// on a connection of its own, and reads its reply; no reply within
    /// `wait` plus the response timeout is a failure, and the connection is
    /// dropped then.
    pub(crate) async fn send_blocking<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        wait: Duration,
    ) -> Result<T, Failure> {
        let idle = self
            .blocking
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut conn = match idle {
            Some(c) => c,
            None => {
                let config = self.config.clone().set_response_timeout(None);
                self.client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
                    .map_err(Failure::NotSent)?
            }
        };
        let limit = wait + DEFAULT_RESPONSE_TIMEOUT;
        let reply = match tokio::time::timeout(limit, cmd.query_async::<T>(&mut conn)).await {
            Ok(reply) => reply,
            Err(_) => {
                return Err(Failure::Sent(RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no reply to a blocking read",
                ))));
            }
        };
        let fit = match &reply {
            Ok(_) => true,
            Err(e) => !e.is_unrecoverable_error(),
        };
        if fit {
            let mut kept = self.blocking.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() < BLOCKING_KEPT {
                kept.push(conn);
            }
        }
        reply.map_err(Failure::Sent)
    }

    /// Sends `cmd` and reads its reply.
    pub(crate) async fn send<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> Result<T, Failure> {
        let (slot, mut conn) = self.connection().await.map_err(Failure::NotSent)?;
        let reply = cmd.query_async(&mut conn).await;
        self.settle(&slot, reply)
    }

    /// Sends `pipe` in one write on one connection, so its commands run in
    /// order on one server process, and reads their replies.
    pub(crate) async fn send_pipe<T: redis::FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<T, Failure> {
        let (slot, mut conn) = self.connection().await.map_err(Failure::NotSent)?;
        let reply = pipe.query_async(&mut conn).await;
        self.settle(&slot, reply)
    }

    /// The failure of a request sent on the connection of `slot`, which is
    /// dropped if the error leaves it unusable.
    fn settle<T>(&self, slot: &Slot, reply: redis::RedisResult<T>) -> Result<T, Failure> {
        if let Err(e) = &reply
            && e.is_unrecoverable_error()
        {
            self.discard(slot);
        }
        reply.map_err(Failure::Sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_urls_are_told_apart() {
        assert!(is_tls("rediss://h:1"));
        assert!(is_tls("REDISS://h:1/2"));
        assert!(is_tls("valkeys://h:1"));
        assert!(!is_tls("redis://h:1"));
        assert!(!is_tls("redis+unix:///tmp/r.sock"));
        assert!(!is_tls("rediss"));
    }

    #[test]
    fn a_tls_url_without_the_feature_names_it() {
        let text = tls_off("rediss://h:1").to_string();
        assert!(text.contains("`rediss://h:1`"), "{text}");
        assert!(text.contains("features = [\"tls\"]"), "{text}");
        assert!(refuse_tls_off("redis://h:1").is_ok());
    }

    /// Without the feature, the builder refuses a TLS URL before it
    /// connects.
    #[cfg(not(feature = "tls"))]
    #[tokio::test]
    async fn a_tls_url_is_refused_without_the_feature() {
        let err = RedisStore::connect("rediss://127.0.0.1:1")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("feature `tls`"), "{err}");
    }

    /// With the feature, a TLS URL is read, and a server that is not there
    /// fails as a connection, not as a URL.
    #[cfg(feature = "tls")]
    #[tokio::test]
    async fn a_tls_url_is_read_with_the_feature() {
        assert!(refuse_tls_off("rediss://h:1").is_ok());
        let err = RedisStore::builder("rediss://127.0.0.1:1")
            .connect_timeout(Duration::from_millis(200))
            .connect()
            .await
            .unwrap_err();
        assert!(!matches!(err, Error::InvalidUrl { .. }), "{err}");
    }
}
