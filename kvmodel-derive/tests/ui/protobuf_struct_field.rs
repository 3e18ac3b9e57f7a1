use kvmodel::KvEntity;

#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Place {
    pub lat: f64,
    pub lon: f64,
}

// A protobuf record holds no struct (and these tests build kvmodel without
// its `protobuf` feature, which is reported too).
#[derive(Clone, serde::Serialize, serde::Deserialize, KvEntity)]
#[kv(namespace = "t", key = "reading:{id}", encoding = "protobuf")]
pub struct Reading {
    pub id: String,
    pub place: Place,
}

fn main() {}
