#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "stock:{sku}:{warehouse}")]
#[kv(index(name = "by_warehouse", fields(warehouse), order_by = quantity))]
#[kv(counter(name = "units", sum = quantity, group_by(warehouse, month(updated_at))))]
pub struct Stock {
    pub sku: String,
    pub warehouse: u32,
    pub quantity: i32,
    pub updated_at: Timestamp,
}
