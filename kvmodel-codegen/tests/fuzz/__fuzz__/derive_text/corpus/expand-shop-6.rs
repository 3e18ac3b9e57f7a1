#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "cart:{user_id}", ttl = "7d")]
pub struct Cart {
    pub user_id: String,
    pub skus: Vec<String>,
}
