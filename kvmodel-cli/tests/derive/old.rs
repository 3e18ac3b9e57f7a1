//! A model written with the derive, as deployed (read by `kvmodel diff`).

use kvmodel::{KvEntity, KvEnum, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Status { Active, Banned }

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Tier { Free, Gold }

pub struct Unrelated { pub x: u32 }

pub mod model {
    use super::*;
    /// A customer.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "shop", key = "user:{id}")]
    #[kv(index(name = by_tier, fields(status), order_by = tier))]
    pub struct User {
        pub id: String,
        pub status: Status,
        pub tier: Tier,
        pub at: Timestamp,
    }
}
