//! A write that meets the holds of an overdue write settles it and goes on,
//! however long settling takes: it never gives its condition up as failed
//! after it has itself taken the holder away.

use std::time::Instant;

use kvmodel_runtime::conformance::{ClusterHarness, Harness};
use kvmodel_runtime::store::CrashPoint;
use kvmodel_runtime::{Batch, Store};

use super::LEASE;

/// Counters the stuck write increments, each in a slot of its own (most of
/// them): undoing it takes one round trip per slot, far longer than the
/// 50 ms a write waits at least before it gives up a condition on a key
/// whose holder changes it.
const SLOTS: usize = 2_000;

/// A create of `record` that claims `claim` for it.
fn create(record: &str, claim: &str) -> Batch {
    let mut b = Batch::new();
    b.absent(record)
        .put(record, b"r".to_vec(), None)
        .absent_or_equals(claim, record.as_bytes().to_vec())
        .put(claim, record.as_bytes().to_vec(), None);
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_that_settles_an_overdue_holder_goes_on() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let s = h.store();
    let claim = "settle:item#uniq:code:x";
    let mut stuck = create("settle:item:stuck", claim);
    for i in 0..SLOTS {
        stuck.incr(format!("settle:item#count:n{i}"), 1);
    }
    let err = s
        .crashing_at(CrashPoint::Prepared)
        .commit(stuck)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("test hook"), "{err}");
    s.outlive_leases();

    // The next claimant meets the stuck write's hold on the claim, finds it
    // overdue and undoes it (slot by slot), then takes the claim.
    let started = Instant::now();
    let next = s.commit(create("settle:item:next", claim)).await.unwrap();
    let spent = started.elapsed();
    assert!(
        next.is_applied(),
        "{next:?} after {spent:?}: the claim was given up after its holder was undone"
    );
    assert_eq!(
        s.get(claim).await.unwrap().as_deref(),
        Some(&b"settle:item:next"[..])
    );
    assert_eq!(s.get("settle:item:stuck").await.unwrap(), None);
    for i in [0, SLOTS / 2, SLOTS - 1] {
        let key = format!("settle:item#count:n{i}");
        assert_eq!(s.counter(&key).await.unwrap(), 0, "{key}");
    }
    assert!(s.unfinished_writes().await.unwrap().is_empty());
}
