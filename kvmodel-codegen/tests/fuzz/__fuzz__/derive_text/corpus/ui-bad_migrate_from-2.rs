#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "account:{id}", version = 2, migrate_from = 1)]
pub struct Account {
    pub id: String,
}
