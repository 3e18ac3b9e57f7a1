use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}", max_size = "256 kilobytes")]
pub struct Post {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "draft:{id}", max_size = 0)]
pub struct Draft {
    pub id: String,
}

fn main() {}
