use serde::{Deserialize, Serialize};

// The parent lists a dependent whose relation keeps its children.
#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "author:{id}")]
#[kv(dependent(entity = Post, relation = author))]
pub struct Author {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "post:{id}")]
#[kv(relation(name = author, belongs_to = Author, by = author_id))]
pub struct Post {
    pub id: String,
    pub author_id: String,
}

fn main() {}
