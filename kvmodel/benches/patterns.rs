//! The modelling patterns' costs: a hot counter of one key against the
//! same counter spread over 16 shards (`shards: 16`), written by 16
//! concurrent tasks creating records of one group, and read back.
//!
//! Run: `cargo bench -p kvmodel --bench patterns`

use std::time::{Duration, Instant};

use kvmodel::conformance::{Harness, MemoryHarness, RedbHarness, RedisHarness};
use kvmodel::{KvEntity, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bench", key = "plain:{post_id}:{user_id}")]
#[kv(counter(name = per_post, group_by(post_id)))]
struct PlainLike {
    post_id: String,
    user_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bench", key = "sharded:{post_id}:{user_id}")]
#[kv(counter(name = per_post, group_by(post_id), shards = 16))]
struct ShardedLike {
    post_id: String,
    user_id: String,
}

const TASKS: usize = 16;
const READS: u32 = 2000;

/// Creates/s of 16 tasks × `per_task` creates on one group, and the mean
/// time of one counter read.
async fn run<S: Store>(store: S, per_task: usize, sharded: bool) -> (f64, Duration) {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let (plain, shard) = (
                PlainLikeRepo::new(store.clone()),
                ShardedLikeRepo::new(store),
            );
            for i in 0..per_task {
                let user_id = format!("u{t}-{i}");
                if sharded {
                    shard
                        .create(&ShardedLike {
                            post_id: "hot".into(),
                            user_id,
                        })
                        .await
                        .unwrap();
                } else {
                    plain
                        .create(&PlainLike {
                            post_id: "hot".into(),
                            user_id,
                        })
                        .await
                        .unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let creates = (TASKS * per_task) as f64 / start.elapsed().as_secs_f64();
    let (plain, shard) = (
        PlainLikeRepo::new(store.clone()),
        ShardedLikeRepo::new(store),
    );
    let start = Instant::now();
    for _ in 0..READS {
        let n = if sharded {
            shard.count_per_post("hot").await.unwrap()
        } else {
            plain.count_per_post("hot").await.unwrap()
        };
        assert_eq!(n, (TASKS * per_task) as i64);
    }
    (creates, start.elapsed() / READS)
}

async fn compare<H: Harness>(name: &str, h: H, per_task: usize) {
    for sharded in [false, true] {
        let (creates, read) = run(h.store(), per_task, sharded).await;
        println!(
            "| {name} | {} | {:.0} creates/s | {:.1} µs |",
            if sharded { "16 shards" } else { "one key" },
            creates,
            read.as_secs_f64() * 1e6
        );
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!("| store | counter | 16 tasks × creates on one group | one read |");
        println!("|---|---|---|---|");
        compare("memory", MemoryHarness::new(), 2000).await;
        compare("redb", RedbHarness::new(), 40).await;
        compare("redis", RedisHarness::start().await, 300).await;
    });
}
