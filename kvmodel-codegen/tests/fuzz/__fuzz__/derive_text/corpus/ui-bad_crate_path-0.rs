#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(crate = "my kvmodel", namespace = "shop", key = "user:{id}")]
pub struct User {
    pub id: String,
}
