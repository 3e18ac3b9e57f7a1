#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "product:{sku}")]
#[kv(index(name = "by_category", fields(category), order_by = price_cents))]
pub struct Product {
    pub sku: String,
    pub category: String,
    pub price_cents: i64,
    pub title: String,
}
