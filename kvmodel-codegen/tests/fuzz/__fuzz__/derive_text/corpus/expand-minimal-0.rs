#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "app", key = "note:{id}")]
pub struct Note {
    pub id: u64,
    pub text: String,
}
