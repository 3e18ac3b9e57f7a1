use serde::{Deserialize, Serialize};

// The listing is ordered by an `i64`: a bound must be an `i64`, and a
// listing without `order_by` takes none.
#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "item:{id}")]
#[kv(index(name = "by_group", fields(group), order_by = rank))]
#[kv(index(name = "by_kind", fields(kind)))]
pub struct Item {
    pub id: String,
    pub group: String,
    pub kind: String,
    pub rank: i64,
}

async fn uses(store: kvmodel::MemoryStore) -> kvmodel::Result<()> {
    let items = ItemRepo::new(store);
    let _ok = items.list_by_group("g", kvmodel::PageRequest::new(10).start_at(3)).await?;
    let _text = items.list_by_group("g", kvmodel::PageRequest::new(10).start_at("3")).await?;
    let _none = items.list_by_kind("k", kvmodel::PageRequest::new(10).end_at(3)).await?;
    Ok(())
}

fn main() {
    let _ = uses;
}
