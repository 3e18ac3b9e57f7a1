use serde::{Deserialize, Serialize};

/// A type, but no entity.
pub struct Tag;

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(relation(name = "author", belongs_to = Author, by = author_id))]
#[kv(relation(name = "tag", belongs_to = Tag, by = tag))]
pub struct Post {
    pub id: String,
    pub author_id: String,
    pub tag: String,
}

fn main() {}
