use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(index(name = "recent", fields(author), order_by = at, keep = 0))]
#[kv(index(name = "by_slug", fields(slug), unique, keep = 10))]
pub struct Post {
    pub id: String,
    pub author: String,
    pub slug: String,
    pub at: i64,
}

fn main() {}
