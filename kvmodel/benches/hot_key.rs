//! One hot record on a Redis Cluster: 64 tasks each create 25 clicks on
//! the same link, with the click's keys spread over the slots (every
//! create takes the cross-slot commit) and co-located with the link
//! (`colocate`, one script per create); then the spread schema again with
//! the link edited ten times meanwhile. Reports creates/s, p50 and p99, and
//! the spread-to-co-located ratios of one run.
//!
//! Run: `cargo bench -p kvmodel --bench hot_key`

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kvmodel::conformance::{ClusterHarness, Harness};
use kvmodel::{KvEntity, RedisClusterStore};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "hot", key = "link:{id}")]
#[kv(dependent(entity = Click, relation = link))]
struct Link {
    id: String,
    url: String,
}

/// Nothing co-located: record, collection, index and counters in
/// different slots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "hot", key = "click:{id}")]
#[kv(relation(name = link, belongs_to = Link, by = link_id, order_by = at, on_delete = "cascade"))]
#[kv(index(name = by_day, fields(link_id, day), order_by = at))]
#[kv(counter(name = per_link, group_by(link_id), shards = 16))]
#[kv(counter(name = per_link_day, group_by(link_id, day), shards = 16))]
#[kv(counter(name = ms_per_link, sum = ms, group_by(link_id), shards = 16))]
struct Click {
    id: String,
    link_id: String,
    day: String,
    at: i64,
    ms: i64,
}

/// The link and its clicks in the slot of `{link id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "hotc", key = "link:{id}", colocate = id)]
#[kv(dependent(entity = NearClick, relation = link))]
struct NearLink {
    id: String,
    url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "hotc", key = "link:{link_id}:click:{id}", colocate = link_id)]
#[kv(relation(name = link, belongs_to = NearLink, by = link_id, order_by = at, on_delete = "cascade"))]
#[kv(index(name = by_day, fields(link_id, day), order_by = at))]
#[kv(counter(name = per_link, group_by(link_id), shards = 16))]
#[kv(counter(name = per_link_day, group_by(link_id, day), shards = 16))]
#[kv(counter(name = ms_per_link, sum = ms, group_by(link_id), shards = 16))]
struct NearClick {
    id: String,
    link_id: String,
    day: String,
    at: i64,
    ms: i64,
}

const WRITERS: usize = 64;
const EACH: usize = 25;

struct Run {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
    edits: Option<Duration>,
}

fn click(link: &str, w: usize, i: usize) -> (String, i64) {
    (
        format!("{link}-{w}-{i}"),
        i64::try_from(w * EACH + i).unwrap(),
    )
}

async fn run(store: RedisClusterStore, near: bool, edit: bool, link: &str) -> Run {
    if near {
        let links = NearLinkRepo::new(store.clone());
        links
            .create(&NearLink {
                id: link.into(),
                url: "u".into(),
            })
            .await
            .unwrap();
    } else {
        let links = LinkRepo::new(store.clone());
        links
            .create(&Link {
                id: link.into(),
                url: "u".into(),
            })
            .await
            .unwrap();
    }
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(WRITERS * EACH)));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (store, latencies, link) = (store.clone(), Arc::clone(&latencies), link.to_owned());
        tasks.push(tokio::spawn(async move {
            let (far, near_repo) = (ClickRepo::new(store.clone()), NearClickRepo::new(store));
            for i in 0..EACH {
                let (id, at) = click(&link, w, i);
                let t = Instant::now();
                if near {
                    near_repo
                        .create(&NearClick {
                            id,
                            link_id: link.clone(),
                            day: "d".into(),
                            at,
                            ms: 3,
                        })
                        .await
                        .unwrap();
                } else {
                    far.create(&Click {
                        id,
                        link_id: link.clone(),
                        day: "d".into(),
                        at,
                        ms: 3,
                    })
                    .await
                    .unwrap();
                }
                latencies.lock().unwrap().push(t.elapsed());
            }
        }));
    }
    let editor = edit.then(|| {
        let (links, link) = (LinkRepo::new(store.clone()), link.to_owned());
        tokio::spawn(async move {
            let mut spent = Duration::ZERO;
            for i in 0..10 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let t = Instant::now();
                links
                    .modify(&link, |l| l.url = format!("u{i}"))
                    .await
                    .unwrap();
                spent += t.elapsed();
            }
            spent / 10
        })
    });
    for t in tasks {
        t.await.unwrap();
    }
    let edits = match editor {
        Some(e) => Some(e.await.unwrap()),
        None => None,
    };
    let spent = start.elapsed();
    let mut l = latencies.lock().unwrap().clone();
    l.sort();
    Run {
        per_sec: l.len() as f64 / spent.as_secs_f64(),
        p50: l[l.len() / 2],
        p99: l[l.len() * 99 / 100],
        edits,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let h = ClusterHarness::start().await;
        let spread = run(h.store(), false, false, "a").await;
        let near = run(h.store(), true, false, "b").await;
        let edited = run(h.store(), false, true, "c").await;
        println!(
            "{WRITERS} tasks x {EACH} creates of clicks on one link, Redis Cluster of 3 masters"
        );
        for (name, r) in [
            ("spread over slots", &spread),
            ("co-located (colocate)", &near),
            ("spread, link edited 10x", &edited),
        ] {
            println!(
                "{name:<26} {:>7.0} creates/s  p50 {:>9.1?}  p99 {:>9.1?}{}",
                r.per_sec,
                r.p50,
                r.p99,
                r.edits
                    .map(|e| format!("  mean edit {e:.1?}"))
                    .unwrap_or_default()
            );
        }
        println!(
            "spread / co-located: throughput {:.2}x, p99 {:.2}x",
            spread.per_sec / near.per_sec,
            spread.p99.as_secs_f64() / near.p99.as_secs_f64()
        );
    });
}
