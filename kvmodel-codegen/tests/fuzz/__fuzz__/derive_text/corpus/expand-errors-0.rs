#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "app", key = "note:{idd}")]
pub struct Note {
    pub id: u64,
}
