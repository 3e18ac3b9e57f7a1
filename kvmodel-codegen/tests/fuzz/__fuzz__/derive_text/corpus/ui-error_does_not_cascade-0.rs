#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{tenant}:{id}")]
#[kv(index(name = "by_plan", fields(plna)))]
#[kv(counter(name = "per_plan", group_by(plan)))]
pub struct User {
    pub tenant: String,
    pub id: String,
    #[kv(unique)]
    pub email: String,
    pub plan: String,
}
