//! `keep: N` on an index or relation: each collection keeps its N greatest
//! entries in `order_by` order, trimmed in the commit that adds; the
//! records stay.

use kvmodel::conformance::Harness;
use kvmodel::{Batch, Error, KvEntity, PageRequest, RangeRequest, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "cap", key = "reading:{id}")]
#[kv(relation(name = sensor, belongs_to = Sensor, by = sensor_id, order_by = at, keep = 3))]
#[kv(index(name = by_site, fields(site), order_by = at, keep = 2))]
pub struct Reading {
    pub id: String,
    pub sensor_id: String,
    pub site: String,
    pub at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "cap", key = "sensor:{id}")]
pub struct Sensor {
    pub id: String,
}

fn reading(id: &str, site: &str, at: i64) -> Reading {
    Reading {
        id: id.into(),
        sensor_id: "s1".into(),
        site: site.into(),
        at,
    }
}

async fn listed<S: Store>(repo: &ReadingRepo<S>) -> Vec<i64> {
    let page = repo
        .list_by_sensor("s1", PageRequest::new(100))
        .await
        .unwrap();
    page.items.iter().map(|r| r.at).collect()
}

pub async fn a_capped_relation_keeps_the_newest<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ReadingRepo::new(store.clone());
    // Out of order: each create trims what falls below the 3 newest.
    for (i, at) in [50, 10, 40, 20, 60, 30].into_iter().enumerate() {
        repo.create(&reading(&format!("r{i}"), &format!("site{i}"), at))
            .await
            .unwrap();
    }
    assert_eq!(listed(&repo).await, vec![40, 50, 60]);
    let collection = ReadingKeys::relation_sensor("s1");
    assert_eq!(store.collection_len(&collection).await.unwrap(), 3);
    // One older than every kept entry is added and trimmed at once.
    repo.create(&reading("old", "x", 5)).await.unwrap();
    assert_eq!(listed(&repo).await, vec![40, 50, 60]);
    // A newer one pushes out the oldest kept.
    repo.create(&reading("new", "x", 70)).await.unwrap();
    assert_eq!(listed(&repo).await, vec![50, 60, 70]);
    // Trimming deletes no record.
    assert_eq!(repo.count_all().await.unwrap(), 8);
    assert!(repo.get("r1").await.unwrap().is_some());
    assert!(repo.verify(3).await.unwrap().is_clean());
}

pub async fn an_update_trims_the_collection_it_moves_into<H: Harness>(h: &H) {
    let repo = ReadingRepo::new(h.store());
    for (id, site, at) in [("a", "north", 1), ("b", "north", 2), ("c", "south", 3)] {
        repo.create(&reading(id, site, at)).await.unwrap();
    }
    let sites = |site: &'static str| {
        let repo = repo.clone();
        async move {
            let page = repo.list_by_site(site, PageRequest::new(10)).await.unwrap();
            page.items.iter().map(|r| r.id.clone()).collect::<Vec<_>>()
        }
    };
    assert_eq!(sites("north").await, vec!["a", "b"]);
    repo.modify("c", |r| r.site = "north".into()).await.unwrap();
    assert_eq!(sites("north").await, vec!["b", "c"]);
    assert!(sites("south").await.is_empty());
    assert!(repo.verify(2).await.unwrap().is_clean());
}

pub async fn concurrent_writers_leave_exactly_the_greatest<H: Harness>(h: &H) {
    let store = h.store();
    let mut tasks = Vec::new();
    for t in 0..8i64 {
        let repo = ReadingRepo::new(store.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..10i64 {
                let at = i * 8 + t;
                repo.create(&reading(&format!("r{at}"), "one", at))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let repo = ReadingRepo::new(store.clone());
    assert_eq!(listed(&repo).await, vec![77, 78, 79]);
    let page = repo
        .list_by_site("one", PageRequest::new(10))
        .await
        .unwrap();
    let ats: Vec<i64> = page.items.iter().map(|r| r.at).collect();
    assert_eq!(ats, vec![78, 79]);
    assert_eq!(repo.count_all().await.unwrap(), 80);
    assert!(repo.verify(16).await.unwrap().is_clean());
}

pub async fn verify_reports_a_lost_kept_entry_and_reconcile_restores_it<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ReadingRepo::new(store.clone());
    for (i, at) in [10, 20, 30, 40, 50].into_iter().enumerate() {
        repo.create(&reading(&format!("r{i}"), &format!("s{i}"), at))
            .await
            .unwrap();
    }
    assert!(repo.verify(2).await.unwrap().is_clean());
    // The newest entry removed behind the store's back: a kept entry is
    // missing, the trimmed ones are not.
    let collection = ReadingKeys::relation_sensor("s1");
    let page = store
        .range(&collection, RangeRequest::all(10))
        .await
        .unwrap();
    let newest = page.members.last().unwrap().clone();
    let mut b = Batch::new();
    b.remove(&collection, newest.sort.clone(), newest.member.clone());
    let _ = store.commit(b).await.unwrap();
    let drift = repo.verify(2).await.unwrap();
    let missing: Vec<_> = drift
        .missing_members
        .iter()
        .filter(|(c, _)| *c == collection)
        .collect();
    // With 2 left the collection is under its cap: every record whose
    // entry is not there counts as missing until it is refilled.
    assert!(
        missing.iter().any(|(_, k)| *k == ReadingKeys::record("r4")),
        "{drift:?}"
    );
    repo.reconcile(2).await.unwrap();
    assert_eq!(listed(&repo).await, vec![30, 40, 50]);
    assert!(repo.verify(2).await.unwrap().is_clean());
}

pub async fn trim_keeps_the_greatest_members<H: Harness>(h: &H) {
    let store = h.store();
    let mut b = Batch::new();
    for (sort, member) in [(3u8, "c"), (1, "a"), (5, "e"), (2, "b"), (4, "d")] {
        b.add("cap:t", vec![sort], member.as_bytes().to_vec());
    }
    b.trim("cap:t", 2);
    let _ = store.commit(b).await.unwrap();
    let page = store.range("cap:t", RangeRequest::all(10)).await.unwrap();
    let kept: Vec<&[u8]> = page.members.iter().map(|m| m.member.as_slice()).collect();
    assert_eq!(kept, vec![b"d".as_slice(), b"e".as_slice()]);
    // Ties on the sort key are broken by member bytes.
    let mut b = Batch::new();
    b.add("cap:u", vec![1], b"x".to_vec())
        .add("cap:u", vec![1], b"y".to_vec())
        .add("cap:u", vec![0], b"z".to_vec())
        .trim("cap:u", 1);
    let _ = store.commit(b).await.unwrap();
    let page = store.range("cap:u", RangeRequest::all(10)).await.unwrap();
    assert_eq!(page.members.len(), 1);
    assert_eq!(page.members[0].member, b"y".to_vec());
    // Fewer members than kept: nothing changes; none kept: all go.
    let mut b = Batch::new();
    b.trim("cap:t", 10).trim("cap:absent", 1);
    let _ = store.commit(b).await.unwrap();
    assert_eq!(store.collection_len("cap:t").await.unwrap(), 2);
    let mut b = Batch::new();
    b.trim("cap:t", 0);
    let _ = store.commit(b).await.unwrap();
    assert_eq!(store.collection_len("cap:t").await.unwrap(), 0);
    // A value is no collection: the batch fails, writing nothing.
    let mut b = Batch::new();
    b.put("cap:v", b"1".to_vec(), None);
    let _ = store.commit(b).await.unwrap();
    let mut b = Batch::new();
    b.add("cap:w", vec![1], b"m".to_vec()).trim("cap:v", 1);
    assert!(matches!(
        store.commit(b).await,
        Err(Error::InvalidBatch { .. })
    ));
    assert_eq!(store.collection_len("cap:w").await.unwrap(), 0);
}
