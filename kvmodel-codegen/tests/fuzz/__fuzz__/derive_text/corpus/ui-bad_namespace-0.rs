#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "My Shop", key = "user:{id}")]
pub struct User {
    pub id: String,
}
