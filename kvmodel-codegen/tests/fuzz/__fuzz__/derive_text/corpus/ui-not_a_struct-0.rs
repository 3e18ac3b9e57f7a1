#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
pub enum User {
    A,
}
