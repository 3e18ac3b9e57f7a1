#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "order:{id}", colocate = user_id)]
pub struct Order {
    pub id: String,
    pub user_id: String,
}
