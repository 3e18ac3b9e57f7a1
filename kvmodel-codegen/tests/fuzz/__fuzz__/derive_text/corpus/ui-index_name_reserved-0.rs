#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}")]
#[kv(index(name = "self", fields(email)))]
pub struct User {
    pub id: String,
    pub email: String,
}
