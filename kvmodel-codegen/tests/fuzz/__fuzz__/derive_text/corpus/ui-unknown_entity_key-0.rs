#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namspace = "shop", key = "user:{id}")]
pub struct User {
    pub id: String,
}
