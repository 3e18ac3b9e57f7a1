//! The model of `old.rs` changed: a variant removed, variants reordered,
//! a counter and a TTL added (read by `kvmodel diff`).

use kvmodel::{KvEntity, KvEnum, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Status { Active }

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Tier { Gold, Free }


pub mod model {
    use super::*;
    /// A customer.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "shop", key = "user:{id}", ttl = "30d")]
    #[kv(counter(name = per_status, group_by(status)))]
    #[kv(index(name = by_tier, fields(status), order_by = tier))]
    pub struct User {
        pub id: String,
        pub status: Status,
        pub tier: Tier,
        pub at: Timestamp,
    }
}
