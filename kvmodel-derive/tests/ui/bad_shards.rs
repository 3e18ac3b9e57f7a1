use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "like:{id}")]
#[kv(counter(name = "total", shards = 1))]
#[kv(counter(name = "likes", shards = "many"))]
pub struct Like {
    pub id: String,
}

fn main() {}
