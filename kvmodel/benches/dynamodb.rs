//! `DynamoStore` on the in-process emulator: the DynamoDB requests each
//! access pattern of a generated repository sends (counted by operation,
//! from the client), and create throughput, serial and with 32 concurrent
//! writers, against code written directly on the SDK: one
//! `TransactWriteItems` that puts the record and claims its unique email,
//! each conditioned on being absent (the least a create with a unique
//! value needs).
//!
//! Run: `cargo bench -p kvmodel --bench dynamodb`
//!
//! The emulator runs in this process on SQLite: absolute numbers say
//! nothing of DynamoDB's latency; the requests and the ratio to the
//! hand-written code are the point.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use kvmodel::conformance::{DynamoEmulator, DynamoRequests};
use kvmodel::{DynamoStore, KvEntity, PageRequest};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bench", key = "user:{id}")]
#[kv(index(name = "by_team", fields(team), order_by = score))]
#[kv(counter(name = "per_team", group_by(team)))]
struct User {
    id: String,
    #[kv(unique)]
    email: String,
    team: String,
    score: i64,
}

fn user(i: usize) -> User {
    User {
        id: format!("u{i}"),
        email: format!("u{i}@example.com"),
        team: format!("t{}", i % 4),
        score: i as i64,
    }
}

/// The requests of one call, as `2 TransactWriteItems + 1 GetItem`.
fn spelled(counts: &BTreeMap<String, u64>) -> String {
    let total: u64 = counts.values().sum();
    let parts: Vec<String> = counts.iter().map(|(op, n)| format!("{n} {op}")).collect();
    format!("{total} ({})", parts.join(" + "))
}

async fn requests(emulator: &DynamoEmulator) {
    let counted = DynamoRequests::new();
    let store = DynamoStore::from_client(emulator.counted_client(&counted), "requests");
    store.ensure_table().await.unwrap();
    let users = UserRepo::new(store);
    for i in 0..40 {
        users.create(&user(i)).await.unwrap();
    }
    counted.take();
    let mut rows: Vec<(&str, String)> = Vec::new();
    macro_rules! row {
        ($name:expr, $call:expr) => {{
            $call.await.unwrap();
            rows.push(($name, spelled(&counted.take())));
        }};
    }
    row!("create", users.create(&user(100)));
    row!("get", users.get("u1"));
    row!(
        "get_many (10)",
        users.get_many(&["u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9", "u10"])
    );
    row!("find_by_email", users.find_by_email("u2@example.com"));
    row!(
        "list_by_team (page of 5)",
        users.list_by_team("t1", PageRequest::new(5))
    );
    row!("count_per_team", users.count_per_team("t1"));
    row!(
        "list_all (page of 20)",
        users.list_all(PageRequest::new(20))
    );
    row!("count_all", users.count_all());
    row!(
        "update (index order moves)",
        users.update(&User {
            score: 1000,
            ..user(3)
        })
    );
    row!("modify", users.modify("u4", |u| u.score += 1));
    row!("delete", users.delete("u5"));
    println!("| access pattern | DynamoDB requests |");
    println!("|---|---|");
    for (name, spelled) in rows {
        println!("| `{name}` | {spelled} |");
    }
}

/// Creates `n` records with `writers` concurrent tasks: creates per second,
/// and `TransactWriteItems` sent per create (above 1: creates refused by
/// another writer's and sent again).
async fn kvmodel_creates(
    emulator: &DynamoEmulator,
    table: &str,
    n: usize,
    writers: usize,
) -> (f64, f64) {
    emulator.store(table).await;
    let counted = DynamoRequests::new();
    let users = UserRepo::new(DynamoStore::from_client(
        emulator.counted_client(&counted),
        table,
    ));
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let users = users.clone();
            tokio::spawn(async move {
                for i in (w..n).step_by(writers) {
                    users.create(&user(i)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    let sent = counted.take();
    let transactions = sent.get("TransactWriteItems").copied().unwrap_or(0);
    (rate, transactions as f64 / n as f64)
}

/// The same creates written directly on the SDK: the record and its email
/// claim, each conditioned on being absent, in one `TransactWriteItems`.
async fn direct_creates(emulator: &DynamoEmulator, table: &str, n: usize, writers: usize) -> f64 {
    // The same table layout (string partition key, binary sort key).
    emulator.store(table).await;
    let client = Arc::new(emulator.client());
    let table: Arc<str> = table.into();
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (client, table) = (client.clone(), table.clone());
            tokio::spawn(async move {
                for i in (w..n).step_by(writers) {
                    let u = user(i);
                    let value = serde_json::to_vec(&u).unwrap();
                    let put = |pk: String, value: Vec<u8>| {
                        TransactWriteItem::builder()
                            .put(
                                Put::builder()
                                    .table_name(&*table)
                                    .item("pk", AttributeValue::S(pk))
                                    .item("sk", AttributeValue::B(vec![0].into()))
                                    .item("v", AttributeValue::B(value.into()))
                                    .condition_expression("attribute_not_exists(pk)")
                                    .build()
                                    .unwrap(),
                            )
                            .build()
                    };
                    client
                        .transact_write_items()
                        .transact_items(put(format!("bench:user:{}", u.id), value))
                        .transact_items(put(
                            format!("bench:user#email:{}", u.email),
                            u.id.into_bytes(),
                        ))
                        .send()
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let emulator = DynamoEmulator::start().await;
        requests(&emulator).await;
        let n: usize = std::env::var("KVMODEL_BENCH_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000);
        println!();
        println!(
            "| writers | kvmodel creates/s | direct on the SDK creates/s | ratio (time) | \
             TransactWriteItems per create |"
        );
        println!("|---|---|---|---|---|");
        for writers in [1, 32] {
            let direct = direct_creates(&emulator, &format!("direct{writers}"), n, writers).await;
            let (ours, per_create) =
                kvmodel_creates(&emulator, &format!("kvmodel{writers}"), n, writers).await;
            println!(
                "| {writers} | {ours:.0} | {direct:.0} | {:.2}× | {per_create:.2} |",
                direct / ours
            );
        }
    });
}
