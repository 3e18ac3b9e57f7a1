use kvmodel::KvEntity;

// These tests build kvmodel without its `protobuf` feature.
#[derive(Clone, serde::Serialize, serde::Deserialize, KvEntity)]
#[kv(namespace = "t", key = "reading:{id}", encoding = "protobuf")]
pub struct Reading {
    pub id: String,
    pub value: f64,
}

fn main() {}
