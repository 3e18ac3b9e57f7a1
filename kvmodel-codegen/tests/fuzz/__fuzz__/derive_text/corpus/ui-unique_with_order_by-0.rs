#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}")]
#[kv(index(name = "by_email", fields(email), unique, order_by = id))]
pub struct User {
    pub id: String,
    pub email: String,
}
