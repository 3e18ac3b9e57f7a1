//! Runtime of kvmodel: the atomic [`Store`] contract and its backends, key
//! encoding, record envelopes, and the upkeep engine generated repositories
//! call.
//!
//! Most users depend on the `kvmodel` facade, which re-exports this crate.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod codec;
pub mod engine;
pub mod error;
mod exec;
pub mod model;
pub mod schema;
pub mod store;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use codec::time::{Date, ParseTimeError, TimeRangeError, Timestamp};
pub use engine::expiry::Sweep;
pub use engine::page::{Cursor, ListRequest, OrderValue, Page, PageRequest, Unordered};
pub use engine::skipped::Skipped;
pub use error::{Error, Result};
#[cfg(feature = "redb")]
pub use store::RedbStore;
pub use store::{
    AnyStore, Batch, Condition, Direction, Member, MemberRef, MemoryStore, Op, Outcome, Planned,
    RangeRequest, RangeResult, ScanPage, Store,
};
#[cfg(feature = "redis-cluster")]
pub use store::{RedisClusterStore, RedisClusterStoreBuilder};
#[cfg(feature = "redis")]
pub use store::{RedisStore, RedisStoreBuilder};
pub use uuid::Uuid;
