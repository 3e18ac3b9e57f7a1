use kvmodel::KvEntity;

#[derive(Clone, serde::Serialize, serde::Deserialize, KvEntity)]
#[kv(namespace = "t", key = "reading:{id}", encoding = "protobuf")]
pub struct Reading {
    pub id: String,
    pub maybe: Option<Vec<String>>,
    pub grid: Vec<Vec<f64>>,
}

fn main() {}
