use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(version = 1)]
pub struct UserV1 {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 2, migrate_from = "User V1")]
pub struct User {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "account:{id}", version = 2, migrate_from = 1)]
pub struct Account {
    pub id: String,
}

fn main() {}
