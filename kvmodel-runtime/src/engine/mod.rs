//! The upkeep engine behind every generated repository: the traits an
//! entity implements and the facts its records derive ([`entity`]), typed
//! reads and writes ([`repo`]), pages ([`page`]) and maintenance
//! ([`maintenance`]).

mod api;
pub mod cost;
pub mod entity;
pub mod expiry;
pub mod maintenance;
pub mod orphans;
pub mod page;
pub mod repo;
pub mod skipped;
#[cfg(feature = "tracing")]
pub mod trace;

pub use repo::{Engine, MAX_ATTEMPTS};
