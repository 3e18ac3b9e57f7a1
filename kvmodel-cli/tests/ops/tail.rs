//! `kvmodel tail`: the changes a program committed, as JSON lines, from the
//! start or after a printed position.

use std::process::Command;

use kvmodel::{KvEntity, RedbStore, Store};
use kvmodel_runtime::__private::Entity;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "order:{id}", feed(retain = "7d"))]
pub struct Order {
    pub id: String,
    pub status: String,
}

pub const SCHEMA: &str = r#"
kvmodel: 1
namespace: shop
entities:
  Order:
    key: "order:{id}"
    feed: { retain: 7d }
    fields:
      id: string
      status: string
"#;

/// Runs `kvmodel ARGS`, which must succeed within 30 s (a `tail` still
/// waiting for changes that never come is stopped and fails), and returns
/// its standard output.
fn kvmodel(args: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kvmodel"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "`kvmodel {}` did not finish; it printed:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Creates the order `o1`, marks it paid, deletes it: three events.
pub async fn create_pay_delete<S: Store>(store: S) {
    let orders = OrderRepo::new(store);
    let mut o = Order {
        id: "o1".into(),
        status: "new".into(),
    };
    orders.create(&o).await.unwrap();
    o.status = "paid".into();
    orders.update(&o).await.unwrap();
    assert!(orders.delete("o1").await.unwrap());
}

/// `kvmodel tail` of `entity`: `count` changes from `from`, each a JSON line.
pub fn tail_of(
    schema: &str,
    url: &str,
    entity: &str,
    from: &str,
    count: &str,
) -> Vec<serde_json::Value> {
    kvmodel(&[
        "tail", "--schema", schema, "--store", url, entity, "--from", from, "--count", count,
    ])
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect()
}

fn tail(schema: &str, url: &str, from: &str, count: &str) -> Vec<serde_json::Value> {
    tail_of(schema, url, "Order", from, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_prints_each_change_as_a_json_line() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("shop.yaml");
    std::fs::write(&schema, SCHEMA).unwrap();
    let path = dir.path().join("shop.redb");
    create_pay_delete(RedbStore::open(&path).unwrap()).await;
    let (schema, url) = (
        schema.display().to_string(),
        format!("redb:{}", path.display()),
    );
    let lines = tail(&schema, &url, "start", "3");
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["created", "updated", "deleted"]);
    assert_eq!(lines[0]["after"]["status"], "new");
    assert_eq!(lines[1]["before"]["status"], "new");
    assert_eq!(lines[1]["after"]["status"], "paid");
    assert_eq!(lines[2]["before"]["status"], "paid");
    assert!(lines[2]["after"].is_null());
    assert_eq!(lines[0]["key"], "shop:order:o1");
    // Resumed after the first position: the two others.
    let first = lines[0]["position"].as_str().unwrap();
    let rest = tail(&schema, &url, first, "2");
    assert_eq!(rest, lines[1..]);
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(
    namespace = "shop",
    key = "lease:{id}",
    ttl = "300ms",
    feed(retain = "7d")
)]
pub struct Lease {
    pub id: String,
    pub holder: String,
}

const LEASE_SCHEMA: &str = r#"
kvmodel: 1
namespace: shop
entities:
  Lease:
    key: "lease:{id}"
    ttl: { after: 300ms }
    feed: { retain: 7d }
    fields:
      id: string
      holder: string
"#;

/// A lease that expired, in a fresh database file: the schema's path and
/// the store's URL.
async fn expired_lease(dir: &std::path::Path, sweep: bool) -> (String, String) {
    let schema = dir.join("shop.yaml");
    std::fs::write(&schema, LEASE_SCHEMA).unwrap();
    let path = dir.join("shop.redb");
    let leases = LeaseRepo::new(RedbStore::open(&path).unwrap());
    let l = Lease {
        id: "l1".into(),
        holder: "ann".into(),
    };
    leases.create(&l).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(leases.get("l1").await.unwrap(), None);
    if sweep {
        assert_eq!(leases.sweep_expired(10).await.unwrap().expired, 1);
    }
    (
        schema.display().to_string(),
        format!("redb:{}", path.display()),
    )
}

/// The lease's created and expired events, as `kvmodel tail` prints them.
fn created_then_expired(schema: &str, url: &str) {
    let lines = tail_of(schema, url, "Lease", "start", "2");
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["created", "expired"]);
    assert_eq!(lines[1]["before"]["holder"], "ann");
    assert!(lines[1]["after"].is_null());
    assert_eq!(lines[1]["key"], "shop:lease:l1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_prints_an_expiry_with_the_record_before() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, url) = expired_lease(dir.path(), true).await;
    created_then_expired(&schema, &url);
}

/// `kvmodel reconcile`, which reads the entity from the schema, knows its
/// feed: the sweep it runs appends the `Expired` event as the generated
/// code's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_from_the_schema_appends_the_expired_event() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, url) = expired_lease(dir.path(), false).await;
    kvmodel(&["reconcile", "--schema", &schema, "--store", &url, "-q"]);
    created_then_expired(&schema, &url);
    // Swept once: a second run finds nothing to sweep or append.
    kvmodel(&["reconcile", "--schema", &schema, "--store", &url, "-q"]);
    let expired = tail_of(&schema, &url, "Lease", "start", "2")[1]["position"].clone();
    let store = RedbStore::open(dir.path().join("shop.redb")).unwrap();
    let last = store.feed_last(&Lease::space().feed_key()).await.unwrap();
    assert_eq!(
        last.map(|p| p.to_string()),
        expired.as_str().map(str::to_owned)
    );
}

/// On Redis Cluster: the feed is one stream in its slot, read from the
/// node that serves it, whichever seed the URL names first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_reads_a_cluster() {
    use kvmodel_runtime::RedisClusterStore;
    use kvmodel_runtime::conformance::RedisCluster;
    let cluster = tokio::task::spawn_blocking(RedisCluster::lend)
        .await
        .unwrap();
    let seeds = cluster.seeds();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let store = RedisClusterStore::connect(&seeds).await.unwrap();
    let orders = OrderRepo::new(store);
    let id = "c1".to_owned();
    let mut o = Order {
        id: id.clone(),
        status: "new".into(),
    };
    orders.create(&o).await.unwrap();
    o.status = "paid".into();
    orders.update(&o).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("shop.yaml");
    std::fs::write(&schema, SCHEMA).unwrap();
    let nodes: Vec<&str> = seeds
        .iter()
        .rev()
        .map(|s| s.trim_start_matches("redis://"))
        .collect();
    let url = format!("redis+cluster://{}", nodes.join(","));
    let lines = tail(&schema.display().to_string(), &url, "start", "2");
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["created", "updated"]);
    assert_eq!(lines[0]["key"], format!("shop:order:{id}"));
    assert_eq!(lines[1]["after"]["status"], "paid");
}
