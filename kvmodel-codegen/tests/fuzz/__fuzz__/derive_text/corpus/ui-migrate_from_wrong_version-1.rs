#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 3, migrate_from = UserV1)]
pub struct User {
    pub id: String,
}
