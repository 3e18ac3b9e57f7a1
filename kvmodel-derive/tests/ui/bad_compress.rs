use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}", compress(codec = "brotli", above = "1KiB"))]
pub struct Post {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "draft:{id}", max_size = "4KiB")]
#[kv(compress(codec = "lz4", above = "8KiB"))]
pub struct Draft {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "page:{id}", compress(codec = "lz4"))]
pub struct Page {
    pub id: String,
}

fn main() {}
