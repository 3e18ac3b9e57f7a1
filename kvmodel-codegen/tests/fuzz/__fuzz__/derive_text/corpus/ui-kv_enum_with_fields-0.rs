#[derive(Clone, Serialize, Deserialize, kvmodel::KvEnum)]
pub enum Status {
    Active,
    Banned { reason: String },
}
