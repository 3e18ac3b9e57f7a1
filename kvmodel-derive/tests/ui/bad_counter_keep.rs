use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "links", key = "click:{id}", ttl = "1d")]
#[kv(counter(name = "hourly", keep = "on_expire"))]
#[kv(counter(name = "ever", keep = 100))]
#[kv(counter(name = "balance", sum = delta, keep = "always"))]
pub struct Click {
    pub id: String,
    pub delta: i64,
}

fn main() {}
