use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "shelf:{room}:{n}")]
#[kv(dependent(entity = Book, relation = shelf))]
#[kv(dependent(entity = Book, relation = shelf))]
pub struct Shelf {
    pub room: String,
    pub n: u64,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "blog", key = "book:{id}")]
#[kv(relation(name = shelf, belongs_to = Shelf, by = shelf, keep = 10, on_delete = "cascade"))]
#[kv(relation(name = other, belongs_to = Shelf, by = shelf, on_delete = "cascades"))]
pub struct Book {
    pub id: String,
    pub shelf: String,
}

fn main() {}
