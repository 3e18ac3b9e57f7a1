//! `reconcile` repairs the entries of an expiring record with the record's
//! own lifetime: a recreated claim expires with its record, never outlives it
//! (an outliving claim would keep the unique value taken).

use std::time::Duration;

use kvmodel::clock::ManualClock;
use kvmodel::{Batch, KvEntity, MemoryStore, RedbStore, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(
    namespace = "auth",
    key = "session:{id}",
    ttl = "2s",
    ttl_jitter = "10%"
)]
#[kv(index(name = "by_user", fields(user_id)))]
struct Session {
    id: String,
    #[kv(unique)]
    token: String,
    user_id: String,
}

async fn repaired_claim_expires_with_its_record<S: Store>(store: S, clock: &ManualClock) {
    let repo = SessionRepo::new(store.clone());
    let s = Session {
        id: "s1".into(),
        token: "tok".into(),
        user_id: "u1".into(),
    };
    repo.create(&s).await.unwrap();
    clock.advance(Duration::from_millis(700));

    let (record, claim) = (SessionKeys::record("s1"), SessionKeys::by_token("tok"));
    let mut b = Batch::new();
    b.delete(&claim);
    assert!(store.commit(b).await.unwrap().is_applied());
    let drift = repo.reconcile(10).await.unwrap();
    assert_eq!(drift.missing_claims, vec![(claim.clone(), record.clone())]);
    assert!(
        store.get(&claim).await.unwrap().is_some(),
        "claim recreated"
    );
    assert!(repo.verify(10).await.unwrap().is_clean());

    // Step past the latest possible expiry (2.2 s after creation): at every
    // step the claim is present exactly while its record is.
    let mut expired_at = None;
    for step in 0..200u64 {
        let record_live = store.get(&record).await.unwrap().is_some();
        let claim_live = store.get(&claim).await.unwrap().is_some();
        assert_eq!(
            claim_live,
            record_live,
            "{} ms after creation",
            700 + step * 10
        );
        if !record_live && expired_at.is_none() {
            expired_at = Some(700 + step * 10);
        }
        clock.advance(Duration::from_millis(10));
    }
    let expired_at = expired_at.expect("the record expired");
    assert!((2000..=2210).contains(&expired_at), "{expired_at}");

    // The token is free again for another session.
    let s2 = Session {
        id: "s2".into(),
        token: "tok".into(),
        user_id: "u2".into(),
    };
    repo.create(&s2).await.unwrap();
}

#[tokio::test]
async fn memory() {
    let clock = ManualClock::new(1_700_000_000_000);
    let store = MemoryStore::with_clock(clock.clone());
    repaired_claim_expires_with_its_record(store, &clock).await;
}

#[tokio::test]
async fn redb() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let store = RedbStore::open_with_clock(dir.path().join("t.redb"), clock.clone()).unwrap();
    repaired_claim_expires_with_its_record(store, &clock).await;
}
