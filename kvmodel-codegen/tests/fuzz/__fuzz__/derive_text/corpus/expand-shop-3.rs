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
