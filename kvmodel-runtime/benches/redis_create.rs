//! Create throughput through `RedisStore` against `redis-benchmark` running
//! the same commit script on the same server and machine.
//!
//! Run: `cargo bench -p kvmodel-runtime --features redis,conformance --bench redis_create`
//!
//! Both sides send `EVALSHA` of the create-shaped batch (record absent,
//! 2 unique claims, 1 ordered member, 2 counters, discovery member) with
//! 50 concurrent requests in flight: RedisStore as 50 tasks over its one
//! multiplexed connection, redis-benchmark as 50 connections. redis-benchmark
//! cannot pass NUL bytes on its command line, so its copy of the arguments has
//! every 0x00 replaced by 0x01 (same lengths, same script work); its keys use
//! `__rand_int__` so every request creates new records.

use std::os::unix::ffi::OsStringExt as _;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use kvmodel_runtime::__private::key::sort_key;
use kvmodel_runtime::conformance::RedisServer;
use kvmodel_runtime::{Batch, RedisStore, Store};

const CONCURRENCY: usize = 50;
const REQUESTS: u64 = 100_000;

fn create_batch(id: &str) -> Batch {
    let key = format!("shop:user:{id}");
    let owner = key.clone().into_bytes();
    let record = format!(
        r#"{{"v":1,"d":{{"id":"{id}","email":"{id}@example.com","name":"Ada","status":"active"}}}}"#
    );
    let mut b = Batch::new();
    b.absent(&key)
        .absent_or_equals(
            format!("shop:user#uniq:by_email:{id}@example.com"),
            owner.clone(),
        )
        .absent_or_equals(format!("shop:user#uniq:by_handle:{id}"), owner.clone())
        .put(&key, record.into_bytes(), None)
        .put(
            format!("shop:user#uniq:by_email:{id}@example.com"),
            owner.clone(),
            None,
        )
        .put(
            format!("shop:user#uniq:by_handle:{id}"),
            owner.clone(),
            None,
        )
        .add(
            "shop:user#idx:by_status:active",
            sort_key(&1_763_790_984_000i64),
            owner.clone(),
        )
        .incr("shop:user#count:total", 1)
        .incr("shop:user#count:by_status:active", 1)
        .add("shop:user#all", Vec::new(), owner);
    b
}

fn main() {
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // RedisStore.
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    assert!(
        rt.block_on(store.commit(create_batch("warmup")))
            .unwrap()
            .is_applied()
    );
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..CONCURRENCY {
            let (store, next) = (store.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= REQUESTS {
                        break;
                    }
                    let out = store.commit(create_batch(&format!("s{i}"))).await.unwrap();
                    assert!(out.is_applied());
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    let store_rps = REQUESTS as f64 / started.elapsed().as_secs_f64();

    // redis-benchmark, same script.
    let (sha, keys, argv) = RedisStore::script_invocation(&create_batch("b__rand_int__")).unwrap();
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-c", &CONCURRENCY.to_string(), "-n", &REQUESTS.to_string()])
        .args([
            "-r",
            "1000000000",
            "--csv",
            "EVALSHA",
            &sha,
            &keys.len().to_string(),
        ])
        .args(&keys);
    for a in &argv {
        let bytes: Vec<u8> = a.iter().map(|&b| if b == 0 { 1 } else { b }).collect();
        cmd.arg(std::ffi::OsString::from_vec(bytes));
    }
    let out = cmd
        .output()
        .expect("run redis-benchmark (install redis-tools)");
    let csv = String::from_utf8_lossy(&out.stdout);
    let raw_rps: f64 = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.rsplit(",").nth(6))
        .filter_map(|v| v.trim_matches('"').parse().ok())
        .next()
        .unwrap_or_else(|| {
            panic!(
                "unexpected redis-benchmark output: {csv} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });

    println!("create via RedisStore:      {store_rps:>10.0} commits/s");
    println!("create via redis-benchmark: {raw_rps:>10.0} commits/s");
    println!("ratio RedisStore / raw:     {:>10.3}", store_rps / raw_rps);
}
