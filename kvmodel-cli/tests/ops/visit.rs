//! The entity of `visits.yaml`, declared for the tests that write it
//! (`kvmodel generate kvmodel-cli/tests/ops/visits.yaml`).

use kvmodel::KvEntity;
use serde::{Deserialize, Serialize};

/// A page visit that expires: its receipt lists what it added.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "visits", key = "visit:{id}", ttl = "1h")]
#[kv(index(name = by_token, fields(token), unique))]
#[kv(index(name = by_page, fields(page), order_by = seconds))]
#[kv(counter(name = per_page, group_by(page)))]
#[kv(counter(name = seconds_per_page, sum = seconds, group_by(page)))]
#[kv(counter(name = total, shards = 4))]
pub struct Visit {
    pub id: String,
    pub page: String,
    pub token: String,
    pub seconds: i64,
}

/// Visit `id` of `page`.
pub fn visit(id: &str, page: &str, seconds: i64) -> Visit {
    Visit {
        id: id.into(),
        page: page.into(),
        token: format!("t-{id}"),
        seconds,
    }
}
