#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "session:{id}", ttl = "30m", ttl_jitter = "10%")]
pub struct Session {
    pub id: String,
    #[kv(unique)]
    pub token: String,
    pub user_id: String,
}
