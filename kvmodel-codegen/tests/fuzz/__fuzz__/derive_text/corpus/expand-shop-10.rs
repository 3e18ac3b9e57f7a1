#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "address:{user_id}", version = 2, migrate_from = AddressV1)]
pub struct Address {
    pub user_id: String,
    pub street: String,
    pub city: String,
}
