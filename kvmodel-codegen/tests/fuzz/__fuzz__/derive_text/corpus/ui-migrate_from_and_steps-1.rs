#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 2, migrate_from = UserV1)]
#[kv(migration(from = 1, add(name = "")))]
pub struct User {
    pub id: String,
    pub name: String,
}
