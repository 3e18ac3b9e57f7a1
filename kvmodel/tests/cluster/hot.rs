//! One hot record on a Redis Cluster: 64 writers each add 25 clicks to the
//! same link. A click's record, the link's collection of clicks, its index
//! collection and its three 16-way sharded counters lie in different slots,
//! so every create takes the cross-slot commit and reads the link (which
//! must exist) and adds to the same counters as every other writer. Those
//! holds are shared: every write lands, none waits for the others' turn,
//! and the counters agree with the records. Edits of the link itself, which
//! need it alone, take their turn between the clicks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kvmodel::conformance::{ClusterHarness, Harness};
use kvmodel::{KvEntity, PageRequest};
use serde::{Deserialize, Serialize};

/// A short link: the hot record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "hot", key = "link:{id}")]
#[kv(dependent(entity = Click, relation = link))]
pub struct Link {
    pub id: String,
    pub url: String,
}

/// A click on a link, nothing co-located.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "hot", key = "click:{id}")]
#[kv(relation(name = link, belongs_to = Link, by = link_id, order_by = at, on_delete = "cascade"))]
#[kv(index(name = by_day, fields(link_id, day), order_by = at))]
#[kv(counter(name = per_link, group_by(link_id), shards = 16))]
#[kv(counter(name = per_link_day, group_by(link_id, day), shards = 16))]
#[kv(counter(name = ms_per_link, sum = ms, group_by(link_id), shards = 16))]
pub struct Click {
    pub id: String,
    pub link_id: String,
    pub day: String,
    pub at: i64,
    pub ms: i64,
}

const WRITERS: usize = 64;
const EACH: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_writers_on_one_hot_record_all_land() {
    let h = ClusterHarness::start().await;
    let store = h.store();
    let links = LinkRepo::new(store.clone());
    links
        .create(&Link {
            id: "hot".into(),
            url: "https://example.com".into(),
        })
        .await
        .unwrap();
    let started = Instant::now();
    let latencies = Arc::new(std::sync::Mutex::new(Vec::with_capacity(WRITERS * EACH)));
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let clicks = ClickRepo::new(store.clone());
        let latencies = Arc::clone(&latencies);
        tasks.push(tokio::spawn(async move {
            for i in 0..EACH {
                let click = Click {
                    id: format!("{w}-{i}"),
                    link_id: "hot".into(),
                    day: "2026-11-26".into(),
                    at: i64::try_from(w * EACH + i).unwrap(),
                    ms: 3,
                };
                let t = Instant::now();
                clicks.create(&click).await.unwrap();
                latencies.lock().unwrap().push(t.elapsed());
            }
        }));
    }
    // Beside them, the link itself is edited now and then: a write that
    // replaces the hot record must not starve behind the clicks that read it.
    let editor = {
        let links = links.clone();
        tokio::spawn(async move {
            let mut spent = Vec::new();
            for i in 0..10 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let t = Instant::now();
                links
                    .modify("hot", |l| l.url = format!("https://example.com/{i}"))
                    .await
                    .unwrap();
                spent.push(t.elapsed());
            }
            spent
        })
    };
    for t in tasks {
        t.await.unwrap();
    }
    let edits = editor.await.unwrap();
    eprintln!("10 edits of the hot link beside them: {edits:?}");
    let spent = started.elapsed();
    let mut latencies = latencies.lock().unwrap().clone();
    latencies.sort();
    let p99 = latencies[latencies.len() * 99 / 100];
    eprintln!(
        "{} creates on one hot link in {spent:?}: {:.0}/s, p50 {:?}, p99 {p99:?}, max {:?}",
        latencies.len(),
        latencies.len() as f64 / spent.as_secs_f64(),
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1],
    );
    // No write waited anywhere near the 21 s after which a write gives up
    // (four leases and a second).
    assert!(p99 < Duration::from_secs(10), "p99 {p99:?}");

    let clicks = ClickRepo::new(store.clone());
    let n = i64::try_from(WRITERS * EACH).unwrap();
    assert_eq!(clicks.count_per_link("hot").await.unwrap(), n);
    assert_eq!(
        clicks
            .count_per_link_day("hot", "2026-11-26")
            .await
            .unwrap(),
        n
    );
    assert_eq!(clicks.sum_ms_per_link("hot").await.unwrap(), 3 * n);
    let page = clicks
        .list_by_link("hot", PageRequest::new(2_000))
        .await
        .unwrap();
    assert_eq!(page.items.len(), WRITERS * EACH);
    assert!(clicks.verify(500).await.unwrap().is_clean());
    assert!(links.verify(500).await.unwrap().is_clean());
    assert!(
        kvmodel::Store::unfinished_writes(&store)
            .await
            .unwrap()
            .is_empty()
    );
}
