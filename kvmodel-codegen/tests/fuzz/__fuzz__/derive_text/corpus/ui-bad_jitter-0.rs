#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "auth", key = "session:{id}", ttl = "30m", ttl_jitter = "150%")]
pub struct Session {
    pub id: String,
}
