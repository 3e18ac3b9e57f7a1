#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(key = "user:{id}")]
pub struct User {
    pub id: String,
}
