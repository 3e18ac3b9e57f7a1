//! The server's CPU per commit of a create-shaped batch (record absent, a
//! unique claim, an index member, the discovery member, two counters and
//! their change stamps), run as `EVALSHA` of the commit script, against a
//! script that returns at once with the same arguments (what `EVALSHA` with
//! these keys and arguments costs before any work) and, optionally, other
//! scripts that take the same arguments.
//!
//! Run: `cargo bench -p kvmodel-runtime --features redis,conformance --bench
//! redis_commit_cost` (`KV_BENCH_LUA_FILES`: comma-separated Lua files, each
//! a whole script taking the commit script's `KEYS` and `ARGV`, measured
//! beside it).
//!
//! The variants are interleaved: each of 40 rounds runs 250 commits of each
//! in turn, and the server's CPU (`used_cpu_user + used_cpu_sys` of `INFO
//! cpu`) is summed per variant.

use kvmodel_runtime::__private::key::sort_key;
use kvmodel_runtime::conformance::RedisServer;
use kvmodel_runtime::{Batch, RedisStore};
use redis::aio::MultiplexedConnection;

const ROUNDS: usize = 40;
const PER_ROUND: usize = 250;

fn create_batch(id: u64) -> Batch {
    let key = format!("bench:account:{id}");
    let email = format!("bench:account#uniq:by_email:user{id}@example.com");
    let owner = key.clone().into_bytes();
    let record = format!(
        r#"{{"v":1,"d":{{"id":{id},"email":"User{id}@Example.com","name":"Ada Lovelace","plan":"pro","credits":12345}}}}"#
    );
    let mut b = Batch::new();
    b.absent(&key)
        .absent_or_equals(&email, owner.clone())
        .put(&key, record.into_bytes(), None)
        .put(&email, owner.clone(), None)
        .add(
            "bench:account#idx:by_plan:pro",
            sort_key(&12345u64),
            owner.clone(),
        )
        .add("bench:account#all", Vec::new(), owner)
        .incr("bench:account#count:total", 1)
        .incr("bench:account#count:by_plan:pro", 1)
        .incr("~{bench:account#count:total}", 1)
        .incr("~{bench:account#count:by_plan:pro}", 1);
    b
}

async fn cpu(con: &mut MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(con)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            matches!(k, "used_cpu_user" | "used_cpu_sys").then(|| v.parse::<f64>().unwrap())
        })
        .sum()
}

fn main() {
    let mut variants: Vec<(String, String)> = vec![
        ("no-op script".to_owned(), "return {1}".to_owned()),
        (
            "commit script".to_owned(),
            RedisStore::COMMIT_SCRIPT.to_owned(),
        ),
    ];
    if let Ok(files) = std::env::var("KV_BENCH_LUA_FILES") {
        for file in files.split(',').filter(|d| !d.is_empty()) {
            variants.push((file.to_owned(), std::fs::read_to_string(file).unwrap()));
        }
    }
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut con = redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let mut shas = Vec::new();
        for (_, text) in &variants {
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(text)
                .query_async(&mut con)
                .await
                .unwrap();
            shas.push(sha);
        }
        let mut total = vec![0.0; variants.len()];
        let mut next = 0u64;
        for r in 0..ROUNDS {
            for k in 0..variants.len() {
                let i = (r + k) % variants.len();
                let calls: Vec<_> = (0..PER_ROUND)
                    .map(|_| {
                        next += 1;
                        RedisStore::script_invocation(&create_batch(next)).unwrap()
                    })
                    .collect();
                let before = cpu(&mut con).await;
                for (_, keys, argv) in calls {
                    let v: redis::Value = redis::cmd("EVALSHA")
                        .arg(&shas[i])
                        .arg(keys.len())
                        .arg(keys)
                        .arg(argv)
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    assert_eq!(v, redis::Value::Array(vec![redis::Value::Int(1)]));
                }
                total[i] += cpu(&mut con).await - before;
            }
        }
        println!("| script | server CPU per commit |");
        println!("|---|---|");
        for ((name, _), t) in variants.iter().zip(total) {
            let us = t * 1e6 / (ROUNDS * PER_ROUND) as f64;
            println!("| {name} | {us:.1} µs |");
        }
    });
}
