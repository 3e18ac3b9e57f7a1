//! What only the embedded store has: a file that outlives the process.

use std::time::Duration;

use kvmodel_runtime::store::clock::ManualClock;
use kvmodel_runtime::{Batch, RangeRequest, RedbStore, Store};

#[tokio::test]
async fn data_and_collection_expiries_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.redb");
    let clock = ManualClock::new(1_000_000);
    {
        let store = RedbStore::open_with_clock(&path, clock.clone()).unwrap();
        let mut b = Batch::new();
        b.put("k", b"v".to_vec(), None)
            .add("set", vec![1], b"m".to_vec())
            .expire("set", Duration::from_secs(10))
            .add("forever", vec![], b"f".to_vec());
        assert!(store.commit(b).await.unwrap().is_applied());
    }
    let store = RedbStore::open_with_clock(&path, clock.clone()).unwrap();
    assert_eq!(store.get("k").await.unwrap(), Some(b"v".to_vec()));
    assert_eq!(
        store
            .range("set", RangeRequest::all(10))
            .await
            .unwrap()
            .members
            .len(),
        1
    );
    clock.advance(Duration::from_secs(11));
    assert!(
        store
            .range("set", RangeRequest::all(10))
            .await
            .unwrap()
            .members
            .is_empty(),
        "the expiry was kept in the file"
    );
    assert_eq!(
        store
            .range("forever", RangeRequest::all(10))
            .await
            .unwrap()
            .members
            .len(),
        1
    );
    let mut b = Batch::new();
    b.add("set", vec![2], b"new".to_vec());
    assert!(store.commit(b).await.unwrap().is_applied());
    let members = store
        .range("set", RangeRequest::all(10))
        .await
        .unwrap()
        .members;
    assert_eq!(
        members.len(),
        1,
        "an expired collection is swept before it is written again"
    );
    assert_eq!(members[0].member, b"new".to_vec());
}

/// Concurrent commits share write transactions (group commit), and each is
/// still checked against the state the commits before it left: of 64
/// writers racing for one key exactly one wins, every counter increment
/// lands once, and a batch that does not fit its key fails alone, its
/// neighbours applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_are_grouped_and_each_judged_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("g.redb")).unwrap();
    let mut seed = Batch::new();
    seed.put("text", b"not a number".to_vec(), None);
    assert!(store.commit(seed).await.unwrap().is_applied());
    let mut tasks = Vec::new();
    for i in 0..64u32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut race = Batch::new();
            race.absent("race")
                .put("race", i.to_string().into_bytes(), None)
                .incr("winners", 1);
            let won = store.commit(race).await.unwrap().is_applied();
            let mut own = Batch::new();
            own.absent(format!("own:{i}"))
                .put(format!("own:{i}"), b"x".to_vec(), None)
                .incr("total", 1);
            assert!(store.commit(own).await.unwrap().is_applied());
            let mut bad = Batch::new();
            bad.incr("text", 1);
            assert!(store.commit(bad).await.is_err(), "an increment of text");
            won
        }));
    }
    let mut won = 0;
    for t in tasks {
        won += u32::from(t.await.unwrap());
    }
    assert_eq!(won, 1);
    assert_eq!(store.counter("winners").await.unwrap(), 1);
    assert_eq!(store.counter("total").await.unwrap(), 64);
    let own: Vec<String> = (0..64).map(|i| format!("own:{i}")).collect();
    assert!(
        store
            .get_many(&own)
            .await
            .unwrap()
            .iter()
            .all(Option::is_some)
    );
    assert_eq!(
        store.get("text").await.unwrap().as_deref(),
        Some(&b"not a number"[..])
    );
}
