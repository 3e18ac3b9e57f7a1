#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "{id}")]
pub struct User {
    pub id: String,
}
