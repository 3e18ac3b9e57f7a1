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
