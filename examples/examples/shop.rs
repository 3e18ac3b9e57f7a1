//! The shop example on the embedded default store.

use kvmodel::{Batch, RedbStore, Store};

#[tokio::main(flavor = "current_thread")]
async fn main() -> kvmodel::Result<()> {
    let dir = std::env::temp_dir().join(format!("kvmodel-shop-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| kvmodel::Error::backend("redb", "create a temp dir", e))?;
    let store = RedbStore::open(dir.join("shop.redb"))?;
    let mut batch = Batch::new();
    batch
        .absent("shop:user:1")
        .put("shop:user:1", br#"{"v":1,"d":{"id":"1"}}"#.to_vec(), None);
    let outcome = store.commit(batch).await?;
    println!("create user 1: {outcome:?}");
    println!(
        "user 1: {}",
        String::from_utf8_lossy(&store.get("shop:user:1").await?.unwrap_or_default())
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
