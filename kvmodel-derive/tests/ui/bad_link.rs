use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(link(name = "tags", to = Tag))]
#[kv(link(name = "topics", to = Tag, inverse = "posts", order_by = id))]
#[kv(link(name = "related", to = Post, inverse = "related"))]
#[kv(link(name = "all", to = Tag, inverse = "Tagged"))]
pub struct Post {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "tag:{name}")]
pub struct Tag {
    pub name: String,
}

fn main() {}
