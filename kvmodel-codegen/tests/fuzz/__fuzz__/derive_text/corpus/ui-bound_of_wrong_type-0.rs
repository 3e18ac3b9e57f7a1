#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "item:{id}")]
#[kv(index(name = "by_group", fields(group), order_by = rank))]
#[kv(index(name = "by_kind", fields(kind)))]
pub struct Item {
    pub id: String,
    pub group: String,
    pub kind: String,
    pub rank: i64,
}
