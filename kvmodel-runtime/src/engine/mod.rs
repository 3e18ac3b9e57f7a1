//! The upkeep engine behind every generated repository: the traits an
//! entity implements and the facts its records derive ([`entity`]), typed
//! reads and writes ([`repo`]), pages ([`page`]) and maintenance
//! ([`maintenance`]): the `verify`/`reconcile` [`walk`] and [`migrate`],
//! written once over any [`def::EntityDef`] (a generated entity or the
//! run-time model), index [`state`]s, and the migration lease and
//! [`ledger`]; and standalone counters ([`tally`]), which belong to no
//! entity.

pub mod cost;
pub mod def;
mod delete;
pub mod dynamo_cost;
pub mod entity;
pub mod expiry;
pub mod feed;
pub mod ledger;
pub mod links;
pub mod maintenance;
pub mod migrate;
pub mod on_delete;
pub mod orphans;
pub mod page;
mod read;
pub mod records;
pub mod repo;
pub mod shards;
pub mod skipped;
pub mod state;
pub mod tally;
#[cfg(feature = "tracing")]
pub mod trace;
pub(crate) mod transition;
pub mod txn;
pub mod walk;
mod write;

pub use repo::{Engine, MAX_ATTEMPTS};
