#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "auth", key = "session:{id}", ttl = "30 minutes")]
pub struct Session {
    pub id: String,
}
