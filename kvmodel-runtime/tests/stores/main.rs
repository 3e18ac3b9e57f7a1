//! The stores one by one beyond the conformance suite (URLs, keys, damaged
//! files, Redis edge cases, scripts, TLS, clocks): one module each, in one
//! test binary.

mod any_store;
mod keys;
mod redb;
mod redb_damage;
mod redb_kinds;
mod redis_edges;
mod redis_foreign;
mod redis_script;
mod redis_tls;
mod time;
