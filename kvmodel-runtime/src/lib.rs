//! Runtime of kvmodel: the atomic [`Store`] contract and its backends, key
//! encoding, record envelopes, and the upkeep engine generated repositories
//! call.
//!
//! Most users depend on the `kvmodel` facade, which re-exports this crate.

#![warn(missing_docs)]

pub mod batch;
pub mod clock;
pub mod entity;
pub mod error;
pub mod key;
pub mod maintenance;
pub mod memory;
pub mod migrate;
pub mod page;
pub mod record;
pub mod repo;
pub mod store;
pub mod time;

#[cfg(feature = "redb")]
mod redb_store;
#[cfg(feature = "redis")]
mod redis_store;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use batch::{Batch, Condition, Op, Outcome};
pub use error::{Error, Result};
pub use memory::MemoryStore;
pub use page::{Cursor, Page, PageRequest};
#[cfg(feature = "redb")]
pub use redb_store::RedbStore;
#[cfg(feature = "redis")]
pub use redis_store::RedisStore;
pub use store::{Direction, Member, RangeRequest, RangeResult, Store};
pub use time::{Date, Timestamp};
pub use uuid::Uuid;
