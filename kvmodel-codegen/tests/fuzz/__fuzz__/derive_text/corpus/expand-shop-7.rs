#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "review:{sku}:{id}")]
#[kv(relation(name = "product", belongs_to = Product, by = sku, order_by = at))]
#[kv(counter(name = "stars", sum = stars, group_by(sku)))]
pub struct Review {
    pub sku: String,
    pub id: Uuid,
    pub stars: u32,
    pub at: Timestamp,
}
