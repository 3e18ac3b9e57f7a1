//! Runtime of kvmodel: the atomic [`Store`] contract and its backends, key
//! encoding, record envelopes, and the upkeep engine generated repositories
//! call.
//!
//! Most users depend on the `kvmodel` facade, which re-exports what they
//! need. This crate's documented surface is what a store implementer needs:
//! the [`Store`] contract and its types ([`store`]), the built-in backends,
//! the [`Error`], the [`conformance`] suite (feature `conformance`), and
//! the types the facade re-exports from the crate root.
//!
//! Everything else (key and record encodings, the upkeep engine, the
//! run-time model of a schema file) is private to the crate. kvmodel's own
//! crates (the facade, the generated code, the schema front-end and the
//! operations CLI) reach what they need of it through one hidden module,
//! `__private`, which carries no stability promise: use the `kvmodel`
//! facade instead.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub(crate) mod codec;
pub(crate) mod engine;
pub mod error;
mod exec;
pub(crate) mod model;
pub(crate) mod schema;
pub mod store;
mod time;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use engine::expiry::Sweep;
pub use engine::page::{Cursor, ListRequest, OrderValue, Page, PageRequest, Unordered};
pub use engine::skipped::Skipped;
pub use engine::txn::{MAX_TRANSACTION_ENTRIES, Transaction, TxRepo, transaction};
pub use error::{Error, Result};
#[cfg(feature = "dynamodb")]
pub use store::DynamoStore;
#[cfg(feature = "redb")]
pub use store::RedbStore;
pub use store::{
    AnyStore, Batch, Condition, Direction, Member, MemberRef, MemoryStore, Op, Outcome, PlanDelete,
    Planned, PlannedDelete, RangeRequest, RangeResult, ScanPage, Store,
};
#[cfg(feature = "redis-cluster")]
pub use store::{RedisClusterStore, RedisClusterStoreBuilder};
#[cfg(feature = "redis")]
pub use store::{RedisStore, RedisStoreBuilder};
pub use time::{Date, ParseTimeError, TimeRangeError, Timestamp};
pub use uuid::Uuid;
