//! Sequences worth keeping: hand-picked edges and shrunk failures of the
//! random sequences, replayed on every store.

use kvmodel::conformance::Harness;

use super::entities::{Entry, Item, Lease, Life};
use super::feed::EntryChange;
use super::steps::{Change, LeaseChange, Step};
use super::{Ran, real_time, real_time_steps, run_sequence};

fn item(id: &str, sku: &str, group: &str, rank: i64, owner: &str, qty: i64) -> Item {
    Item {
        id: id.into(),
        sku: sku.into(),
        group: group.into(),
        rank,
        owner: owner.into(),
        qty,
    }
}

fn lease(id: &str, token: &str, owner: &str, rank: i64, weight: i64) -> Lease {
    Lease {
        id: id.into(),
        token: token.into(),
        owner: owner.into(),
        rank,
        weight,
        ends: None,
    }
}

/// A lease expires; its token and its id are taken again, by another
/// lease and by a new lease of another owner.
pub async fn expired_lease_frees_its_token_and_id<H: Harness>(h: &H) {
    judged(
        h,
        &[
            Step::CreateLease(lease("a", "t1", "o1", 0, 5), Life::Ttl),
            Step::Pass { long: true },
            Step::CreateLease(lease("b", "t1", "o2", 1, 2), Life::Later),
            Step::UpsertLease(lease("a", "t2", "o2", i64::MIN, -3), Life::Later),
            Step::ModifyLease("b", LeaseChange::Owner("o1"), None),
            Step::Sweep,
        ],
    )
    .await;
}

/// Leases expire at their own time, soon, or after the `ttl`, or not
/// within the sequence; an update moves the expiry, a `modify` may keep
/// it. Expired leases leave listings and lookups at once and the counters
/// at the sweep (the kept count stays); a create at an expired key and a
/// delete of one sweep it first. Where time passes for real, no lease that
/// expires lives more than two steps before a pass ends it.
pub async fn leases_expire_at_their_own_time<H: Harness>(h: &H) {
    judged(
        h,
        &[
            Step::CreateLease(lease("b", "t2", "o1", 1, 2), Life::Later),
            Step::CreateLease(lease("a", "t1", "o1", 0, 5), Life::Soon),
            Step::Pass { long: true },
            Step::CreateLease(lease("c", "t1", "o2", -1, -4), Life::Ttl),
            Step::UpdateLease(lease("c", "t3", "o2", 7, -4), Life::Soon),
            Step::Pass { long: false },
            Step::Pass { long: true },
            Step::CreateLease(lease("a", "t3", "o2", 0, 6), Life::Later),
            Step::ModifyLease("b", LeaseChange::AddWeight(1), None),
            Step::DeleteLease("c"),
            Step::Sweep,
            Step::ModifyLease("b", LeaseChange::Owner("o2"), Some(Life::Ttl)),
            Step::Pass { long: true },
            Step::Sweep,
        ],
    )
    .await;
}

/// Unique values differ only in case: one claim; a move frees it.
pub async fn unique_values_in_any_case_are_one_claim<H: Harness>(h: &H) {
    judged(
        h,
        &[
            Step::CreateItem(item("a", "x", "g1", 0, "o1", 1)),
            Step::CreateItem(item("b", "X", "g1", 0, "o1", 1)),
            Step::ModifyItem("a", Change::Sku("y")),
            Step::CreateItem(item("b", "X", "g2", i64::MAX, "o2", 4)),
            Step::ConcurrentModify(
                "b",
                vec![Change::AddQty(3), Change::Group("g1"), Change::Rank(-1)],
            ),
            Step::DeleteItem("a"),
        ],
    )
    .await;
}

fn entry(id: &str, tag: &str, n: i64) -> Entry {
    Entry {
        id: id.into(),
        tag: tag.into(),
        n,
    }
}

/// The feed holds every applied write of an entry and nothing of the
/// refused ones (a second create, a tag taken, in a transaction too); a
/// transaction's creates share one commit.
pub async fn feed_holds_applied_writes_only<H: Harness>(h: &H) {
    judged(
        h,
        &[
            Step::CreateEntry(entry("a", "e1", 1)),
            Step::CreateEntry(entry("a", "e2", 2)),
            Step::CreateEntry(entry("b", "e1", 3)),
            Step::ModifyEntry("a", EntryChange::Add(4)),
            Step::TxCreateEntries(entry("b", "e2", 0), entry("c", "e1", 0)),
            Step::TxCreateEntries(entry("b", "e2", 5), entry("c", "e3", 6)),
            Step::UpsertEntry(entry("c", "e1", 7)),
            Step::ModifyEntry("b", EntryChange::Tag("e3")),
            Step::DeleteEntry("a"),
            Step::UpsertEntry(entry("a", "e1", 8)),
            Step::DeleteEntry("d"),
        ],
    )
    .await;
}

/// Runs `sequence` until it can be judged (where time passes for real, a
/// slow run may come too near a lease's expiry), at most five times;
/// there, as for drawn sequences, only long passes are taken.
async fn judged<H: Harness>(h: &H, sequence: &[Step]) {
    let sequence = &real_time_steps(sequence.to_vec(), real_time(&h.store()));
    for _ in 0..5 {
        if run_sequence(h, sequence).await == Ran::Matched {
            return;
        }
    }
    panic!("five runs were too slow to judge the sequence's expiring records");
}
