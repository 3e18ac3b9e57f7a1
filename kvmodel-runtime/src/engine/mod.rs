//! The upkeep engine behind every generated repository: the traits an
//! entity implements and the facts its records derive ([`entity`]), typed
//! reads and writes (the [`Engine`] of [`repo`]), pages ([`page`]) and
//! maintenance ([`maintenance`]): the `verify`/`reconcile` [`walk`] and
//! [`migrate`], written once over any [`def::EntityDef`] (a generated
//! entity or the run-time model), index [`state`]s, and the migration
//! lease and [`ledger`]; and standalone counters ([`tally`]), which belong
//! to no entity.
//!
//! # Layers
//!
//! The modules form layers, each importing only from its own layer and
//! the ones below (and from `codec`, `store`, `model`, `schema`, `error`
//! and `exec` outside the engine); `kvmodel-build`'s `checks` test fails on
//! any import cycle between modules. `Engine` is one type: a role module
//! adds its methods in an `impl Engine` block, and calls the methods of
//! others without importing them. From the bottom:
//!
//! 1. **Data**: plain types and pure helpers. [`skipped`], `trace`,
//!    [`records`], `wide` (serde forms), [`page`] (requests, cursors,
//!    pages), [`relation`] (the parents, dependents and cascade kind of
//!    `on_delete` relations), [`report`] (what migrations and walks
//!    report), [`entity`] (the traits and facts) and [`def`] (an entity
//!    as a value, generated or from the run-time model).
//! 2. **Core**: [`repo`], the [`Engine`] type, its store, its one traced
//!    commit, its retries.
//! 3. **Write parts**: what one write adds to its batch. `receipt` (the
//!    expiry receipt and ledger entry), [`feed`] (change events),
//!    [`links`], [`shards`] and [`tally`], and on top `transition`, the
//!    one transition of every write. Beside its part, each may give
//!    `Engine` the reads of what it writes (`receipt` reads a record with
//!    its receipt, `feed` reads the entity's feed, `shards` sums a sharded
//!    counter): one feature, one module.
//! 4. **Roles**: `impl Engine` blocks that do the work. `read`, `write`,
//!    `delete`, [`on_delete`] (the cascade), [`expiry`] (the sweep) and
//!    [`txn`] (transactions over several repositories).
//! 5. **Maintenance**: [`walk`] (`verify`/`reconcile`), [`migrate`],
//!    [`orphans`] (`purge`), [`state`], [`ledger`], [`maintenance`] (the
//!    repository methods over them), and the static cost reports [`cost`]
//!    and [`dynamo_cost`].

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
pub(crate) mod receipt;
pub mod records;
pub mod relation;
pub mod repo;
pub mod report;
pub mod shards;
pub mod skipped;
pub mod state;
pub mod tally;
#[cfg(feature = "tracing")]
pub mod trace;
pub(crate) mod transition;
pub mod txn;
pub mod walk;
pub(crate) mod wide;
mod write;

pub use repo::{Engine, MAX_ATTEMPTS};
