#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 2)]
#[kv(counter(name = "total", since = 3))]
#[kv(migration(from = 1))]
pub struct User {
    pub id: String,
}
