//! `kvmodel tail`: the changes a program committed, as JSON lines, from the
//! start or after a printed position.

use std::process::Command;

use kvmodel::{KvEntity, RedbStore};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "order:{id}", feed(retain = "7d"))]
pub struct Order {
    pub id: String,
    pub status: String,
}

const SCHEMA: &str = r#"
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

fn tail(schema: &str, url: &str, from: &str, count: &str) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_kvmodel"))
        .args(["tail", "--schema", schema, "--store", url, "Order"])
        .args(["--from", from, "--count", count])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_prints_each_change_as_a_json_line() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("shop.yaml");
    std::fs::write(&schema, SCHEMA).unwrap();
    let path = dir.path().join("shop.redb");
    {
        let orders = OrderRepo::new(RedbStore::open(&path).unwrap());
        let mut o = Order {
            id: "o1".into(),
            status: "new".into(),
        };
        orders.create(&o).await.unwrap();
        o.status = "paid".into();
        orders.update(&o).await.unwrap();
        assert!(orders.delete("o1").await.unwrap());
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_prints_an_expiry_with_the_record_before() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("shop.yaml");
    std::fs::write(&schema, LEASE_SCHEMA).unwrap();
    let path = dir.path().join("shop.redb");
    {
        let leases = LeaseRepo::new(RedbStore::open(&path).unwrap());
        let l = Lease {
            id: "l1".into(),
            holder: "ann".into(),
        };
        leases.create(&l).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        assert_eq!(leases.get("l1").await.unwrap(), None);
        assert_eq!(leases.sweep_expired(10).await.unwrap().expired, 1);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kvmodel"))
        .args(["tail", "--schema", &schema.display().to_string()])
        .args(["--store", &format!("redb:{}", path.display()), "Lease"])
        .args(["--from", "start", "--count", "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["created", "expired"]);
    assert_eq!(lines[1]["before"]["holder"], "ann");
    assert!(lines[1]["after"].is_null());
    assert_eq!(lines[1]["key"], "shop:lease:l1");
}

/// On Redis Cluster: the feed is one stream in its slot, read from the
/// node that serves it, whichever seed the URL names first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_reads_a_cluster() {
    use kvmodel_runtime::RedisClusterStore;
    use kvmodel_runtime::conformance::RedisCluster;
    let cluster = tokio::task::spawn_blocking(RedisCluster::start)
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
