// kvmodel without its `zstd` feature: an entity that compresses with zstd
// does not compile, and says which feature to enable.
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}", compress(codec = "zstd", above = "1KiB"))]
pub struct Post {
    pub id: String,
    pub body: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "note:{id}", compress(codec = "lz4", above = "1KiB"))]
pub struct Note {
    pub id: String,
}

fn main() {}
