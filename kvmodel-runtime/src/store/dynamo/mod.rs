//! `DynamoStore`: Amazon DynamoDB, one table per store (single-table design).
//!
//! Layout: every key is a partition (`pk`, a string); its head item (sort
//! key `sk` = `00`) holds what the key holds: a value (`v`, binary), a
//! counter (`v`, a number), or a sorted collection (`n` members, generation
//! `g`), with the exact expiry
//! (`exp`, milliseconds) and DynamoDB's own expiry attribute (`ttl`, epoch
//! seconds), and a version token (`ver`) that every write replaces. A
//! collection's members are items of the same partition whose sort key is
//! `01`, the generation, then the member's entry (sort key, then member), so
//! a `Query` returns them in order.
//!
//! A commit reads the heads it needs (one `TransactGetItems`), checks the
//! batch against them ([`check`](crate::store::check)), and writes the result
//! as one `TransactWriteItems` (one action per item) whose every head carries
//! a condition on the version it was read at: a commit that raced another
//! writer is refused as a whole and read again. Two kinds of write need no
//! version ([`blind`]): an increment is an `ADD` to the counter's number,
//! unread, conditioned only on what keeps it exact (the key holds a live
//! counter or nothing, and the sum stays in range); adding and removing
//! members of a live collection moves its count by `ADD`, conditioned on
//! its generation and on each member item being as it was looked up. So
//! concurrent writers of one counter or one collection do not refuse each
//! other. Every write still replaces the version, so a writer that does
//! condition on it sees them.

mod actions;
mod blind;
mod commit;
mod discovery;
mod model;
mod read;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::error::{Error, Result};
use crate::store::batch::Planned;
use crate::store::batch::{Batch, Outcome};
use crate::store::clock::{Clock, SystemClock};
use crate::store::counter::{stamp_key, stamped, stamps_of};
use crate::store::spread::{Spread, spread};
use crate::store::{RangeRequest, RangeResult, ScanPage, Store, commit_after_read_optimistic};

pub(crate) const BACKEND: &str = "dynamodb";

/// Attribute names.
const PK: &str = "pk";
const SK: &str = "sk";

/// DynamoDB's limit on a partition key, in bytes.
const MAX_KEY_BYTES: usize = 2048;

/// DynamoDB's limit on a sort key, in bytes.
const MAX_SORT_KEY_BYTES: usize = 1024;

/// Whether DynamoDB can store an item under `key`: not empty, and within
/// its partition key limit. Any other key holds nothing.
fn storable(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_BYTES
}

/// The error of a batch that writes under `pk` (the item of `key`), when
/// `pk` is beyond DynamoDB's partition key limit.
fn check_partition_key(key: &str, pk: &str) -> crate::error::Result<()> {
    if pk.len() <= MAX_KEY_BYTES {
        return Ok(());
    }
    Err(commit::limit_error(
        key,
        format!(
            "the key is {} bytes, beyond DynamoDB's limit of {MAX_KEY_BYTES} bytes per \
             partition key",
            pk.len()
        ),
    ))
}
const KIND: &str = "kind";
const VALUE: &str = "v";
const COUNT: &str = "n";
const GENERATION: &str = "g";
const EXPIRES: &str = "exp";
const TTL: &str = "ttl";
const VERSION: &str = "ver";

/// The sort key of a key's head item.
const HEAD: u8 = 0;
/// The first byte of a member item's sort key.
const MEMBER: u8 = 1;

/// The runtime every request of every `DynamoStore` is polled on: the
/// SDK's futures nest deeply, so they run on threads of their own with a
/// full stack, whatever thread (and runtime) the caller polls on.
fn io() -> &'static tokio::runtime::Runtime {
    static IO: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    IO.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kvmodel-dynamodb")
            .enable_all()
            .build()
            .expect("start the DynamoDB request threads")
    })
}

/// A request, sent from the store's own threads ([`io`]).
pub(crate) trait OnIo: Future + Send + Sized + 'static
where
    Self::Output: Send + 'static,
{
    fn on_io(self) -> impl Future<Output = Self::Output> + Send {
        async move {
            // Boxed first: the SDK's request futures are large, and
            // spawning moves the future through several frames, each of
            // which would hold a copy of it on the caller's stack.
            match io().spawn(Box::pin(self)).await {
                Ok(out) => out,
                // The runtime lives as long as the process and no task
                // is aborted: only a panic of the request ends it early.
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
    }
}

impl<F> OnIo for F
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
}

/// An item as the SDK hands it over.
type Item = HashMap<String, AttributeValue>;

/// An Amazon DynamoDB table as a kvmodel store.
///
/// ```no_run
/// # async fn demo() -> kvmodel_runtime::Result<()> {
/// use kvmodel_runtime::DynamoStore;
/// let store = DynamoStore::connect("app").await?; // region and credentials: the AWS chain
/// store.ensure_table().await?; // creates the table when it does not exist
/// # Ok(()) }
/// ```
///
/// Every commit is one `TransactWriteItems`; a batch beyond DynamoDB's
/// limits (100 items, 4 MB per transaction, 400 KB per item) is refused
/// before anything is sent, with an error naming the limit.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: Arc<str>,
    clock: Arc<dyn Clock>,
    /// Read-modify-writes of this process on the same keys take turns
    /// (one lock per stripe of keys), so they do not race each other's
    /// transactions; other processes still meet the version conditions.
    stripes: Arc<[tokio::sync::Mutex<()>]>,
}

/// How many stripes of keys take turns.
const STRIPES: usize = 64;

impl DynamoStore {
    /// A store on `table`, with region, endpoint and credentials from the
    /// standard AWS chain (environment, profile, instance role). Nothing is
    /// sent: [`ensure_table`](DynamoStore::ensure_table) creates the table.
    pub async fn connect(table: &str) -> Result<Self> {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(DynamoStore::http_client())
            .load()
            .await;
        Ok(DynamoStore::from_client(Client::new(&config), table))
    }

    /// The HTTP client a store sends its requests with, unless the
    /// client it was given names one: hyper, with TLS by rustls on *ring*
    /// (the Redis stores' TLS) against the system's root certificates,
    /// plain HTTP for an `http://` endpoint (a local emulator), and the
    /// proxy the environment names (`HTTPS_PROXY`, `HTTP_PROXY`,
    /// `ALL_PROXY`, `NO_PROXY`), as the SDK's own default client does.
    ///
    /// kvmodel builds the AWS SDK without that default client (which
    /// would bring the `aws-lc` C library), so `aws_config`'s credential
    /// providers need this one when you load an `SdkConfig` yourself:
    ///
    /// ```no_run
    /// # async fn run() {
    /// use kvmodel_runtime::DynamoStore;
    /// let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
    ///     .http_client(DynamoStore::http_client())
    ///     .load()
    ///     .await;
    /// let store = DynamoStore::from_config(&config, "app");
    /// # }
    /// ```
    pub fn http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
        use aws_smithy_http_client::proxy::ProxyConfig;
        use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
        use aws_smithy_http_client::{Builder, ConnectorBuilder};
        // One connector per set of connection settings, kept by the
        // client (the way the SDK builds its default client).
        Builder::new().build_with_connector_fn(|settings, components| {
            let mut connector =
                ConnectorBuilder::default().tls_provider(Provider::Rustls(CryptoMode::Ring));
            connector.set_connector_settings(settings.cloned());
            if let Some(components) = components {
                connector.set_sleep_impl(components.sleep_impl());
            }
            connector.set_proxy_config(Some(ProxyConfig::from_env()));
            connector.build()
        })
    }

    /// A store on `table` through a client the caller configured. A
    /// client configured without an HTTP client sends its requests with
    /// [`DynamoStore::http_client`].
    pub fn from_client(client: Client, table: &str) -> Self {
        let client = if client.config().http_client().is_none() {
            Client::from_conf(
                client
                    .config()
                    .to_builder()
                    .http_client(DynamoStore::http_client())
                    .build(),
            )
        } else {
            client
        };
        DynamoStore {
            client,
            table: Arc::from(table),
            clock: Arc::new(SystemClock),
            stripes: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }

    /// A store on `table` with the given AWS configuration.
    pub fn from_config(config: &aws_config::SdkConfig, table: &str) -> Self {
        DynamoStore::from_client(Client::new(config), table)
    }

    /// Opens `dynamodb://TABLE?region=REGION&endpoint=URL` (both optional;
    /// the standard chain fills in what is missing). An endpoint on a
    /// loopback host (a local emulator) is given placeholder credentials,
    /// since emulators check none. Nothing is sent.
    pub async fn open_url(url: &str) -> Result<Self> {
        let invalid = |reason: &str| Error::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let rest = url
            .strip_prefix("dynamodb://")
            .ok_or_else(|| invalid("write `dynamodb://TABLE?region=REGION&endpoint=URL`"))?;
        let (table, query) = rest.split_once('?').unwrap_or((rest, ""));
        if table.is_empty() || table.contains('/') {
            return Err(invalid(
                "it names no table; write `dynamodb://TABLE?region=REGION&endpoint=URL`",
            ));
        }
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(DynamoStore::http_client());
        let mut region = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("region", r)) if !r.is_empty() => region = Some(r.to_owned()),
                Some(("endpoint", e)) if !e.is_empty() => {
                    let e =
                        percent_decode(e).ok_or_else(|| invalid("the endpoint is not UTF-8"))?;
                    if is_loopback(&e) {
                        loader = loader.credentials_provider(
                            aws_sdk_dynamodb::config::Credentials::new(
                                "local", "local", None, None, "kvmodel",
                            ),
                        );
                        if region.is_none() {
                            region = Some("us-east-1".to_owned());
                        }
                    }
                    loader = loader.endpoint_url(e);
                }
                _ => {
                    return Err(invalid(&format!(
                        "`{pair}` is not an option; the options are `region=REGION` and \
                         `endpoint=URL`"
                    )));
                }
            }
        }
        if let Some(r) = region {
            loader = loader.region(aws_config::Region::new(r));
        }
        let config = loader.load().await;
        Ok(DynamoStore::from_config(&config, table))
    }

    /// The same store, with expiry counted on `clock` (tests).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The client it sends requests with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Creates the table when it does not exist (on-demand capacity,
    /// partition key `pk` string, sort key `sk` binary, DynamoDB's expiry
    /// on `ttl`), and waits until it is active; when it exists, checks its
    /// key schema.
    pub async fn ensure_table(&self) -> Result<()> {
        use aws_sdk_dynamodb::types::{
            AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
            TableStatus, TimeToLiveSpecification,
        };
        let described = self
            .client
            .describe_table()
            .table_name(&*self.table)
            .send()
            .on_io()
            .await;
        match described {
            Ok(out) => {
                let schema = out.table().map(|t| t.key_schema()).unwrap_or_default();
                let named = |name: &str, kind: KeyType| {
                    schema
                        .iter()
                        .any(|k| k.attribute_name() == name && *k.key_type() == kind)
                };
                if schema.len() == 2 && named(PK, KeyType::Hash) && named(SK, KeyType::Range) {
                    return Ok(());
                }
                return Err(Error::backend(
                    BACKEND,
                    format!("check table `{}`", self.table),
                    "its key schema is not the store's: partition key `pk` (string) and sort \
                     key `sk` (binary); give the store a table of its own",
                ));
            }
            Err(e) => {
                let missing = e
                    .as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception());
                if !missing {
                    return Err(sdk_error(format!("describe table `{}`", self.table), e));
                }
            }
        }
        let attr = |name: &str, kind: ScalarAttributeType| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(kind)
                .build()
                .map_err(build_error)
        };
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(build_error)
        };
        let created = self
            .client
            .create_table()
            .table_name(&*self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attr(PK, ScalarAttributeType::S)?)
            .attribute_definitions(attr(SK, ScalarAttributeType::B)?)
            .key_schema(key(PK, KeyType::Hash)?)
            .key_schema(key(SK, KeyType::Range)?)
            .send()
            .on_io()
            .await;
        if let Err(e) = created {
            let raced = e
                .as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception());
            if !raced {
                return Err(sdk_error(format!("create table `{}`", self.table), e));
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        loop {
            let out = self
                .client
                .describe_table()
                .table_name(&*self.table)
                .send()
                .on_io()
                .await
                .map_err(|e| sdk_error(format!("describe table `{}`", self.table), e))?;
            if out.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
                break;
            }
            if std::time::Instant::now() > deadline {
                return Err(Error::backend(
                    BACKEND,
                    format!("create table `{}`", self.table),
                    "the table was not active after 5 minutes",
                ));
            }
            crate::exec::sleep(std::time::Duration::from_millis(200)).await;
        }
        let spec = TimeToLiveSpecification::builder()
            .attribute_name(TTL)
            .enabled(true)
            .build()
            .map_err(build_error)?;
        self.client
            .update_time_to_live()
            .table_name(&*self.table)
            .time_to_live_specification(spec)
            .send()
            .on_io()
            .await
            .map_err(|e| sdk_error(format!("turn on expiry for table `{}`", self.table), e))?;
        Ok(())
    }
}

/// `%XX` escapes decoded (an endpoint in a URL's query).
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether an endpoint URL names this machine.
fn is_loopback(endpoint: &str) -> bool {
    let host = endpoint.split("://").nth(1).unwrap_or(endpoint);
    let host = host.split(['/', '?']).next().unwrap_or(host);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::backend(BACKEND, "build a request", e)
}

/// An error of a request whose outcome is known (a read, or a write the
/// service answered).
pub(crate) fn sdk_error<E, R>(context: impl std::fmt::Display, e: SdkError<E, R>) -> Error
where
    E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    Error::backend(BACKEND, context, describe(&e))
}

/// What went wrong, in a line: the service's code and message, or the
/// SDK's account of a request that got no answer.
pub(crate) fn describe<E, R>(e: &SdkError<E, R>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match e.as_service_error() {
        Some(s) => format!(
            "{}: {}",
            s.code().unwrap_or("service error"),
            s.message().unwrap_or("no message")
        ),
        None => DisplayErrorContext(e).to_string(),
    }
}

/// The partition key of `key`.
fn pk(key: &str) -> AttributeValue {
    AttributeValue::S(key.to_owned())
}

/// The key of the head item of `key`.
fn head_key(key: &str) -> Item {
    HashMap::from([
        (PK.to_owned(), pk(key)),
        (SK.to_owned(), AttributeValue::B(Blob::new(vec![HEAD]))),
    ])
}

/// The sort key of a member item: generation, then entry.
fn member_sk(generation: u64, entry: &[u8]) -> Vec<u8> {
    let mut sk = Vec::with_capacity(9 + entry.len());
    sk.push(MEMBER);
    sk.extend_from_slice(&generation.to_be_bytes());
    sk.extend_from_slice(entry);
    sk
}

/// What a key's head item says the key holds.
#[derive(Debug, Clone)]
struct Head {
    kind: Kind,
    exp: Option<u64>,
    version: String,
}

#[derive(Debug, Clone)]
enum Kind {
    Value(Vec<u8>),
    /// A counter, stored as a number so that increments can `ADD` to it.
    Counter(i64),
    Collection {
        count: u64,
        generation: u64,
    },
}

/// The `kind` of a head item holding a value.
const KIND_VALUE: &str = "v";
/// The `kind` of a head item holding a counter.
const KIND_COUNTER: &str = "n";
/// The `kind` of a head item holding a sorted collection.
const KIND_COLLECTION: &str = "c";

impl Kind {
    /// What a read of the key returns: a counter reads as the decimal text
    /// the contract stores counters as.
    fn into_value(self) -> Option<Vec<u8>> {
        match self {
            Kind::Value(v) => Some(v),
            Kind::Counter(n) => Some(n.to_string().into_bytes()),
            Kind::Collection { .. } => None,
        }
    }
}

impl Head {
    fn live(&self, now: u64) -> bool {
        self.exp.is_none_or(|at| at > now)
    }

    fn parse(key: &str, item: &Item) -> Result<Head> {
        let bad = |what: &str| {
            Error::backend(
                BACKEND,
                format!("read the head item of `{key}`"),
                format!("{what}; the table holds an item this store did not write"),
            )
        };
        let number = |name: &str| -> Result<Option<u64>> {
            match item.get(name) {
                None => Ok(None),
                Some(AttributeValue::N(n)) => n
                    .parse()
                    .map(Some)
                    .map_err(|_| bad(&format!("`{name}` is not a whole number"))),
                Some(_) => Err(bad(&format!("`{name}` is not a number"))),
            }
        };
        let version = match item.get(VERSION) {
            Some(AttributeValue::S(v)) => v.clone(),
            _ => return Err(bad("it has no version")),
        };
        let kind = match item.get(KIND) {
            Some(AttributeValue::S(k)) if k == KIND_VALUE => match item.get(VALUE) {
                Some(AttributeValue::B(b)) => Kind::Value(b.as_ref().to_vec()),
                _ => return Err(bad("a value item has no binary `v`")),
            },
            Some(AttributeValue::S(k)) if k == KIND_COUNTER => match item.get(VALUE) {
                Some(AttributeValue::N(n)) => Kind::Counter(
                    n.parse()
                        .map_err(|_| bad("a counter's `v` is not a 64-bit integer"))?,
                ),
                _ => return Err(bad("a counter item has no number `v`")),
            },
            Some(AttributeValue::S(k)) if k == KIND_COLLECTION => Kind::Collection {
                count: number(COUNT)?.unwrap_or(0),
                generation: number(GENERATION)?.ok_or_else(|| bad("a collection has no `g`"))?,
            },
            _ => return Err(bad("it has no known `kind`")),
        };
        Ok(Head {
            kind,
            exp: number(EXPIRES)?,
            version,
        })
    }

    /// The head item holding this state for `key`.
    fn item(key: &str, kind: &Kind, exp: Option<u64>, version: &str) -> Item {
        let mut item = head_key(key);
        match kind {
            Kind::Value(v) => {
                item.insert(KIND.to_owned(), AttributeValue::S(KIND_VALUE.to_owned()));
                item.insert(VALUE.to_owned(), AttributeValue::B(Blob::new(v.clone())));
            }
            Kind::Counter(n) => {
                item.insert(KIND.to_owned(), AttributeValue::S(KIND_COUNTER.to_owned()));
                item.insert(VALUE.to_owned(), AttributeValue::N(n.to_string()));
            }
            Kind::Collection { count, generation } => {
                item.insert(
                    KIND.to_owned(),
                    AttributeValue::S(KIND_COLLECTION.to_owned()),
                );
                item.insert(COUNT.to_owned(), AttributeValue::N(count.to_string()));
                item.insert(
                    GENERATION.to_owned(),
                    AttributeValue::N(generation.to_string()),
                );
            }
        }
        if let Some(at) = exp {
            item.insert(EXPIRES.to_owned(), AttributeValue::N(at.to_string()));
            item.insert(
                TTL.to_owned(),
                AttributeValue::N((at / 1000 + 1).to_string()),
            );
        }
        item.insert(VERSION.to_owned(), AttributeValue::S(version.to_owned()));
        item
    }
}

impl Store for DynamoStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    /// Raises the change stamp of every counter the batch moves, in the
    /// same transaction ([`Store::change_stamps`]), and sends each
    /// discovery-set member to its shard. Feed entries are refused: this
    /// store keeps no feed.
    async fn commit(&self, batch: Batch) -> Result<Outcome> {
        if let Some(a) = batch.appends().first() {
            return Err(crate::store::feed::no_feed_for(&a.feed));
        }
        let batch = spread(stamped(batch), self)?;
        Box::pin(self.commit_batch(batch)).await
    }

    async fn commit_after_read<T, F>(&self, keys: &[String], plan: F) -> Result<(Outcome, T)>
    where
        T: Send,
        F: FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    {
        let mut stripes: Vec<usize> = keys
            .iter()
            .map(|k| {
                use std::hash::{BuildHasher, BuildHasherDefault};
                let hash =
                    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                        .hash_one(k);
                (hash % STRIPES as u64) as usize
            })
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut held = Vec::with_capacity(stripes.len());
        for i in stripes {
            held.push(self.stripes[i].lock().await);
        }
        let out = commit_after_read_optimistic(self, keys, plan).await;
        drop(held);
        out
    }

    /// The stamps as stored, expired or not. Expiry here is judged by each
    /// writer's clock when it plans its write, so a writer whose clock is
    /// behind (or whose request is slow) can still move a counter made
    /// again on the removed stamp it keeps after the walker's clock says
    /// that stamp has expired; read as stored, such a stamp still proves
    /// nothing ([`REMOVED_STAMP`](crate::store::counter::REMOVED_STAMP)),
    /// until DynamoDB's expiry removes it or a write past its expiry starts
    /// it again.
    async fn change_stamps(&self, keys: &[String]) -> Result<Option<Vec<u64>>> {
        let stamps: Vec<String> = keys.iter().map(|k| stamp_key(k)).collect();
        let heads = Box::pin(self.heads(&stamps)).await?;
        Ok(Some(stamps_of(
            heads
                .into_iter()
                .map(|h| h.and_then(|h| h.kind.into_value()))
                .collect(),
        )))
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let head = Box::pin(self.head(key)).await?;
        let now = self.clock.now_ms();
        Ok(head.and_then(|h| value_of(h, now)))
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        let heads = Box::pin(self.heads(keys)).await?;
        let now = self.clock.now_ms();
        Ok(heads
            .into_iter()
            .map(|h| h.and_then(|h| value_of(h, now)))
            .collect())
    }

    async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
        match self.shards_of(key) {
            Some(shards) => Box::pin(self.shards_range(&shards, &req)).await,
            None => Box::pin(self.range_now(key, &req)).await,
        }
    }

    async fn collection_len(&self, key: &str) -> Result<u64> {
        if let Some(shards) = self.shards_of(key) {
            return Box::pin(self.shards_len(&shards)).await;
        }
        let now = self.clock.now_ms();
        Ok(match Box::pin(self.head(key)).await? {
            Some(Head {
                kind: Kind::Collection { count, .. },
                exp,
                ..
            }) if exp.is_none_or(|at| at > now) => count,
            _ => 0,
        })
    }

    async fn time_to_live(&self, key: &str) -> Result<Option<std::time::Duration>> {
        let now = self.clock.now_ms();
        Ok(match Box::pin(self.head(key)).await? {
            Some(Head { exp: Some(at), .. }) if at > now => {
                Some(std::time::Duration::from_millis(at - now))
            }
            _ => None,
        })
    }

    async fn now_ms(&self) -> Result<u64> {
        Ok(self.clock.now_ms())
    }

    async fn scan(&self, prefix: &str, cursor: Option<Vec<u8>>, count: usize) -> Result<ScanPage> {
        Box::pin(self.scan_now(prefix, cursor, count)).await
    }
}

/// The value a head holds at `now`, if it is a live value.
fn value_of(head: Head, now: u64) -> Option<Vec<u8>> {
    if head.live(now) {
        head.kind.into_value()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_endpoints_are_recognised() {
        assert!(is_loopback("http://127.0.0.1:8000"));
        assert!(is_loopback("http://localhost:8000/"));
        assert!(is_loopback("http://[::1]:8000"));
        assert!(!is_loopback("https://dynamodb.eu-west-1.amazonaws.com"));
    }

    #[test]
    fn endpoints_decode() {
        assert_eq!(
            percent_decode("http%3A%2F%2F127.0.0.1%3A9").as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("a%"), Some("a%".to_owned()));
    }
}
