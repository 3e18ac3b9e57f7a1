//! Redis Cluster: requests and sequential steps per operation, co-located
//! or not, and create throughput against `RedisStore` on one server.
//!
//! Run: `cargo bench -p kvmodel-runtime --features redis-cluster,conformance --bench cluster`
//!
//! A three-master test cluster and one `redis-server` are started on this
//! machine. The batches are the ones a repository writes for an entity with
//! 2 unique claims, 1 ordered index, 2 counters and the discovery set: once
//! with every key of the instance in its own slot (nothing co-located), once
//! with the record, its claims, its index entry and its counters under one
//! hash tag (what `colocate` gives), where only the discovery shard and the
//! entity-wide counter lie elsewhere. Throughput: 50 concurrent tasks over
//! one store handle.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kvmodel_runtime::__private::key::{shard_key, sort_key};
use kvmodel_runtime::conformance::{RedisCluster, RedisServer};
use kvmodel_runtime::{Batch, RangeRequest, RedisClusterStore, RedisStore, Store};

const CONCURRENCY: usize = 50;
const CREATES: u64 = 20_000;

/// The keys of instance `id`; with `tag`, under the hash tag `{id}`.
fn keys(id: &str, tag: bool) -> (String, String, String, String, String) {
    let t = |s: String| {
        if tag {
            format!("{s}:{{{id}}}")
        } else {
            format!("{s}:{id}")
        }
    };
    (
        if tag {
            format!("shop:user:{{{id}}}")
        } else {
            format!("shop:user:{id}")
        },
        t("shop:user#uniq:by_email".into()),
        t("shop:user#uniq:by_handle".into()),
        t("shop:user#idx:by_status:active".into()),
        t("shop:user#count:by_status".into()),
    )
}

/// The entity-wide counter a create of `id` adds to: one key, or (with
/// `shards`) one of 16 shards picked by the instance, as `shards: 16` does.
fn total(id: &str, shards: bool) -> String {
    let shard = if shards {
        u32::from(
            id.bytes()
                .fold(0u8, |h, b| h.wrapping_mul(31).wrapping_add(b)),
        ) % 16
    } else {
        0
    };
    shard_key("shop:user#count:total", shard)
}

fn create(id: &str, tag: bool) -> Batch {
    create_with(id, tag, false)
}

fn create_with(id: &str, tag: bool, shards: bool) -> Batch {
    let (record, email, handle, index, group) = keys(id, tag);
    let owner = record.clone().into_bytes();
    let mut b = Batch::new();
    b.absent(&record)
        .absent_or_equals(&email, owner.clone())
        .absent_or_equals(&handle, owner.clone())
        .put(&record, br#"{"v":1,"d":{"name":"Ada"}}"#.to_vec(), None)
        .put(&email, owner.clone(), None)
        .put(&handle, owner.clone(), None)
        .add(&index, sort_key(&1_763_790_984_000i64), owner.clone())
        .incr(total(id, shards), 1)
        .incr(&group, 1)
        .add("shop:user#all", Vec::new(), owner);
    b
}

/// An update that changes the record and one claim.
fn update(id: &str, tag: bool) -> Batch {
    let (record, email, _, index, _) = keys(id, tag);
    let owner = record.clone().into_bytes();
    let new_email = format!("{email}-2");
    let mut b = Batch::new();
    b.equals(&record, br#"{"v":1,"d":{"name":"Ada"}}"#.to_vec())
        .absent_or_equals(&new_email, owner.clone())
        .put(&record, br#"{"v":1,"d":{"name":"Bea"}}"#.to_vec(), None)
        .put(&new_email, owner.clone(), None)
        .delete(&email)
        .add(&index, sort_key(&1_763_790_984_000i64), owner.clone())
        .add("shop:user#all", Vec::new(), owner);
    b
}

fn delete(id: &str, tag: bool) -> Batch {
    let (record, _, handle, index, group) = keys(id, tag);
    let owner = record.clone().into_bytes();
    let new_email = format!("{}-2", keys(id, tag).1);
    let mut b = Batch::new();
    b.equals(&record, br#"{"v":1,"d":{"name":"Bea"}}"#.to_vec())
        .delete(&record)
        .delete(&new_email)
        .delete(&handle)
        .remove(&index, sort_key(&1_763_790_984_000i64), owner.clone())
        .incr("shop:user#count:total", -1)
        .incr(&group, -1)
        .remove("shop:user#all", Vec::new(), owner);
    b
}

/// Requests one call made, and its time.
async fn measure<F: std::future::Future>(store: &RedisClusterStore, f: F) -> (u64, Duration) {
    let before = store.round_trips();
    let started = Instant::now();
    f.await;
    (store.round_trips() - before, started.elapsed())
}

/// A key prefix of its own for each round and store.
fn round_prefix(round: &str, store: &str) -> &'static str {
    Box::leak(format!("{round}{store}").into_boxed_str())
}

async fn throughput<S: Store>(store: S, tag: bool, shards: bool, prefix: &'static str) -> f64 {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (store, next) = (store.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= CREATES {
                    break;
                }
                let b = create_with(&format!("{prefix}{i}"), tag, shards);
                assert!(store.commit(b).await.unwrap().is_applied());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    CREATES as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let cluster = RedisCluster::start();
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = cluster.store(Duration::from_secs(5)).await;
        // Load the scripts on every node first.
        for (i, tag) in [(0, false), (1, true)] {
            let id = format!("warm{i}");
            assert!(store.commit(create(&id, tag)).await.unwrap().is_applied());
            assert!(store.commit(update(&id, tag)).await.unwrap().is_applied());
            assert!(store.commit(delete(&id, tag)).await.unwrap().is_applied());
        }
        println!("| operation | not co-located: requests | co-located: requests |");
        println!("|---|---|---|");
        let mut rows: Vec<(&str, u64, u64)> = Vec::new();
        let mut per = |name: &'static str, a: u64, b: u64| rows.push((name, a, b));
        let (a, _) = measure(&store, store.commit(create("m1", false))).await;
        let (b, _) = measure(&store, store.commit(create("m2", true))).await;
        per("create", a, b);
        let (a, _) = measure(&store, store.commit(update("m1", false))).await;
        let (b, _) = measure(&store, store.commit(update("m2", true))).await;
        per("update (record and one claim)", a, b);
        let (a, _) = measure(&store, store.get(&keys("m1", false).0)).await;
        let (b, _) = measure(&store, store.get(&keys("m2", true).0)).await;
        per("get", a, b);
        let many: Vec<String> = (0..10).map(|i| format!("shop:user:x{i}")).collect();
        let (a, _) = measure(&store, store.get_many(&many)).await;
        per("get_many of 10 (one MGET, split per slot)", a, a);
        let (a, _) = measure(
            &store,
            store.range(&keys("m1", false).3, RangeRequest::all(10)),
        )
        .await;
        let (b, _) = measure(
            &store,
            store.range(&keys("m2", true).3, RangeRequest::all(10)),
        )
        .await;
        per("page of an index", a, b);
        let (a, _) = measure(&store, store.range("shop:user#all", RangeRequest::all(10))).await;
        per("page of list_all (16 discovery shards)", a, a);
        let (a, _) = measure(&store, store.commit(delete("m1", false))).await;
        let (b, _) = measure(&store, store.commit(delete("m2", true))).await;
        per("delete", a, b);
        for (name, a, b) in rows {
            println!("| {name} | {a} | {b} |");
        }

        let single = RedisStore::connect(&server.url()).await.unwrap();
        assert!(single.commit(create("warm", false)).await.unwrap().is_applied());
        // Two rounds, interleaved, so that a change in the machine's load
        // shows as a difference between rounds rather than between stores.
        let mut rounds = Vec::new();
        for round in ["a", "b"] {
            let one = throughput(single.clone(), false, false, round_prefix(round, "s")).await;
            let spread = throughput(store.clone(), false, false, round_prefix(round, "c")).await;
            let colocated = throughput(store.clone(), true, false, round_prefix(round, "t")).await;
            let sharded = throughput(store.clone(), true, true, round_prefix(round, "h")).await;
            rounds.push((one, spread, colocated, sharded));
        }
        println!();
        println!(
            "| create throughput, {CONCURRENCY} tasks, {CREATES} creates | round 1, creates/s | round 2, creates/s |"
        );
        println!("|---|---|---|");
        let (a, b) = (rounds[0], rounds[1]);
        println!("| RedisStore, one server | {:.0} | {:.0} |", a.0, b.0);
        println!(
            "| RedisClusterStore, 3 masters, nothing co-located | {:.0} | {:.0} |",
            a.1, b.1
        );
        println!(
            "| RedisClusterStore, 3 masters, co-located | {:.0} | {:.0} |",
            a.2, b.2
        );
        println!(
            "| RedisClusterStore, 3 masters, co-located, entity-wide counter in 16 shards | {:.0} | {:.0} |",
            a.3, b.3
        );
    });
}
