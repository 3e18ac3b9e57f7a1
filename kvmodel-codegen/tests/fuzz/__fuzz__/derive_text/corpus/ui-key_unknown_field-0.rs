#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{idd}")]
pub struct User {
    pub id: String,
}
