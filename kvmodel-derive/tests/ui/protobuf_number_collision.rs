use kvmodel::KvEntity;

// `aajo` and `abca` hash to the same protobuf field number.
#[derive(Clone, serde::Serialize, serde::Deserialize, KvEntity)]
#[kv(namespace = "t", key = "reading:{id}", encoding = "protobuf")]
pub struct Reading {
    pub id: String,
    pub aajo: String,
    pub abca: String,
}

fn main() {}
