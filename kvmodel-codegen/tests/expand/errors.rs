// An entity with errors expands to the errors plus a stub.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "app", key = "note:{idd}")]
pub struct Note {
    pub id: u64,
}
