#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "order:{id}")]
#[kv(counter(name = "per_day", group_by(day(user_id))))]
pub struct Order {
    pub id: String,
    pub user_id: String,
}
