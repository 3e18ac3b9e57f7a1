#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(version = 1)]
pub struct UserV1 {
    pub id: String,
}
