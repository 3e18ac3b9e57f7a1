//! A read-through cache kept right by the change feed: reads fill the
//! cache, and a task following the feed removes each record a commit
//! changes, whoever wrote it (this process, another one, `kvmodel
//! reconcile`...). Runs on the embedded store, in a temporary file.
//!
//! ```sh
//! cargo run -p kvmodel-examples --example feed_cache
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kvmodel::feed::Position;
use kvmodel::{KvEntity, RedbStore};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "catalog", key = "product:{sku}", feed(retain = "1d"))]
pub struct Product {
    pub sku: String,
    pub name: String,
    pub price_cents: u64,
}

/// Products by SKU, as last read from the store.
#[derive(Default)]
struct Cache {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    products: HashMap<String, Product>,
    /// How often each SKU was invalidated: a read that started before an
    /// invalidation does not fill the cache with what it read (it may be
    /// the value the invalidation removed).
    generations: HashMap<String, u64>,
    misses: u32,
}

impl Cache {
    /// The product from the cache, or read from the store and kept.
    async fn get(
        &self,
        repo: &ProductRepo<RedbStore>,
        sku: &str,
    ) -> kvmodel::Result<Option<Product>> {
        let generation = {
            let mut state = self.state.lock().unwrap();
            if let Some(p) = state.products.get(sku) {
                return Ok(Some(p.clone()));
            }
            state.misses += 1;
            state.generations.get(sku).copied().unwrap_or(0)
        };
        let product = repo.get(sku).await?;
        let mut state = self.state.lock().unwrap();
        let unchanged = state.generations.get(sku).copied().unwrap_or(0) == generation;
        if let (Some(p), true) = (&product, unchanged) {
            state.products.insert(sku.to_owned(), p.clone());
        }
        Ok(product)
    }

    fn forget(&self, sku: &str) {
        let mut state = self.state.lock().unwrap();
        state.products.remove(sku);
        *state.generations.entry(sku.to_owned()).or_default() += 1;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let products = ProductRepo::new(RedbStore::open(dir.path().join("catalog.redb"))?);
    let cache = Arc::new(Cache::default());

    // The invalidator: every change of a product, in commit order, from the
    // oldest the feed retains on. A real service saves `change.position`
    // and resumes with `Position::After(saved)` after a restart.
    let (done, mut invalidated) = mpsc::unbounded_channel();
    let mut changes = products.feed().from(Position::Start);
    let follower = Arc::clone(&cache);
    tokio::spawn(async move {
        while let Some(change) = changes.next().await {
            let change = match change {
                Ok(change) => change,
                Err(e) => {
                    eprintln!("the feed reader stopped: {e}");
                    return;
                }
            };
            // The record as the change left it (before a delete or an
            // expiry): its product is the one to forget.
            let sku = change.event.record().sku.clone();
            follower.forget(&sku);
            let _ = done.send((sku, change.position));
        }
    });

    let lamp = Product {
        sku: "lamp".into(),
        name: "Desk lamp".into(),
        price_cents: 3_900,
    };
    products.create(&lamp).await?;
    invalidated.recv().await;

    let first = cache.get(&products, "lamp").await?;
    let again = cache.get(&products, "lamp").await?;
    assert_eq!(first, again);
    println!(
        "read twice, one store read: {:?}",
        first.map(|p| p.price_cents)
    );

    products.modify("lamp", |p| p.price_cents = 3_500).await?;
    let (sku, position) = invalidated.recv().await.expect("the invalidator runs");
    println!("the feed removed `{sku}` from the cache (event at {position})");
    let now = cache.get(&products, "lamp").await?.expect("the lamp");
    assert_eq!(
        now.price_cents, 3_500,
        "the cache never serves the old price"
    );
    println!("after the price change the cache reads {}", now.price_cents);

    products.delete("lamp").await?;
    invalidated.recv().await;
    assert_eq!(cache.get(&products, "lamp").await?, None);
    println!(
        "deleted: the cache has nothing; {} store reads in all",
        cache.state.lock().unwrap().misses
    );
    Ok(())
}
