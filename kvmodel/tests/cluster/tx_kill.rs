//! Transactions on a Redis Cluster under a killed process: 16 buyers in a
//! child process each read a product, decrement its stock and create an
//! order in one transaction, whose keys cross slots (the cross-slot
//! protocol); the child is killed with SIGKILL at no particular step.
//! After recovery every transaction is all or nothing: each product's
//! stock plus its orders is what it started with, every acknowledged order
//! is there, counters and listings agree, and `verify` finds no drift.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kvmodel::conformance::RedisCluster;
use kvmodel::{Error, KvEntity, PageRequest, RedisClusterStore, Store};
use serde::{Deserialize, Serialize};

use super::LEASE;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "ck", key = "product:{id}")]
#[kv(counter(name = "stock_total", sum = stock))]
struct Product {
    id: String,
    stock: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "ck", key = "order:{id}")]
#[kv(index(name = "by_product", fields(product_id)))]
#[kv(counter(name = "per_product", group_by(product_id)))]
#[kv(counter(name = "total"))]
struct Order {
    id: String,
    product_id: String,
}

const PRODUCTS: [&str; 3] = ["p0", "p1", "p2"];
const STOCK: i64 = 60;
const BUYERS: usize = 16;
/// Set in the child process: `PREFIX|ROUND|SEED,SEED,…`.
const CHILD: &str = "KVMODEL_TEST_TX_KILL";

async fn connect(seeds: &[String], prefix: &str) -> RedisClusterStore {
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    RedisClusterStore::builder(&seeds)
        .key_prefix(prefix)
        .lease(LEASE)
        .connect()
        .await
        .expect("connect to the test cluster")
}

/// One order of `product` as one transaction; `Ok(false)` when sold out.
async fn buy(store: &RedisClusterStore, product: &str, order: &str) -> kvmodel::Result<bool> {
    let (products, orders) = (
        ProductRepo::new(store.clone()),
        OrderRepo::new(store.clone()),
    );
    kvmodel::transaction(store, |tx| {
        let (products, orders) = (products.clone(), orders.clone());
        async move {
            let Some(p) = products
                .in_tx(&tx)
                .get(&ProductKeys::record(product))
                .await?
            else {
                return Ok(false);
            };
            if p.stock == 0 {
                return Ok(false);
            }
            let stock = p.stock - 1;
            products.in_tx(&tx).update(&Product { stock, ..p }).await?;
            orders
                .in_tx(&tx)
                .create(&Order {
                    id: order.to_owned(),
                    product_id: product.to_owned(),
                })
                .await?;
            Ok(true)
        }
    })
    .await
}

/// The child: buyers until every product is sold out (or the process is
/// killed), printing `ack ORDER` after each acknowledged transaction.
async fn buy_until_killed(spec: &str) {
    let mut parts = spec.splitn(3, '|');
    let (prefix, round, seeds) = (
        parts.next().unwrap().to_owned(),
        parts.next().unwrap().to_owned(),
        parts.next().unwrap(),
    );
    let seeds: Vec<String> = seeds.split(',').map(str::to_owned).collect();
    let store = connect(&seeds, &prefix).await;
    let buyers: Vec<_> = (0..BUYERS)
        .map(|w| {
            let (store, round) = (store.clone(), round.clone());
            tokio::spawn(async move {
                let mut sold_out = [false; PRODUCTS.len()];
                for i in 0.. {
                    if sold_out.iter().all(|s| *s) {
                        break;
                    }
                    let which = (w + i) % PRODUCTS.len();
                    let order = format!("r{round}-b{w}-{i}");
                    match buy(&store, PRODUCTS[which], &order).await {
                        Ok(true) => {
                            let mut out = std::io::stdout().lock();
                            let _ = writeln!(out, "ack {order}");
                            let _ = out.flush();
                        }
                        Ok(false) => sold_out[which] = true,
                        Err(Error::Conflict { .. }) => {}
                        Err(e) => panic!("buyer {w}: {e}"),
                    }
                }
            })
        })
        .collect();
    for b in buyers {
        let _ = b.await;
    }
}

/// Starts the child for `round`, waits for `acks` acknowledged orders,
/// kills it a little later and returns every order it acknowledged.
fn run_child(seeds: &[String], prefix: &str, round: u32, acks: usize) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tx_kill::a_killed_buyer_process_leaves_every_transaction_whole",
            "--nocapture",
        ])
        .env(CHILD, format!("{prefix}|{round}|{}", seeds.join(",")))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the buyer process");
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if let Some(order) = line.strip_prefix("ack ") {
                if tx.send(order.to_owned()).is_err() {
                    break;
                }
            }
        }
    });
    let mut acked = Vec::new();
    while acked.len() < acks {
        match lines.recv_timeout(Duration::from_secs(60)) {
            Ok(order) => acked.push(order),
            // The child ended on its own: everything is sold.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the buyers make no progress"),
        }
    }
    // SIGKILL at no particular step of the buyers' transactions.
    std::thread::sleep(Duration::from_millis(fastrand::u64(0..40)));
    let _ = child.kill();
    let _ = child.wait();
    acked.extend(lines.iter());
    acked
}

/// Stock plus orders per product is what it started with, every
/// acknowledged order is stored, and listings, counters and `verify`
/// agree with the records.
async fn check(store: &RedisClusterStore, acked: &[String]) {
    let products = ProductRepo::new(store.clone());
    let orders = OrderRepo::new(store.clone());
    let all = orders
        .list_all(PageRequest::new(1_000))
        .await
        .unwrap()
        .items;
    let stored: BTreeMap<&str, &str> = all
        .iter()
        .map(|o| (o.id.as_str(), o.product_id.as_str()))
        .collect();
    for order in acked {
        assert!(
            stored.contains_key(order.as_str()),
            "order {order} was acknowledged, then lost"
        );
    }
    let mut stock_total = 0;
    for id in PRODUCTS {
        let p = products.get(id).await.unwrap().expect("the product");
        let sold = stored.values().filter(|p| **p == id).count() as i64;
        assert_eq!(
            p.stock + sold,
            STOCK,
            "{id}: stock {} and {sold} orders",
            p.stock
        );
        assert!(p.stock >= 0, "{id} oversold");
        assert_eq!(orders.count_per_product(id).await.unwrap(), sold, "{id}");
        let listed = orders
            .list_by_product(id, PageRequest::new(1_000))
            .await
            .unwrap()
            .items;
        assert_eq!(listed.len() as i64, sold, "{id}: listing against records");
        stock_total += p.stock;
    }
    assert_eq!(products.sum_stock_total().await.unwrap(), stock_total);
    assert_eq!(orders.count_total().await.unwrap(), all.len() as i64);
    let drift = products.verify(100).await.unwrap();
    assert!(drift.is_clean(), "products: {drift:?}");
    let drift = orders.verify(100).await.unwrap();
    assert!(drift.is_clean(), "orders: {drift:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_buyer_process_leaves_every_transaction_whole() {
    if let Ok(spec) = std::env::var(CHILD) {
        buy_until_killed(&spec).await;
        return;
    }
    let seeds = RedisCluster::shared().seeds();
    let prefix = format!("txkill{}/", std::process::id());
    let store = connect(&seeds, &prefix).await;
    let products = ProductRepo::new(store.clone());
    for id in PRODUCTS {
        products
            .create(&Product {
                id: id.to_owned(),
                stock: STOCK,
            })
            .await
            .unwrap();
    }
    let (mut acked, mut repaired) = (Vec::new(), 0);
    for round in 0..3 {
        acked.extend(run_child(&seeds, &prefix, round, 10));
        // Writes the kill left half done are past their lease: finish or
        // undo them, as `reconcile` does.
        store.outlive_leases();
        let done = store.recover_now().await.unwrap();
        assert_eq!(done.live, 0, "nothing of the killed process is live");
        repaired += done.finished + done.undone;
        let stuck = store.unfinished_writes().await.unwrap();
        assert!(
            stuck.is_empty(),
            "left after recovery ({done:?}): {stuck:?}"
        );
        check(&store, &acked).await;
    }
    eprintln!(
        "{} orders acknowledged over 3 kills; {repaired} writes finished or undone by recovery",
        acked.len()
    );
}
