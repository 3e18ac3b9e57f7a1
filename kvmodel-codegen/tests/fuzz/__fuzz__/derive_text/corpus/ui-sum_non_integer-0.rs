#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "order:{id}")]
#[kv(counter(name = "revenue", sum = note))]
pub struct Order {
    pub id: String,
    pub note: String,
}
