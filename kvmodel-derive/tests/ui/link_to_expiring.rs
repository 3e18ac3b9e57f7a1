use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(link(name = "seen_in", to = Session, inverse = "posts"))]
pub struct Post {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "session:{id}", ttl = "30m")]
pub struct Session {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "visit:{id}", ttl = "30m")]
#[kv(link(name = "posts", to = Post, inverse = "visits"))]
pub struct Visit {
    pub id: String,
}

fn main() {}
