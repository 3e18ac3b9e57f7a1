//! The cost of a change feed on create throughput: the same entity with
//! and without `feed`, created by concurrent tasks on memory, redb, Redis
//! (a `redis-server` of its own) and Redis Cluster (three masters of its
//! own). Each store alternates the two entities three times and reports
//! the best run of each, and their ratio; on the cluster also the requests
//! per create.
//!
//! Run: `cargo bench -p kvmodel --bench feed` (`-- cluster` for only the
//! stores whose name contains `cluster`).

use std::pin::Pin;
use std::time::{Duration, Instant};

use kvmodel::conformance::{RedisCluster, RedisServer};
use kvmodel::{KvEntity, MemoryStore, RedbStore, RedisStore, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "plain", key = "acct:{id}")]
#[kv(index(name = by_group, fields(group), order_by = n))]
struct Plain {
    id: String,
    #[kv(unique)]
    email: String,
    group: String,
    n: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "fed", key = "acct:{id}", feed(retain = "1h"))]
#[kv(index(name = by_group, fields(group), order_by = n))]
struct Fed {
    id: String,
    #[kv(unique)]
    email: String,
    group: String,
    n: i64,
}

/// The lean pair: no claim, no index, so on a cluster a create without a
/// feed adds its discovery member and commits in 2 steps; with a feed it
/// appends to its stream after the commit point, in 4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "lean", key = "acct:{id}")]
struct Lean {
    id: String,
    email: String,
    n: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "leanfed", key = "acct:{id}", feed(retain = "1h"))]
struct LeanFed {
    id: String,
    email: String,
    n: i64,
}

/// A create of one record of an entity on a store.
type Create<S, T> = fn(S, T) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Creates `total` records with `tasks` concurrent tasks; creates per second.
async fn creates<S: Store, T: Send + 'static>(
    tasks: usize,
    total: usize,
    round: usize,
    make: fn(String, String, i64) -> T,
    create: Create<S, T>,
    store: &S,
) -> f64 {
    let each = total / tasks;
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..each {
                    let id = format!("r{round}-{t}-{i}");
                    let record = make(id.clone(), format!("{id}@x"), i as i64);
                    create(store.clone(), record).await;
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    (each * tasks) as f64 / started.elapsed().as_secs_f64()
}

fn plain(id: String, email: String, n: i64) -> Plain {
    Plain {
        id,
        email,
        group: format!("g{}", n % 8),
        n,
    }
}

fn fed(id: String, email: String, n: i64) -> Fed {
    Fed {
        id,
        email,
        group: format!("g{}", n % 8),
        n,
    }
}

fn lean(id: String, email: String, n: i64) -> Lean {
    Lean { id, email, n }
}

fn lean_fed(id: String, email: String, n: i64) -> LeanFed {
    LeanFed { id, email, n }
}

fn create_lean<S: Store>(s: S, r: Lean) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move { LeanRepo::new(s).create(&r).await.unwrap() })
}

fn create_lean_fed<S: Store>(s: S, r: LeanFed) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move { LeanFedRepo::new(s).create(&r).await.unwrap() })
}

fn create_plain<S: Store>(s: S, r: Plain) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move { PlainRepo::new(s).create(&r).await.unwrap() })
}

fn create_fed<S: Store>(s: S, r: Fed) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move { FedRepo::new(s).create(&r).await.unwrap() })
}

/// Alternates the two entities three times on `store`; prints the best
/// of each and the ratio.
async fn compare<S: Store>(name: &str, store: S, tasks: usize, total: usize) {
    let (mut without, mut with) = (0f64, 0f64);
    for round in 0..3 {
        without = without.max(creates(tasks, total, round, plain, create_plain, &store).await);
        with = with.max(creates(tasks, total, round, fed, create_fed, &store).await);
    }
    println!(
        "| {name} | {tasks} | {total} | {without:.0} | {with:.0} | {:.3}× |",
        with / without
    );
}

/// Whether the store `name` is measured: every one, or those whose name
/// contains the bench's first argument that is not a flag.
fn wanted(name: &str) -> bool {
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    name.to_lowercase().contains(&filter.to_lowercase())
}

/// Requests per create on the cluster of each entity: `n` creates, one
/// after another.
async fn cluster_requests(store: &kvmodel::RedisClusterStore, n: usize) {
    for name in ["claim+index", "claim+index, feed", "lean", "lean, feed"] {
        let before = store.round_trips();
        for i in 0..n {
            let (id, n) = (format!("q{i}"), i as i64);
            let email = format!("{id}@x");
            let s = store.clone();
            match name {
                "claim+index" => create_plain(s, plain(id, email, n)).await,
                "claim+index, feed" => create_fed(s, fed(id, email, n)).await,
                "lean" => create_lean(s, lean(id, email, n)).await,
                _ => create_lean_fed(s, lean_fed(id, email, n)).await,
            }
        }
        let per = (store.round_trips() - before) as f64 / n as f64;
        println!("Redis Cluster, requests per create, {name}: {per:.2}");
    }
}

/// [`compare`] for the lean pair.
async fn compare_lean<S: Store>(name: &str, store: S, tasks: usize, total: usize) {
    let (mut without, mut with) = (0f64, 0f64);
    for round in 0..3 {
        without = without.max(creates(tasks, total, round, lean, create_lean, &store).await);
        with = with.max(creates(tasks, total, round, lean_fed, create_lean_fed, &store).await);
    }
    println!(
        "| {name} (lean) | {tasks} | {total} | {without:.0} | {with:.0} | {:.3}× |",
        with / without
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!(
            "| store | tasks | creates per run | without feed (creates/s) | with feed | ratio |"
        );
        println!("|---|---|---|---|---|---|");
        if wanted("memory") {
            compare("memory", MemoryStore::new(), 16, 40_000).await;
        }
        if wanted("redb") {
            let dir = tempfile::tempdir().unwrap();
            let redb = RedbStore::open(dir.path().join("feed.redb")).unwrap();
            compare("redb", redb, 16, 4_000).await;
        }
        if wanted("Redis") {
            let server = RedisServer::start();
            let redis = RedisStore::connect(&server.url()).await.unwrap();
            compare("Redis", redis, 50, 20_000).await;
            drop(server);
        }
        if wanted("Redis Cluster") {
            let cluster = tokio::task::spawn_blocking(RedisCluster::start)
                .await
                .unwrap();
            let store = cluster.store(Duration::from_secs(5)).await;
            compare("Redis Cluster", store.clone(), 50, 6_000).await;
            compare_lean("Redis Cluster", store.clone(), 50, 6_000).await;
            cluster_requests(&store, 200).await;
            drop(cluster);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    });
}
