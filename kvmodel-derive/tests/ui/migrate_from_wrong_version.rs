use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(version = 1)]
pub struct UserV1 {
    pub id: String,
}

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 3, migrate_from = UserV1)]
pub struct User {
    pub id: String,
}

impl From<UserV1> for User {
    fn from(v: UserV1) -> Self {
        User { id: v.id }
    }
}
fn main() {}
