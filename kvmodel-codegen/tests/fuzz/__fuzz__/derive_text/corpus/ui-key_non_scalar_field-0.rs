#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{tags}")]
pub struct User {
    pub tags: Vec<String>,
}
