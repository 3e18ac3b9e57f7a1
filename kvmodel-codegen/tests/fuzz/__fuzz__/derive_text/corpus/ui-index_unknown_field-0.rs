#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}")]
#[kv(index(name = "by_status", fields(statsu)))]
pub struct User {
    pub id: String,
    pub status: String,
}
