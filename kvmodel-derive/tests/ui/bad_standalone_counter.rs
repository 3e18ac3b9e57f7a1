#[derive(kvmodel::KvCounter)]
#[kv(namespace = "site", key = "views:{page}:{dya}", ttl = "2 days", shards = 0, shard = 3)]
pub struct PageViews {
    pub page: String,
    pub day: String,
}

#[derive(kvmodel::KvCounter)]
#[kv(key = "scores:{score}")]
pub struct Scores {
    #[kv(unique)]
    pub score: Option<String>,
}

async fn use_it(store: kvmodel::MemoryStore) {
    // The handle still exists beside the errors: no cascade.
    let _ = PageViews::counter(store).incr("home", "d1", 1).await;
}

fn main() {
    let _ = use_it;
}
