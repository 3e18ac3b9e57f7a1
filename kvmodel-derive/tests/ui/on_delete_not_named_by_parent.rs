use serde::{Deserialize, Serialize};

// The child enforces `on_delete`, but the parent does not list it.
#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "author:{id}")]
pub struct Author {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(relation(name = author, belongs_to = Author, by = author_id, on_delete = "cascade"))]
pub struct Post {
    pub id: String,
    pub author_id: String,
}

fn main() {}
