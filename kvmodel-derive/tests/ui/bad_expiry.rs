use kvmodel::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "short", key = "coupon:{code}")]
pub struct Coupon {
    pub code: String,
    #[kv(expiry)]
    pub valid_for: i64,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "short", key = "link:{id}")]
pub struct Link {
    pub id: String,
    #[kv(expiry)]
    pub expires_at: Timestamp,
    #[kv(expiry)]
    pub also: Option<Timestamp>,
}

fn main() {}
