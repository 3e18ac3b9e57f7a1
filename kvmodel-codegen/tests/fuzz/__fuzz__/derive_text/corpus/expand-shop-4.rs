#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "line:{order_id}:{n}", colocate = order_id)]
#[kv(relation(name = "order", belongs_to = Order, by = order_id, order_by = n))]
pub struct OrderLine {
    pub order_id: String,
    pub n: u32,
    pub sku: String,
    pub qty: u32,
}
