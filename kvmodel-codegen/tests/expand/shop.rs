// A ten-entity shop: every construct of the attribute syntax.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
pub enum UserStatus {
    Active,
    Inactive,
    Suspended,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 2)]
#[kv(index(name = "by_status", fields(status), order_by = created_at, since = 2))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "by_status", group_by(status), since = 2))]
#[kv(migration(from = 1, rename(full_name = name), add(status = "active"), remove(legacy_flag)))]
pub struct User {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub email: String,
    pub name: String,
    pub status: UserStatus,
    pub age: Option<u32>,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "product:{sku}")]
#[kv(index(name = "by_category", fields(category), order_by = price_cents))]
pub struct Product {
    pub sku: String,
    pub category: String,
    pub price_cents: i64,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "order:{id}", encoding = "msgpack")]
#[kv(relation(name = "user", belongs_to = User, by = user_id, order_by = created_at))]
#[kv(counter(name = "per_user", group_by(user_id)))]
#[kv(counter(name = "revenue_by_day", sum = total_cents, group_by(day(created_at))))]
pub struct Order {
    pub id: String,
    pub user_id: String,
    pub total_cents: i64,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "line:{order_id}:{n}", colocate = order_id)]
#[kv(relation(name = "order", belongs_to = Order, by = order_id, order_by = n))]
pub struct OrderLine {
    pub order_id: String,
    pub n: u32,
    pub sku: String,
    pub qty: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "session:{id}", ttl = "30m", ttl_jitter = "10%")]
pub struct Session {
    pub id: String,
    #[kv(unique)]
    pub token: String,
    pub user_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "cart:{user_id}", ttl = "7d")]
pub struct Cart {
    pub user_id: String,
    pub skus: Vec<String>,
}

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "coupon:{code}")]
#[kv(counter(name = "redeemed_per_hour", group_by(hour(valid_from))))]
pub struct Coupon {
    pub code: String,
    pub percent: u32,
    pub valid_from: Timestamp,
    pub meta: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(version = 1)]
pub struct AddressV1 {
    pub user_id: String,
    pub line: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "address:{user_id}", version = 2, migrate_from = AddressV1)]
pub struct Address {
    pub user_id: String,
    pub street: String,
    pub city: String,
}

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
