use serde::{Deserialize, Serialize};

// One error per refused bucket, and none that follows from it (an index
// left with no fields, a counter left ungrouped).
#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "event:{id}")]
#[kv(index(name = "by_week", fields(week(at))))]
#[kv(counter(name = "per_week", group_by(week(at))))]
pub struct Event {
    pub id: String,
    pub at: kvmodel::Timestamp,
}
fn main() {}
