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
