#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "order:{id}")]
#[kv(index(name = "by_user", fields(user_id), order_by = blob))]
pub struct Order {
    pub id: String,
    pub user_id: String,
    pub blob: Vec<u8>,
}
