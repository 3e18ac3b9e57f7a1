//! kvmodel: typed repositories for key-value stores, generated from a
//! declared data model.
//!
//! Declare an entity with `#[derive(KvEntity)]`, get `XRepo<S>` (create, get,
//! update, modify, delete, index lookups, ordered listings, counters) and
//! `XKeys` (every key it writes). Every write is one atomic commit that
//! keeps indexes and counters in step, on any [`Store`].
//!
//! ```
//! use kvmodel::{KvEntity, KvEnum, MemoryStore, PageRequest};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
//! #[serde(rename_all = "snake_case")]
//! pub enum Status { Active, Suspended }
//!
//! #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
//! #[kv(namespace = "shop", key = "user:{id}")]
//! #[kv(index(name = "by_status", fields(status)))]
//! #[kv(counter(name = "by_status", group_by(status)))]
//! pub struct User {
//!     pub id: String,
//!     #[kv(unique, normalize = "lowercase")]
//!     pub email: String,
//!     pub status: Status,
//! }
//!
//! # tokio_test_block(async {
//! let users = UserRepo::new(MemoryStore::new());
//! users.create(&User { id: "1".into(), email: "Ada@Example.com".into(), status: Status::Active }).await?;
//! assert!(users.find_by_email("ada@example.com").await?.is_some());
//! assert_eq!(users.count_by_status(Status::Active).await?, 1);
//! let page = users.list_by_status(Status::Active, PageRequest::new(10)).await?;
//! assert_eq!(page.items.len(), 1);
//! # Ok::<(), kvmodel::Error>(())
//! # });
//! # fn tokio_test_block<F: std::future::Future<Output = kvmodel::Result<()>>>(f: F) {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f).unwrap();
//! # }
//! ```
//!
//! The `#[kv(…)]` attributes are listed in [`attributes`].
//!
//! # Tracing
//!
//! With the `tracing` feature (on by default), repositories report what they
//! do to [`tracing`](https://docs.rs/tracing), all of it at `DEBUG` level with
//! the target `kvmodel`:
//!
//! - **Spans.** Every repository operation is a span named after the engine
//!   method that runs it, with the fields `entity` (the entity's Rust type
//!   name) and `backend` (`memory`, `redb`, `redis`, `redis-cluster` or
//!   `dynamodb`):
//!   `create`, `create_many`, `get`, `get_many`, `exists`, `count_all`,
//!   `update`, `upsert`, `modify`, `try_modify`, `delete`, `find_unique`
//!   (the `find_by_…` methods), `list` (`list_<index>`,
//!   `list_by_<relation>`), `list_all`, `count` (`count_…` and `sum_…`,
//!   sharded or not), `migrate_all` (with `migrate_from` inside it),
//!   `verify`, `reconcile` and `sweep_expired`. Links (`link_…`,
//!   `unlink_…`, their listings and counts) and `purge` have no span of
//!   their own.
//!   An operation on one record (`get`, `exists`, `create`, `update`,
//!   `upsert`, `modify`, `try_modify`, `delete`) also carries `key`, the
//!   record's key in the store (`shop:user:42`). Keys may hold personal
//!   data: they are recorded only while the target `kvmodel::keys` is on,
//!   so `kvmodel=debug,kvmodel::keys=off` keeps them out of traces.
//! - **Commit events.** The commit of each write, maintenance step or link
//!   is an event `commit` with the fields `backend`, `conditions` and `ops`
//!   (how many of each the batch holds), `keys` (how many distinct keys it
//!   touches), `bytes` (the bytes of the values and collection entries it
//!   writes) and `outcome` (`applied`, `condition failed` or `error`).
//! - **Retry events.** Every optimistic retry is an event "another writer
//!   changed the record; retrying" with the fields `attempt` (the attempt
//!   that failed) and `wait_us` (the jittered backoff before the next one).
//!
//! To see them, install a subscriber in the program, for example
//! `tracing-subscriber` with its `env-filter` feature
//! (`tracing-subscriber = { version = "0.3", features = ["env-filter"] }`):
//!
//! ```ignore
//! tracing_subscriber::fmt().with_env_filter("kvmodel=debug").init();
//! ```
//!
//! Without a subscriber that listens at `DEBUG` for `kvmodel`, nothing of it
//! is computed: each span or event costs one cached check (on `MemoryStore`,
//! 1.007× the instructions of a build without the feature). To build without
//! it, turn off the default features and name the ones you keep:
//!
//! ```toml
//! kvmodel = { version = "0.1", default-features = false, features = ["derive", "redb"] }
//! ```
//!
//! Cargo unifies features, so another crate of the build that enables
//! `kvmodel/tracing` turns it back on.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// Every error is one [`Error`]; match the variants a caller can act on.
///
/// ```
/// # use kvmodel::{KvEntity, MemoryStore};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
/// #[kv(namespace = "app", key = "user:{id}")]
/// pub struct User {
///     pub id: String,
///     #[kv(unique, normalize = "lowercase")]
///     pub email: String,
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let users = UserRepo::new(MemoryStore::new());
/// users.create(&User { id: "1".into(), email: "ada@example.com".into() }).await?;
/// let again = User { id: "2".into(), email: "ADA@example.com".into() };
/// match users.create(&again).await {
///     Err(kvmodel::Error::UniqueViolation { index, .. }) => assert_eq!(index, "by_email"),
///     other => panic!("expected a unique violation, got {other:?}"),
/// }
/// // Nothing of the refused record was written.
/// assert!(users.get("2").await?.is_none());
/// # Ok::<(), kvmodel::Error>(())
/// # }).unwrap();
/// ```
pub use kvmodel_runtime::Error;
pub use kvmodel_runtime::Result;

/// A [`Page`] holds a listing's items and the cursor of the next page;
/// pass it back with [`PageRequest::after`] until it is `None`.
///
/// ```
/// # use kvmodel::{KvEntity, MemoryStore, PageRequest};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
/// #[kv(namespace = "app", key = "post:{id}")]
/// #[kv(index(name = "by_author", fields(author), order_by = score))]
/// pub struct Post {
///     pub id: String,
///     pub author: String,
///     pub score: i64,
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let posts = PostRepo::new(MemoryStore::new());
/// for i in 0..5 {
///     posts.create(&Post { id: format!("p{i}"), author: "ada".into(), score: 10 - i }).await?;
/// }
/// let mut request = PageRequest::new(2);
/// let mut scores = Vec::new();
/// loop {
///     let page = posts.list_by_author("ada", request.clone()).await?;
///     scores.extend(page.items.iter().map(|p| p.score));
///     match page.next {
///         Some(cursor) => request = request.after(cursor),
///         None => break,
///     }
/// }
/// assert_eq!(scores, [6, 7, 8, 9, 10]);
/// # Ok::<(), kvmodel::Error>(())
/// # }).unwrap();
/// ```
pub use kvmodel_runtime::Page;
pub use kvmodel_runtime::{Cursor, OrderValue, PageRequest, Skipped, Unordered};
pub use kvmodel_runtime::{Date, ParseTimeError, TimeRangeError, Timestamp, Uuid};
pub use kvmodel_runtime::{MAX_TRANSACTION_ENTRIES, Transaction, TxRepo, transaction};

#[cfg(feature = "dynamodb")]
pub use kvmodel_runtime::DynamoStore;
#[cfg(feature = "redb")]
pub use kvmodel_runtime::RedbStore;
pub use kvmodel_runtime::{AnyStore, MemoryStore};
#[cfg(feature = "redis-cluster")]
pub use kvmodel_runtime::{RedisClusterStore, RedisClusterStoreBuilder};
#[cfg(feature = "redis")]
pub use kvmodel_runtime::{RedisStore, RedisStoreBuilder};

/// The store contract every backend implements: one atomic
/// [`commit`](Store::commit) of a [`Batch`], point reads and ordered ranges.
/// Generated repositories need only `S: Store`; use these types to read or
/// write a store directly, or to implement a backend of your own.
pub use kvmodel_runtime::{
    Batch, Condition, Direction, Member, Op, Outcome, PlanDelete, Planned, PlannedDelete,
    RangeRequest, RangeResult, ScanPage, Store,
};

pub use kvmodel_runtime::Sweep;
/// Change feeds (`feed: { retain: 7d }`): a repository's `feed()` and
/// the typed changes it streams.
pub mod feed {
    pub use kvmodel_runtime::__private::{Change, Event, Feed, FeedStream, Position};
    pub use kvmodel_runtime::store::FeedPosition;
}
/// A record a migration left at its version because another record holds
/// its value of a unique index ([`Progress::duplicates`]).
pub use kvmodel_runtime::__private::Duplicate;
/// Reports of the maintenance methods every repository has (`migrate_all`,
/// `verify`, `reconcile`, `sweep_expired`).
pub use kvmodel_runtime::__private::{CounterDrift, Drift, Progress, Unjudged, Unsettled};

/// The key arguments of an entity as one value: what a link's methods take
/// for the record at its far end.
///
/// `#[derive(KvEntity)]` implements it for every entity with a key: `Args`
/// is the one argument of a key with one placeholder (`&str` for
/// `tag:{name}`), a tuple of them in template order for a composite key
/// (`(&str, u32)` for `stock:{sku}:{warehouse}`). A link
/// `#[kv(link(name = "tags", to = Tag, inverse = "posts"))]` on `Post`
/// gives `PostRepo::link_tags(&self, id, tag: <Tag as KeyArgs>::Args<'_>)`,
/// called as `posts.link_tags("p1", "rust")`.
///
/// ```
/// # use kvmodel::{KeyArgs, KvEntity};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
/// #[kv(namespace = "shop", key = "stock:{sku}:{warehouse}")]
/// pub struct Stock {
///     pub sku: String,
///     pub warehouse: u32,
///     pub quantity: i64,
/// }
///
/// let key = <Stock as KeyArgs>::key_of(("sku-1", 7));
/// assert_eq!(key, StockKeys::record("sku-1", 7));
/// ```
pub use kvmodel_runtime::__private::KeyArgs;

/// Clocks for [`MemoryStore::with_clock`]: a [`ManualClock`](clock::ManualClock)
/// makes TTLs testable without sleeping.
pub mod clock {
    pub use kvmodel_runtime::store::clock::{Clock, ManualClock, SystemClock};
}

/// Key and sort encodings: implement [`KeyPart`](key::KeyPart) (and
/// [`SortPart`](key::SortPart) for `order_by`) on a type of your own to use it
/// in keys, indexes and groups; fieldless enums get both from
/// `#[derive(KvEnum)]`.
pub mod key {
    pub use kvmodel_runtime::__private::{KeyPart, SortPart, hash_slot};
}

/// The conformance suite every backend passes, for implementors of
/// [`Store`] (feature `conformance`).
#[cfg(feature = "conformance")]
pub use kvmodel_runtime::conformance;

#[doc(hidden)]
pub use kvmodel_runtime::__private;

#[doc = include_str!("attributes.md")]
pub mod attributes {}

#[cfg(feature = "derive")]
pub use kvmodel_derive::{KvCounter, KvEntity, KvEnum};

/// The serde kvmodel uses. Generated declarations derive through this path
/// (`#[serde(crate = "::kvmodel::serde")]`), so a crate that compiles them
/// needs no serde dependency of its own.
pub use kvmodel_runtime::__private::serde;

/// The README's Rust example, compiled as a doctest so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
