//! A cascade beside a writer that moves records out of the tree being
//! deleted: a record the cascade listed as a child, moved to another parent
//! before the cascade reaches it, is no longer in the tree and stays, with
//! the records under it; the rest of the tree goes, and `verify` is clean.

use std::time::{Duration, Instant};

use kvmodel::conformance::Harness;
use kvmodel::{KvEntity, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "mv", key = "node:{id}")]
#[kv(relation(name = parent, belongs_to = Node, by = parent, on_delete = "cascade"))]
#[kv(counter(name = total))]
#[kv(dependent(entity = Node, relation = parent))]
pub struct Node {
    pub id: String,
    pub parent: Option<String>,
}

fn node(id: &str, parent: Option<&str>) -> Node {
    Node {
        id: id.into(),
        parent: parent.map(Into::into),
    }
}

/// How deep the chain the cascade deletes first is: deep enough that the
/// move lands while the cascade works on it.
fn depth(store: &impl Store) -> usize {
    match store.backend() {
        "memory" => 3_000,
        "redb" => 150,
        _ => 300,
    }
}

/// `p` has two children: `a`, over a deep chain, and `z`, over `z1`. The
/// cascade from `p` lists both, then works down `a`'s chain; meanwhile `z`
/// moves to `q`. Once the cascade ends, `p`, `a` and the chain are gone,
/// and `z` (under `q`) and `z1` (under `z`) are there.
pub async fn a_record_moved_out_of_a_cascade_stays<H: Harness>(h: &H) {
    let store = h.store();
    let nodes = NodeRepo::new(store.clone());
    let depth = depth(&store);
    for (id, parent) in [("p", None), ("q", None), ("a", Some("p"))] {
        nodes.create(&node(id, parent)).await.unwrap();
    }
    let mut parent = "a".to_owned();
    for i in 0..depth {
        let id = format!("a{i}");
        nodes.create(&node(&id, Some(&parent))).await.unwrap();
        parent = id;
    }
    nodes.create(&node("z", Some("p"))).await.unwrap();
    nodes.create(&node("z1", Some("z"))).await.unwrap();
    let deepest = parent;

    let deleting = nodes.clone();
    let cascade = tokio::spawn(async move { deleting.delete("p").await });
    // The cascade has listed `p`'s children once the deepest record of
    // `a`'s chain is gone.
    let deadline = Instant::now() + Duration::from_secs(20);
    while nodes.get(&deepest).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the cascade never started");
        tokio::task::yield_now().await;
    }
    nodes
        .update(&node("z", Some("q")))
        .await
        .expect("z moves while the cascade is still in a's chain");
    let moved_at = nodes.count_total().await.unwrap();
    assert!(cascade.await.unwrap().unwrap(), "p was deleted");
    assert!(
        moved_at > 5,
        "the move came after the cascade had finished a's chain ({moved_at} left): not a race"
    );

    assert_eq!(
        nodes.get("z").await.unwrap(),
        Some(node("z", Some("q"))),
        "z moved out of the tree before the cascade reached it, and was deleted"
    );
    assert_eq!(
        nodes.get("z1").await.unwrap(),
        Some(node("z1", Some("z"))),
        "z1 is under z, which is no longer in the tree"
    );
    for gone in ["p", "a", "a0", &deepest] {
        assert!(nodes.get(gone).await.unwrap().is_none(), "{gone} is left");
    }
    assert_eq!(nodes.count_total().await.unwrap(), 3, "q, z and z1");
    let drift = nodes.verify(500).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

macro_rules! on {
    ($($module:ident: $harness:expr;)*) => {$(
        mod $module {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn a_record_moved_out_of_a_cascade_stays() {
                let harness = $harness;
                super::a_record_moved_out_of_a_cascade_stays(&harness).await;
            }
        }
    )*};
}

on! {
    memory: kvmodel::conformance::MemoryHarness::new();
    redb: kvmodel::conformance::RedbHarness::new();
    redis: kvmodel::conformance::RedisHarness::start().await;
}
