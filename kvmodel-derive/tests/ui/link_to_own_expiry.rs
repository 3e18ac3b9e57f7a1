use kvmodel::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(link(name = "offers", to = Offer, inverse = "posts"))]
pub struct Post {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "offer:{id}")]
pub struct Offer {
    pub id: String,
    #[kv(expiry)]
    pub ends: Option<Timestamp>,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "ad:{id}")]
#[kv(link(name = "posts", to = Post, inverse = "ads"))]
pub struct Ad {
    pub id: String,
    #[kv(expiry)]
    pub ends: Timestamp,
}

fn main() {}
