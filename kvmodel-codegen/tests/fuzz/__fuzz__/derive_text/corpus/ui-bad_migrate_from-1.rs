#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 2, migrate_from = "User V1")]
pub struct User {
    pub id: String,
}
