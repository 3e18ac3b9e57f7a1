#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{idd}", ttl = "soon")]
#[kv(counter(name = "total"), counter(name = "total"))]
#[kv(index(name = "by_nme", fields(nme)))]
pub struct User {
    pub id: String,
    pub name: String,
}
