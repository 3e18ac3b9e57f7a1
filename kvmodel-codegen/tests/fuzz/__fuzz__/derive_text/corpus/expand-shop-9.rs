#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(version = 1)]
pub struct AddressV1 {
    pub user_id: String,
    pub line: String,
}
