//! The upkeep engine behind every generated repository: the traits an
//! entity implements and the facts its records derive ([`entity`]), typed
//! reads and writes ([`repo`]), pages ([`page`]) and maintenance
//! ([`maintenance`]).

mod api;
pub mod entity;
pub mod maintenance;
pub mod page;
pub mod repo;

pub use repo::{Engine, MAX_ATTEMPTS};
