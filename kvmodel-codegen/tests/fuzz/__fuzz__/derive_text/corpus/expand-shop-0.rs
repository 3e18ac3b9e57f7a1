#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
pub enum UserStatus {
    Active,
    Inactive,
    Suspended,
}
