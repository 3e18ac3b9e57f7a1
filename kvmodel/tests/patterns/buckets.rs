//! Time-bucketed collections: `day(f)`, `hour(f)` and `month(f)` among an
//! index's fields give one collection (or one claim) per bucket, listable
//! by bucket; a write that moves a record to another bucket moves its entry
//! in the same commit.

use kvmodel::conformance::Harness;
use kvmodel::{Date, Error, KvEntity, PageRequest, Store, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tb", key = "event:{stream}:{id}")]
#[kv(index(name = by_stream_day, fields(stream, day(at)), order_by = at))]
#[kv(index(name = by_hour, fields(hour(at))))]
#[kv(index(name = by_month_kind, fields(month(at), kind), order_by = at))]
#[kv(index(name = one_per_day, fields(user, day(at)), unique))]
pub struct Event {
    pub stream: String,
    pub id: String,
    pub user: String,
    pub kind: String,
    pub at: Timestamp,
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn day(text: &str) -> Date {
    text.parse().unwrap()
}

fn event(id: &str, user: &str, when: &str) -> Event {
    Event {
        stream: "s".into(),
        id: id.into(),
        user: user.into(),
        kind: "click".into(),
        at: at(when),
    }
}

async fn on_day<S: Store>(repo: &EventRepo<S>, stream: &str, d: &str) -> Vec<String> {
    let page = repo
        .list_by_stream_day(stream, day(d), PageRequest::new(100))
        .await
        .unwrap();
    page.items.into_iter().map(|e| e.id).collect()
}

/// The last millisecond of a day and the first of the next fall in two
/// collections; each day lists its own, in `order_by` order.
pub async fn each_day_lists_its_own_records<H: Harness>(h: &H) {
    let repo = EventRepo::new(h.store());
    for (id, user, when) in [
        ("late", "u1", "2026-03-01T23:59:59.999Z"),
        ("early", "u2", "2026-03-01T00:00:00.000Z"),
        ("midnight", "u3", "2026-03-02T00:00:00.000Z"),
        ("noon", "u4", "2026-03-02T12:00:00.000Z"),
    ] {
        repo.create(&event(id, user, when)).await.unwrap();
    }
    assert_eq!(on_day(&repo, "s", "2026-03-01").await, ["early", "late"]);
    assert_eq!(on_day(&repo, "s", "2026-03-02").await, ["midnight", "noon"]);
    assert!(on_day(&repo, "s", "2026-03-03").await.is_empty());
    assert!(on_day(&repo, "other", "2026-03-01").await.is_empty());
    // Hours and months bucket the same way.
    let hour = repo
        .list_by_hour(at("2026-03-01T23:00:00Z"), PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(hour.items.len(), 1);
    assert_eq!(hour.items[0].id, "late");
    let month = repo
        .list_by_month_kind(day("2026-03-17"), "click", PageRequest::new(10))
        .await
        .unwrap();
    let ids: Vec<_> = month.items.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["early", "late", "midnight", "noon"]);
    assert!(repo.verify(10).await.unwrap().is_clean());
}

/// Bucket keys are distinct exactly for distinct buckets, and never meet a
/// key of another stream whatever the stream's text.
pub async fn bucket_keys_are_distinct_per_bucket<H: Harness>(_h: &H) {
    let a = EventKeys::by_stream_day("s", day("2026-03-01"));
    let b = EventKeys::by_stream_day("s", day("2026-03-02"));
    assert_ne!(a, b);
    assert_eq!(
        a,
        EventKeys::by_stream_day("s", at("2026-03-01T23:59:59.999Z").date())
    );
    // A stream whose text looks like a bucket cannot reach another key.
    let tricky = EventKeys::by_stream_day("s:2026-03-01", day("2026-03-01"));
    assert_ne!(tricky, a);
    assert_ne!(
        EventKeys::by_hour(at("2026-03-01T10:00:00Z")),
        EventKeys::by_hour(at("2026-03-01T11:00:00Z"))
    );
    assert_eq!(
        EventKeys::by_hour(at("2026-03-01T10:00:00Z")),
        EventKeys::by_hour(at("2026-03-01T10:59:59.999Z"))
    );
    assert_eq!(
        EventKeys::by_month_kind(day("2026-03-01"), "k"),
        EventKeys::by_month_kind(day("2026-03-31"), "k")
    );
    assert_ne!(
        EventKeys::by_month_kind(day("2026-03-31"), "k"),
        EventKeys::by_month_kind(day("2026-04-01"), "k")
    );
}

/// An update that moves `at` to another day moves the entry in its commit:
/// the old day no longer lists it, the new day does.
pub async fn an_update_moves_the_entry_to_its_new_bucket<H: Harness>(h: &H) {
    let store = h.store();
    let repo = EventRepo::new(store.clone());
    repo.create(&event("e", "u1", "2026-03-01T10:00:00Z"))
        .await
        .unwrap();
    repo.modify("s", "e", |e| e.at = at("2026-03-05T10:00:00Z"))
        .await
        .unwrap();
    assert!(on_day(&repo, "s", "2026-03-01").await.is_empty());
    assert_eq!(on_day(&repo, "s", "2026-03-05").await, ["e"]);
    let old = EventKeys::by_stream_day("s", day("2026-03-01"));
    assert_eq!(store.collection_len(&old).await.unwrap(), 0);
    assert!(repo.verify(10).await.unwrap().is_clean());
    repo.delete("s", "e").await.unwrap();
    assert!(on_day(&repo, "s", "2026-03-05").await.is_empty());
}

/// A unique index with a bucket claims one value per bucket: one event per
/// user per day; the claim moves with the record and is freed on delete.
pub async fn a_unique_bucket_claims_one_value_per_bucket<H: Harness>(h: &H) {
    let repo = EventRepo::new(h.store());
    repo.create(&event("a", "ada", "2026-03-01T08:00:00Z"))
        .await
        .unwrap();
    let again = repo
        .create(&event("b", "ada", "2026-03-01T20:00:00Z"))
        .await;
    assert!(
        matches!(again, Err(Error::UniqueViolation { .. })),
        "{again:?}"
    );
    assert!(repo.get("s", "b").await.unwrap().is_none());
    repo.create(&event("c", "ada", "2026-03-02T08:00:00Z"))
        .await
        .unwrap();
    let found = repo
        .find_one_per_day("ada", day("2026-03-01"))
        .await
        .unwrap()
        .map(|e| e.id);
    assert_eq!(found.as_deref(), Some("a"));
    // Moving `a` to the 3rd frees the 1st for someone else's event.
    repo.modify("s", "a", |e| e.at = at("2026-03-03T08:00:00Z"))
        .await
        .unwrap();
    assert!(
        repo.find_one_per_day("ada", day("2026-03-01"))
            .await
            .unwrap()
            .is_none()
    );
    repo.create(&event("d", "ada", "2026-03-01T21:00:00Z"))
        .await
        .unwrap();
    assert!(repo.verify(10).await.unwrap().is_clean());
}
