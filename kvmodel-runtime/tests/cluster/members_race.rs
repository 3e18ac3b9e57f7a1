//! Members carry no hold: two writes of one record may both add the same
//! member in another slot. The write that loses the record must not take
//! back a member the winner found there and relies on, so a write that adds
//! members early prepares its record's slot first, and no other slot while
//! another write holds or changed the record.

use kvmodel_runtime::__private::hash_slot;
use kvmodel_runtime::conformance::{ClusterHarness, Harness};
use kvmodel_runtime::store::CrashPoint;
use kvmodel_runtime::{Batch, Store};

use super::{LEASE, members};

/// A rewrite of `record` from `from` to `v1` (as a migration's is): the
/// record conditioned and put, its member added to an index in another
/// slot, and removed from an old index in that slot (a late operation, so
/// the slot has a token and no hold that keeps the other write out).
fn rewrite(record: &str, set: &str, old: &str, from: &[u8]) -> Batch {
    let member = record.as_bytes().to_vec();
    let mut b = Batch::new();
    b.equals(record, from.to_vec())
        .put(record, b"v1".to_vec(), None)
        .add(set, vec![1], member.clone())
        .remove(old, vec![0], member);
    b
}

/// Two rewrites of one record race, as two migrations do: the loser read
/// the record before the winner changed it. The loser stops (its process
/// dies) after step 1 of its attempt; the winner commits, adding the member
/// the loser may have added first; then the loser's leftovers are undone.
/// The member the winner's record derives is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_that_lost_its_record_takes_back_no_member_the_winner_added() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let s = h.store();
    let (record, set, old) = ("m:item:race", "m:item#idx:{g}:new", "m:item#idx:{g}:old");
    let phys = |k: &str| hash_slot(&format!("{}{k}", s.key_prefix()));
    assert_ne!(phys(record), phys(set), "pick another record name");
    assert_eq!(phys(set), phys(old));
    let mut seed = Batch::new();
    seed.put(record, b"v0".to_vec(), None)
        .add(old, vec![0], record.as_bytes().to_vec());
    assert!(s.commit(seed).await.unwrap().is_applied());

    // The loser's condition no longer holds in the record's slot: it adds
    // nothing elsewhere.
    let loser = rewrite(record, set, old, b"an older value");
    let err = s
        .crashing_at(CrashPoint::PreparedPart)
        .commit(loser)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("test hook"), "{err}");
    assert!(
        members(&s, set).await.is_empty(),
        "a write refused in its record's slot added a member elsewhere"
    );

    // The winner commits; the loser's leftovers, if any, are undone.
    assert!(
        s.commit(rewrite(record, set, old, b"v0"))
            .await
            .unwrap()
            .is_applied()
    );
    s.recover_writes(true).await.unwrap();
    assert_eq!(s.get(record).await.unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(members(&s, set).await, vec![record.to_owned()]);
    assert!(members(&s, old).await.is_empty());
    assert!(s.unfinished_writes().await.unwrap().is_empty());
}
