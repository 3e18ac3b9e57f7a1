//! `on_delete` on a relation of an entity to itself (a tree): a cascade of
//! any depth or width deletes every record without recursing (a worklist,
//! proven on a thread with a small stack), a cycle of records ends, and a
//! record may not name itself as its parent, while one stored before that
//! rule (written here by hand) still deletes.

use std::future::Future;

use kvmodel::__private::{Entity, Facts};
use kvmodel::conformance::{FaultyStore, Harness};
use kvmodel::{Error, KvEntity, PageRequest, Store};
use kvmodel_runtime::store::batch::Batch;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tree", key = "node:{id}")]
#[kv(relation(name = parent, belongs_to = Node, by = parent, on_delete = "cascade"))]
#[kv(counter(name = total))]
#[kv(dependent(entity = Node, relation = parent))]
pub struct Node {
    pub id: String,
    pub parent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tree", key = "group:{id}")]
#[kv(relation(name = parent, belongs_to = Group, by = parent, on_delete = "restrict"))]
#[kv(dependent(entity = Group, relation = parent))]
pub struct Group {
    pub id: String,
    pub parent: Option<String>,
}

fn node(id: &str, parent: Option<&str>) -> Node {
    Node {
        id: id.into(),
        parent: parent.map(Into::into),
    }
}

/// How deep a chain (and how wide a fan-out) each backend deletes. Every
/// record goes in a commit of its own. With `KVMODEL_LONG_TESTS` (as
/// `.ci/run` runs): 20,000 on memory; 500 on redb, whose every commit is a
/// durable write transaction (5–7 ms each here), and on Redis and Redis
/// Cluster, where every step is a round trip; 300 on the DynamoDB emulator.
/// Without it: 4,000 on memory and 100 elsewhere. Each depth is beyond what
/// a recursion per level survives on the test's 256 KiB stack (about 25
/// levels: 200 overflowed a 2 MiB one). `KVMODEL_TREE_SCALE` multiplies
/// them for a longer run still (`KVMODEL_LONG_TESTS=1
/// KVMODEL_TREE_SCALE=5`: 100,000 on memory, 2,500 on redb and Redis).
fn scale(store: &impl Store) -> usize {
    let times = match std::env::var("KVMODEL_TREE_SCALE") {
        Ok(v) => v
            .parse::<usize>()
            .unwrap_or_else(|_| panic!("KVMODEL_TREE_SCALE must be a number, not {v:?}")),
        Err(_) => 1,
    };
    let long = kvmodel::conformance::long_run();
    times
        * match (store.backend(), long) {
            ("memory", true) => 20_000,
            ("memory", false) => 4_000,
            // Every request goes through HTTP to the emulator.
            ("dynamodb", true) => 300,
            (_, true) => 500,
            (_, false) => 100,
        }
}

/// Runs `f` on a thread of its own whose stack is 256 KiB: a delete that
/// recursed once per level would overflow it long before the bottom of a
/// deep chain (a 200-deep chain overflowed the 2 MiB of a test thread).
async fn on_a_small_stack<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> T {
    let thread = std::thread::Builder::new()
        .name("small-stack".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
                .block_on(f)
        })
        .expect("spawn a thread");
    tokio::task::spawn_blocking(move || thread.join().expect("the delete ran to its end"))
        .await
        .expect("join")
}

/// Nothing of the namespace is left but counters at 0 of what was counted
/// (`total`): no record, collection or count of children (a deleted
/// parent's count goes with it).
async fn nothing_left<S: Store>(store: &S) {
    let left = store.scan("tree:", None, 10).await.unwrap();
    for key in &left.keys {
        assert!(key.ends_with("#count:total"), "left: {:?}", left.keys);
        assert_eq!(store.counter(key).await.unwrap(), 0, "{key}");
    }
}

/// `verify` finds nothing to repair.
async fn clean(nodes: &NodeRepo<impl Store>) {
    let drift = nodes.verify(500).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

pub async fn a_deep_chain_deletes_without_recursion<H: Harness>(h: &H) {
    let store = h.store();
    let nodes = NodeRepo::new(store.clone());
    let depth = scale(&store);
    nodes.create(&node("n0", None)).await.unwrap();
    for i in 1..depth {
        let parent = format!("n{}", i - 1);
        nodes
            .create(&node(&format!("n{i}"), Some(&parent)))
            .await
            .unwrap();
    }
    assert_eq!(nodes.count_total().await.unwrap(), depth as i64);
    let started = std::time::Instant::now();
    let deleting = nodes.clone();
    let deleted = on_a_small_stack(async move { deleting.delete("n0").await }).await;
    assert!(deleted.unwrap());
    eprintln!(
        "{}: a chain {depth} deep deleted in {:?}",
        store.backend(),
        started.elapsed()
    );
    assert_eq!(nodes.count_total().await.unwrap(), 0);
    assert_eq!(nodes.count_all().await.unwrap(), 0);
    clean(&nodes).await;
    nothing_left(&store).await;
}

pub async fn a_wide_fan_out_deletes<H: Harness>(h: &H) {
    let store = h.store();
    let nodes = NodeRepo::new(store.clone());
    let width = scale(&store);
    nodes.create(&node("root", None)).await.unwrap();
    nodes.create(&node("other", None)).await.unwrap();
    let mut start = 0;
    // DynamoDB takes at most 100 items in one transaction.
    let per_commit = if store.backend() == "dynamodb" {
        20
    } else {
        1_000
    };
    while start < width {
        let end = (start + per_commit).min(width);
        let batch: Vec<Node> = (start..end)
            .map(|i| node(&format!("c{i}"), Some("root")))
            .collect();
        nodes.create_many(&batch).await.unwrap();
        start = end;
    }
    nodes.create(&node("kept", Some("other"))).await.unwrap();
    let started = std::time::Instant::now();
    let deleting = nodes.clone();
    let deleted = on_a_small_stack(async move { deleting.delete("root").await }).await;
    assert!(deleted.unwrap());
    eprintln!(
        "{}: {width} children deleted in {:?}",
        store.backend(),
        started.elapsed()
    );
    // Another tree is untouched.
    assert_eq!(nodes.count_total().await.unwrap(), 2);
    assert_eq!(nodes.count_all().await.unwrap(), 2);
    assert!(nodes.get("kept").await.unwrap().is_some());
    clean(&nodes).await;
    assert!(nodes.delete("other").await.unwrap());
    nothing_left(&store).await;
}

pub async fn cycles_delete_every_record_of_them<H: Harness>(h: &H) {
    let store = h.store();
    let nodes = NodeRepo::new(store.clone());
    // A cycle of two: x's parent is y and y's is x.
    nodes.create(&node("x", None)).await.unwrap();
    nodes.create(&node("y", Some("x"))).await.unwrap();
    nodes.update(&node("x", Some("y"))).await.unwrap();
    clean(&nodes).await;
    assert!(nodes.delete("x").await.unwrap());
    assert!(nodes.get("x").await.unwrap().is_none());
    assert!(nodes.get("y").await.unwrap().is_none());
    assert_eq!(nodes.count_total().await.unwrap(), 0);
    clean(&nodes).await;
    nothing_left(&store).await;

    // A longer cycle a → b → c → d → a, with branches hanging off it, and
    // the delete starting in the middle.
    nodes.create(&node("a", None)).await.unwrap();
    for (id, parent) in [("b", "a"), ("c", "b"), ("d", "c")] {
        nodes.create(&node(id, Some(parent))).await.unwrap();
    }
    for (i, parent) in ["a", "b", "c", "d", "d"].into_iter().enumerate() {
        nodes
            .create(&node(&format!("leaf{i}"), Some(parent)))
            .await
            .unwrap();
    }
    nodes.create(&node("deeper", Some("leaf4"))).await.unwrap();
    nodes.update(&node("a", Some("d"))).await.unwrap();
    nodes.create(&node("apart", None)).await.unwrap();
    clean(&nodes).await;
    assert!(nodes.delete("c").await.unwrap());
    let left = nodes
        .get_many(&["a", "b", "c", "d", "leaf0", "deeper", "apart"])
        .await
        .unwrap();
    let left: Vec<&str> = left.iter().flatten().map(|n| n.id.as_str()).collect();
    assert_eq!(left, ["apart"]);
    assert_eq!(nodes.count_total().await.unwrap(), 1);
    assert_eq!(nodes.count_all().await.unwrap(), 1);
    clean(&nodes).await;
    assert!(nodes.delete("apart").await.unwrap());
    nothing_left(&store).await;
}

pub async fn a_record_cannot_become_its_own_parent<H: Harness>(h: &H) {
    let store = h.store();
    let nodes = NodeRepo::new(store.clone());
    let groups = GroupRepo::new(store.clone());
    let own = |e: &Error| {
        matches!(
            e,
            Error::OwnParent {
                relation: "parent",
                ..
            }
        )
    };
    let err = nodes.create(&node("a", Some("a"))).await.unwrap_err();
    assert!(own(&err), "{err}");
    let text = err.to_string();
    assert!(text.contains("names itself"), "{text}");
    assert!(text.contains("Nothing was written"), "{text}");
    assert!(nodes.get("a").await.unwrap().is_none());
    nodes.create(&node("a", None)).await.unwrap();
    nodes.create(&node("b", Some("a"))).await.unwrap();
    for err in [
        nodes.update(&node("a", Some("a"))).await.unwrap_err(),
        nodes
            .modify("b", |n| n.parent = Some("b".into()))
            .await
            .unwrap_err(),
        nodes.upsert(&node("b", Some("b"))).await.unwrap_err(),
        nodes.upsert(&node("n", Some("n"))).await.unwrap_err(),
    ] {
        assert!(own(&err), "{err}");
    }
    match nodes
        .create_many(&[node("c", None), node("d", Some("d"))])
        .await
    {
        Err(Error::Bulk {
            index: 1, source, ..
        }) => assert!(own(&source), "{source}"),
        other => panic!("expected a refused bulk create, got {other:?}"),
    }
    groups
        .create(&Group {
            id: "g".into(),
            parent: None,
        })
        .await
        .unwrap();
    let err = groups
        .update(&Group {
            id: "g".into(),
            parent: Some("g".into()),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::OwnParent {
                on_delete: "restrict",
                ..
            }
        ),
        "{err}"
    );
    // Nothing was written.
    assert_eq!(nodes.get("a").await.unwrap(), Some(node("a", None)));
    assert_eq!(nodes.get("b").await.unwrap(), Some(node("b", Some("a"))));
    assert!(nodes.get("c").await.unwrap().is_none());
    assert!(nodes.get("n").await.unwrap().is_none());
    assert_eq!(nodes.count_total().await.unwrap(), 2);
    clean(&nodes).await;
    assert!(groups.verify(10).await.unwrap().is_clean());
}

/// Writes `value` over its stored record by hand, with the entries the
/// write adds (what code before the own-parent rule wrote for an update
/// that made a record its own parent).
async fn write_by_hand<E: Entity, S: Store>(store: &S, before: &E, value: &E) {
    let key = value.record_key();
    let (old, new) = (Facts::of(before), Facts::of(value));
    let mut b = Batch::new();
    let bytes = kvmodel_runtime::__private::entity::encode(&key, value).unwrap();
    b.present(key.as_str()).put(key.as_str(), bytes, None);
    for m in new
        .members
        .iter()
        .filter(|m| !old.has_member(&m.collection, &m.sort))
    {
        b.add(
            m.collection.as_str(),
            m.sort.clone(),
            key.as_bytes().to_vec(),
        );
    }
    for c in new.counters.iter().filter(|c| !old.counters.contains(c)) {
        b.incr(c.key.as_str(), i64::try_from(c.delta).unwrap());
    }
    assert!(store.commit(b).await.unwrap().is_applied());
}

pub async fn a_record_stored_as_its_own_parent_still_deletes<H: Harness>(h: &H) {
    let store = h.store();
    let nodes = NodeRepo::new(store.clone());
    let groups = GroupRepo::new(store.clone());
    // Cascade: a record that is its own parent, with a child of its own.
    nodes.create(&node("s", None)).await.unwrap();
    nodes.create(&node("t", Some("s"))).await.unwrap();
    write_by_hand(&store, &node("s", None), &node("s", Some("s"))).await;
    assert_eq!(nodes.get("s").await.unwrap(), Some(node("s", Some("s"))));
    clean(&nodes).await;
    assert!(nodes.delete("s").await.unwrap());
    assert!(nodes.get("s").await.unwrap().is_none());
    assert!(nodes.get("t").await.unwrap().is_none());
    assert_eq!(nodes.count_total().await.unwrap(), 0);
    clean(&nodes).await;

    // Restrict: the record is not its own child; a real child still
    // refuses the delete.
    let (g, k) = (
        Group {
            id: "g".into(),
            parent: None,
        },
        Group {
            id: "k".into(),
            parent: Some("g".into()),
        },
    );
    groups.create(&g).await.unwrap();
    groups.create(&k).await.unwrap();
    let own = Group {
        parent: Some("g".into()),
        ..g.clone()
    };
    write_by_hand(&store, &g, &own).await;
    assert!(groups.verify(10).await.unwrap().is_clean());
    let err = groups.delete("g").await.unwrap_err();
    match &err {
        Error::Restricted { key, .. } => assert!(key.ends_with(":g"), "{err}"),
        other => panic!("expected Restricted, got {other}"),
    }
    assert!(groups.delete("k").await.unwrap());
    assert!(groups.delete("g").await.unwrap());
    assert!(groups.get("g").await.unwrap().is_none());
    assert!(groups.verify(10).await.unwrap().is_clean());
    nothing_left(&store).await;
}

pub async fn a_cascade_cut_short_finishes_when_run_again<H: Harness>(h: &H) {
    let store = h.store();
    let nodes = NodeRepo::new(store.clone());
    // A chain of 300 (60 unless `KVMODEL_LONG_TESTS`); the process dies
    // after 40 % of the commits: the deepest records are gone, each with its
    // entries, and the rest is whole.
    let (depth, cut) = if kvmodel::conformance::long_run() {
        (300, 120)
    } else {
        (60, 24)
    };
    let kept = depth - cut;
    nodes.create(&node("n0", None)).await.unwrap();
    for i in 1..depth {
        let parent = format!("n{}", i - 1);
        nodes
            .create(&node(&format!("n{i}"), Some(&parent)))
            .await
            .unwrap();
    }
    let dying = FaultyStore::new(store.clone());
    dying.die_after(cut);
    let err = NodeRepo::new(dying).delete("n0").await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert_eq!(nodes.count_total().await.unwrap(), kept as i64);
    assert_eq!(nodes.count_all().await.unwrap(), kept as i64);
    let last = format!("n{}", kept - 1);
    assert!(nodes.get(&last).await.unwrap().is_some());
    assert!(nodes.get(&format!("n{kept}")).await.unwrap().is_none());
    let listed = nodes
        .list_by_parent(&last, PageRequest::new(10))
        .await
        .unwrap();
    assert!(listed.items.is_empty());
    clean(&nodes).await;
    assert!(nodes.delete("n0").await.unwrap());
    assert_eq!(nodes.count_total().await.unwrap(), 0);
    clean(&nodes).await;
    nothing_left(&store).await;

    // A cycle of two cut short after its first commit: y, which closes the
    // loop, is gone and x still names it; every count is true, and
    // deleting x finishes.
    nodes.create(&node("x", None)).await.unwrap();
    nodes.create(&node("y", Some("x"))).await.unwrap();
    nodes.update(&node("x", Some("y"))).await.unwrap();
    let dying = FaultyStore::new(store.clone());
    dying.die_after(1);
    let err = NodeRepo::new(dying).delete("x").await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(nodes.get("y").await.unwrap().is_none());
    assert_eq!(nodes.get("x").await.unwrap(), Some(node("x", Some("y"))));
    assert_eq!(nodes.count_total().await.unwrap(), 1);
    clean(&nodes).await;
    assert!(nodes.delete("x").await.unwrap());
    assert_eq!(nodes.count_total().await.unwrap(), 0);
    assert_eq!(nodes.count_all().await.unwrap(), 0);
    // y's count of children may be left at 0, which verify reads as no
    // count.
    clean(&nodes).await;
}
