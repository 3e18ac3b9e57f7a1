#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}")]
#[kv(index(name = "by_status", fields(status)))]
pub struct User {
    pub id: String,
    pub status: Status,
}
