#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}")]
pub struct User {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub number: u64,
}
