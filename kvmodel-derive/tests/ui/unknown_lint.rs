use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "order:{id}", allow(W0002))]
#[kv(index(name = by_paid, fields(paid), allow(W002, w001)))]
pub struct Order {
    pub id: String,
    pub paid: bool,
}
fn main() {}
