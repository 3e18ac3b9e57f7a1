#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "coupon:{code}")]
#[kv(counter(name = "redeemed_per_hour", group_by(hour(valid_from))))]
pub struct Coupon {
    pub code: String,
    pub percent: u32,
    pub valid_from: Timestamp,
    pub meta: BTreeMap<String, String>,
}
