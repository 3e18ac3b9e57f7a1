#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{id}")]
#[kv(index(name = "by_email", fields(email), unique))]
pub struct User {
    pub id: String,
    #[kv(unique)]
    pub email: String,
}
