//! Upkeep cases (docs/schema.md, "Every write"), generic over the store.

use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{Batch, Error, PageRequest, RangeRequest, Store};

use super::model::*;

fn users<H: Harness>(h: &H) -> UserRepo<H::Store> {
    UserRepo::new(h.store())
}

async fn collection_len<S: Store>(s: &S, key: &str) -> usize {
    s.range(key, RangeRequest::all(10_000))
        .await
        .unwrap()
        .members
        .len()
}

/// create: record, unique claim (normalized), ordered member, counters and
/// discovery member, all present after one commit.
pub async fn create_writes_every_entry<H: Harness>(h: &H) {
    let repo = users(h);
    let u = user(
        "1",
        "Ada@Example.COM",
        Status::Active,
        "2026-01-01T00:00:00Z",
    );
    repo.create(&u).await.unwrap();
    assert_eq!(repo.get("1").await.unwrap(), Some(u.clone()));
    assert_eq!(
        repo.find_by_email("ada@example.com").await.unwrap(),
        Some(u.clone())
    );
    assert_eq!(
        repo.find_by_email("ADA@EXAMPLE.COM").await.unwrap(),
        Some(u.clone()),
        "lookup argument is normalized"
    );
    assert_eq!(
        repo.get("1").await.unwrap().unwrap().email,
        "Ada@Example.COM",
        "stored field keeps its case"
    );
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert_eq!(repo.count_by_status(Status::Active).await.unwrap(), 1);
    let page = repo
        .list_by_status(Status::Active, PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items, vec![u.clone()]);
    assert_eq!(
        repo.list_all(PageRequest::new(10)).await.unwrap().items,
        vec![u]
    );
    let err = repo
        .create(&user(
            "1",
            "other@x.io",
            Status::Active,
            "2026-01-01T00:00:00Z",
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
}

/// A unique conflict (also one that differs only in case) leaves nothing behind.
pub async fn unique_conflict_leaves_nothing<H: Harness>(h: &H) {
    let repo = users(h);
    repo.create(&user("1", "a@x.io", Status::Active, "2026-01-01T00:00:00Z"))
        .await
        .unwrap();
    let err = repo
        .create(&user(
            "2",
            "A@X.IO",
            Status::Inactive,
            "2026-01-02T00:00:00Z",
        ))
        .await
        .unwrap_err();
    match &err {
        Error::UniqueViolation {
            entity,
            index,
            value,
        } => {
            assert_eq!(
                (*entity, *index, value.as_str()),
                ("User", "by_email", "a@x.io")
            );
        }
        other => panic!("expected UniqueViolation, got {other}"),
    }
    assert!(err.to_string().contains("already taken"), "{err}");
    assert_eq!(repo.get("2").await.unwrap(), None);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert_eq!(repo.count_by_status(Status::Inactive).await.unwrap(), 0);
    assert!(
        repo.list_by_status(Status::Inactive, PageRequest::new(10))
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        repo.list_all(PageRequest::new(10))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // An update that would take a claimed value fails the same way.
    repo.create(&user("3", "c@x.io", Status::Active, "2026-01-03T00:00:00Z"))
        .await
        .unwrap();
    let mut u3 = repo.get("3").await.unwrap().unwrap();
    u3.email = "a@X.io".into();
    u3.status = Status::Suspended;
    assert!(matches!(
        repo.update(&u3).await,
        Err(Error::UniqueViolation { .. })
    ));
    assert_eq!(repo.get("3").await.unwrap().unwrap().email, "c@x.io");
    assert_eq!(repo.count_by_status(Status::Suspended).await.unwrap(), 0);
    assert_eq!(repo.find_by_email("c@x.io").await.unwrap().unwrap().id, "3");
}

/// update: claims released and taken, ordered members and group counters move.
pub async fn update_moves_claims_members_and_counters<H: Harness>(h: &H) {
    let repo = users(h);
    let mut u = user("1", "old@x.io", Status::Active, "2026-01-01T00:00:00Z");
    repo.create(&u).await.unwrap();
    u.email = "new@x.io".into();
    u.status = Status::Suspended;
    repo.update(&u).await.unwrap();
    assert_eq!(repo.find_by_email("old@x.io").await.unwrap(), None);
    assert_eq!(
        repo.find_by_email("new@x.io").await.unwrap(),
        Some(u.clone())
    );
    assert_eq!(repo.count_by_status(Status::Active).await.unwrap(), 0);
    assert_eq!(repo.count_by_status(Status::Suspended).await.unwrap(), 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert!(
        repo.list_by_status(Status::Active, PageRequest::new(5))
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        repo.list_by_status(Status::Suspended, PageRequest::new(5))
            .await
            .unwrap()
            .items,
        vec![u.clone()]
    );
    // The released value is free for someone else.
    repo.create(&user(
        "2",
        "OLD@x.io",
        Status::Active,
        "2026-01-02T00:00:00Z",
    ))
    .await
    .unwrap();
    // Updating a missing record is NotFound.
    let ghost = user("9", "g@x.io", Status::Active, "2026-01-01T00:00:00Z");
    assert!(matches!(
        repo.update(&ghost).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        repo.modify("9", |_| {}).await,
        Err(Error::NotFound { .. })
    ));
    // modify may not change the key.
    let err = repo.modify("1", |u| u.id = "7".into()).await.unwrap_err();
    assert!(matches!(err, Error::InvalidKey { .. }), "{err}");
}

/// delete: the mirror of create — no orphaned entry, no stale counter.
pub async fn delete_removes_everything<H: Harness>(h: &H) {
    let repo = users(h);
    let u = user("1", "a@x.io", Status::Active, "2026-01-01T00:00:00Z");
    repo.create(&u).await.unwrap();
    assert!(repo.delete("1").await.unwrap());
    assert!(
        !repo.delete("1").await.unwrap(),
        "second delete finds nothing"
    );
    let s = h.store();
    assert_eq!(s.get(&UserKeys::record("1")).await.unwrap(), None);
    assert_eq!(s.get(&UserKeys::by_email("a@x.io")).await.unwrap(), None);
    assert_eq!(
        collection_len(&s, &UserKeys::by_status(Status::Active)).await,
        0
    );
    assert_eq!(collection_len(&s, &UserKeys::all()).await, 0);
    assert_eq!(repo.count_total().await.unwrap(), 0);
    assert_eq!(repo.count_by_status(Status::Active).await.unwrap(), 0);
    repo.create(&user("2", "A@x.io", Status::Active, "2026-01-01T00:00:00Z"))
        .await
        .unwrap();
}

/// Sums move by the difference; time-bucket groups move between buckets.
pub async fn sums_adjust_by_difference<H: Harness>(h: &H) {
    let orders = OrderRepo::new(h.store());
    let day1 = kvmodel::Date::from_ymd(2026, 3, 1).unwrap();
    let day2 = kvmodel::Date::from_ymd(2026, 3, 2).unwrap();
    let mut o = order("o1", "u1", 100, "2026-03-01T10:00:00Z");
    orders.create(&o).await.unwrap();
    orders
        .create(&order("o2", "u1", 50, "2026-03-01T23:59:59Z"))
        .await
        .unwrap();
    assert_eq!(orders.sum_revenue_by_day(day1).await.unwrap(), 150);
    o.total_cents = 250;
    orders.update(&o).await.unwrap();
    assert_eq!(orders.sum_revenue_by_day(day1).await.unwrap(), 300);
    let moved = orders
        .modify("o1", |o| o.created_at = ts("2026-03-02T08:00:00Z"))
        .await
        .unwrap();
    assert_eq!(moved.total_cents, 250);
    assert_eq!(orders.sum_revenue_by_day(day1).await.unwrap(), 50);
    assert_eq!(orders.sum_revenue_by_day(day2).await.unwrap(), 250);
    assert_eq!(orders.count_per_user("u1").await.unwrap(), 2);
    orders.delete("o2").await.unwrap();
    assert_eq!(orders.sum_revenue_by_day(day1).await.unwrap(), 0);
    assert_eq!(orders.count_per_user("u1").await.unwrap(), 1);
    // Negative amounts are sums too.
    orders
        .create(&order("refund", "u1", -30, "2026-03-02T09:00:00Z"))
        .await
        .unwrap();
    assert_eq!(orders.sum_revenue_by_day(day2).await.unwrap(), 220);
}

/// Relation listing: ordered by time, paginated with cursors across pages,
/// in both directions, with bounds; other users' orders never appear.
pub async fn relation_pages_in_order<H: Harness>(h: &H) {
    let orders = OrderRepo::new(h.store());
    for i in (0..25).rev() {
        let at = format!("2026-05-01T00:{i:02}:00Z");
        orders
            .create(&order(&format!("o{i}"), "u1", i, &at))
            .await
            .unwrap();
    }
    orders
        .create(&order("x", "u1:orders", 1, "2026-05-01T00:00:30Z"))
        .await
        .unwrap();
    orders
        .create(&order("y", "u10", 1, "2026-05-01T00:00:30Z"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut page = PageRequest::new(10);
    let mut pages = 0;
    loop {
        let p = orders.list_by_user("u1", page.clone()).await.unwrap();
        pages += 1;
        seen.extend(p.items.iter().map(|o| o.total_cents));
        match p.next {
            Some(c) => {
                // Cursors survive a trip through text.
                let c: kvmodel::Cursor = c.to_string().parse().unwrap();
                page = PageRequest::new(10).after(c);
            }
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, (0..25).collect::<Vec<_>>());
    let desc = orders
        .list_by_user("u1", PageRequest::new(3).descending())
        .await
        .unwrap();
    assert_eq!(
        desc.items.iter().map(|o| o.total_cents).collect::<Vec<_>>(),
        vec![24, 23, 22]
    );
    let from = ts("2026-05-01T00:20:00Z");
    let bounded = orders
        .list_by_user("u1", PageRequest::new(100).start_at(from))
        .await
        .unwrap();
    assert_eq!(bounded.items.len(), 5);
    assert!(bounded.next.is_none());
    let only = orders
        .list_by_user("u1:orders", PageRequest::new(100))
        .await
        .unwrap();
    assert_eq!(only.items.len(), 1);
    assert_eq!(only.items[0].id, "x");
}

/// TTL: record and claim expire together; expired members are skipped on read
/// and removed lazily.
pub async fn ttl_expires_record_claims_and_members<H: Harness>(h: &H) {
    let sessions = SessionRepo::new(h.store());
    let s1 = Session {
        id: "s1".into(),
        token: "tok".into(),
        user_id: "u1".into(),
        started_at: ts("2026-01-01T00:00:00Z"),
    };
    sessions.create(&s1).await.unwrap();
    h.pass(Duration::from_millis(1000)).await;
    let s2 = Session {
        id: "s2".into(),
        token: "tok2".into(),
        user_id: "u1".into(),
        started_at: ts("2026-01-01T00:01:00Z"),
    };
    sessions.create(&s2).await.unwrap();
    assert_eq!(
        sessions.find_by_token("tok").await.unwrap(),
        Some(s1.clone())
    );
    // TTL 2 s plus up to 10% jitter: s1 expires by 2.2 s, s2 (created at 1 s)
    // not before 3 s. At 2.4 s s1 is gone and s2 has 600 ms to spare.
    h.pass(Duration::from_millis(1400)).await;
    assert_eq!(sessions.get("s1").await.unwrap(), None);
    assert_eq!(sessions.find_by_token("tok").await.unwrap(), None);
    let store = h.store();
    assert_eq!(
        store.get(&SessionKeys::by_token("tok")).await.unwrap(),
        None,
        "the claim expired with the record"
    );
    let listed = sessions
        .list_by_user("u1", PageRequest::new(10))
        .await
        .unwrap();
    assert!(
        listed.items.iter().all(|s| s.id != "s1"),
        "expired members are skipped"
    );
    assert_eq!(
        collection_len(&store, &SessionKeys::by_user("u1")).await,
        listed.items.len(),
        "and removed lazily"
    );
    // The expired token can be claimed again.
    let s3 = Session {
        id: "s3".into(),
        token: "tok".into(),
        user_id: "u2".into(),
        started_at: ts("2026-01-01T00:40:00Z"),
    };
    sessions.create(&s3).await.unwrap();
    assert!(sessions.get("s2").await.unwrap().is_some());
    h.pass(Duration::from_millis(3000)).await;
    assert_eq!(sessions.get("s2").await.unwrap(), None);
    assert!(
        sessions
            .list_all(PageRequest::new(10))
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// Lazy migration: a version-1 record reads as version 2; `since` indexes and
/// counters are added on update and never decremented for records that never
/// had them.
pub async fn lazy_migration_and_since<H: Harness>(h: &H) {
    let old = v1::UserRepo::new(h.store());
    let repo = users(h);
    let legacy = v1::User {
        id: "1".into(),
        email: "Old@x.io".into(),
        full_name: "Ada L".into(),
        legacy_flag: true,
        created_at: ts("2025-01-01T00:00:00Z"),
    };
    old.create(&legacy).await.unwrap();
    old.create(&v1::User {
        id: "2".into(),
        email: "two@x.io".into(),
        full_name: "Bob".into(),
        legacy_flag: false,
        created_at: ts("2025-01-02T00:00:00Z"),
    })
    .await
    .unwrap();
    let read = repo.get("1").await.unwrap().unwrap();
    assert_eq!(
        (read.name.as_str(), read.status, read.visits),
        ("Ada L", Status::Active, None)
    );
    assert_eq!(
        repo.find_by_email("old@x.io").await.unwrap().unwrap().id,
        "1",
        "claims written by v1 still resolve"
    );
    assert_eq!(repo.count_total().await.unwrap(), 2);
    // What version 2 added is write-only while version 1 records remain.
    match repo.count_by_status(Status::Active).await {
        Err(Error::NotReadable {
            since: 2,
            complete: 1,
            ..
        }) => {}
        other => panic!("expected NotReadable, got {other:?}"),
    }
    let partial = users(h).with_partial_reads();
    assert_eq!(
        partial.count_by_status(Status::Active).await.unwrap(),
        0,
        "v1 records were never counted by status"
    );
    // Updating a v1 record adds what it never had instead of moving it.
    repo.modify("1", |u| u.visits = Some(1)).await.unwrap();
    assert_eq!(partial.count_by_status(Status::Active).await.unwrap(), 1);
    assert_eq!(
        partial
            .list_by_status(Status::Active, PageRequest::new(5))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let raw = h
        .store()
        .get(&UserKeys::record("1"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        raw.starts_with(br#"{"v":2,"#),
        "rewritten at version 2: {}",
        String::from_utf8_lossy(&raw)
    );
    // Deleting a v1 record does not decrement what it never had.
    assert!(repo.delete("2").await.unwrap());
    assert_eq!(partial.count_by_status(Status::Active).await.unwrap(), 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    // The old code cannot read the new record: FutureVersion, not truncation.
    match old.get("1").await {
        Err(Error::FutureVersion {
            found: 2,
            supported: 1,
            ..
        }) => {}
        other => panic!("expected FutureVersion, got {other:?}"),
    }
}

/// `From` chains: a v1 record reads through v1 → v2 → v3.
pub async fn migration_from_chain<H: Harness>(h: &H) {
    let s = h.store();
    let key = ProfileKeys::record("p1");
    let v1 = ProfileV1 {
        id: "p1".into(),
        display: "Grace Hopper".into(),
    };
    let mut b = Batch::new();
    b.put(
        &key,
        kvmodel_runtime::__private::record::encode(
            &key,
            kvmodel_runtime::__private::Encoding::Json,
            1,
            &v1,
        )
        .unwrap(),
        None,
    );
    let v2 = ProfileV2 {
        id: "p2".into(),
        first: "Alan".into(),
        last: "Turing".into(),
    };
    let key2 = ProfileKeys::record("p2");
    b.put(
        &key2,
        kvmodel_runtime::__private::record::encode(
            &key2,
            kvmodel_runtime::__private::Encoding::MsgPack,
            2,
            &v2,
        )
        .unwrap(),
        None,
    );
    assert!(s.commit(b).await.unwrap().is_applied());
    let repo = ProfileRepo::new(s.clone());
    let p = repo.get("p1").await.unwrap().unwrap();
    assert_eq!(
        (p.first.as_str(), p.last.as_str(), p.initials.as_str()),
        ("Grace", "Hopper", "GH")
    );
    let p2 = repo.get("p2").await.unwrap().unwrap();
    assert_eq!(p2.initials, "AT");
    let many = repo.get_many(&["p2", "nope", "p1"]).await.unwrap();
    assert_eq!(
        many.iter()
            .map(|p| p.as_ref().map(|p| p.initials.as_str()))
            .collect::<Vec<_>>(),
        vec![Some("AT"), None, Some("GH")]
    );
}

/// A newer record is FutureVersion; garbage is a Decode error naming the key.
pub async fn future_version_and_garbage_are_errors<H: Harness>(h: &H) {
    let s = h.store();
    let key = UserKeys::record("f");
    let mut b = Batch::new();
    b.put(&key, br#"{"v":9,"d":{"id":"f"}}"#.to_vec(), None)
        .put(UserKeys::record("g"), b"not a record".to_vec(), None);
    assert!(s.commit(b).await.unwrap().is_applied());
    let repo = users(h);
    match repo.get("f").await {
        Err(Error::FutureVersion {
            found: 9,
            supported: 2,
            key: k,
        }) => assert_eq!(k, key),
        other => panic!("expected FutureVersion, got {other:?}"),
    }
    let err = repo.get("g").await.unwrap_err();
    assert!(matches!(err, Error::Decode { .. }));
    assert!(err.to_string().contains("shop:user:g"), "{err}");
    assert!(
        matches!(repo.delete("f").await, Err(Error::FutureVersion { .. })),
        "a newer record is never overwritten"
    );
}

/// Sixteen tasks race to claim one email: exactly one wins, nothing else is left.
pub async fn unique_race_has_one_winner<H: Harness>(h: &H) {
    let repo = users(h);
    let wins = kvmodel::conformance::unique_race(16, |i| {
        let repo = repo.clone();
        async move {
            repo.create(&user(
                &format!("r{i}"),
                "Race@x.io",
                Status::Active,
                "2026-01-01T00:00:00Z",
            ))
            .await
        }
    })
    .await;
    assert_eq!(wins, 1);
    assert_eq!(repo.count_total().await.unwrap(), 1);
    assert_eq!(repo.count_by_status(Status::Active).await.unwrap(), 1);
    assert_eq!(
        repo.list_all(PageRequest::new(100))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(
        collection_len(&h.store(), &UserKeys::by_status(Status::Active)).await,
        1
    );
}

/// Eight tasks × five `modify` calls on one record lose no update, and the
/// group counter they move stays exact.
pub async fn contended_modify_loses_nothing<H: Harness>(h: &H) {
    let repo = users(h);
    repo.create(&user(
        "hot",
        "hot@x.io",
        Status::Active,
        "2026-01-01T00:00:00Z",
    ))
    .await
    .unwrap();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..5 {
                repo.modify("hot", |u| {
                    u.visits = Some(u.visits.unwrap_or(0) + 1);
                    u.status = if (t + i) % 2 == 0 {
                        Status::Active
                    } else {
                        Status::Inactive
                    };
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let u = repo.get("hot").await.unwrap().unwrap();
    assert_eq!(u.visits, Some(40));
    let active = repo.count_by_status(Status::Active).await.unwrap();
    let inactive = repo.count_by_status(Status::Inactive).await.unwrap();
    assert_eq!(active + inactive, 1, "exactly one status counted");
    assert_eq!(repo.count_by_status(u.status).await.unwrap(), 1);
}

/// Ids and values with separators and braces never collide with other keys.
pub async fn separators_never_collide<H: Harness>(h: &H) {
    let repo = users(h);
    let ids = [
        "1",
        "1:orders",
        "1%3Aorders",
        "{1}",
        "a#uniq",
        "",
        "1:",
        "é:ü",
    ];
    for (i, id) in ids.iter().enumerate() {
        repo.create(&user(
            id,
            &format!("{id}@x.io:{i}"),
            Status::Active,
            "2026-01-01T00:00:00Z",
        ))
        .await
        .unwrap();
    }
    for (i, id) in ids.iter().enumerate() {
        let u = repo.get(id).await.unwrap().unwrap();
        assert_eq!(u.id, *id);
        assert_eq!(
            repo.find_by_email(&format!("{id}@x.io:{i}"))
                .await
                .unwrap()
                .unwrap()
                .id,
            *id
        );
    }
    assert_eq!(repo.count_total().await.unwrap(), ids.len() as i64);
    let docs = DocRepo::new(h.store());
    let a = Doc {
        tenant: "a:doc:1".into(),
        id: 2,
        title: "t".into(),
    };
    let b = Doc {
        tenant: "a".into(),
        id: 1,
        title: "t".into(),
    };
    docs.create(&a).await.unwrap();
    docs.create(&b).await.unwrap();
    assert_ne!(DocKeys::record("a:doc:1", 2), DocKeys::record("a", 1));
    assert_eq!(
        DocKeys::record("a", -1),
        "docs:tenant:{a}:doc:-1",
        "the co-location field is the hash tag"
    );
    assert_eq!(docs.get("a", 1).await.unwrap(), Some(b.clone()));
    assert_eq!(docs.get("a:doc:1", 2).await.unwrap(), Some(a.clone()));
    assert_eq!(docs.find_by_title("a", "t").await.unwrap(), Some(b));
    assert_eq!(docs.count_per_tenant("a").await.unwrap(), 1);
    assert_eq!(
        docs.get_many(&[("a", 1), ("a", 2)])
            .await
            .unwrap()
            .iter()
            .filter(|d| d.is_some())
            .count(),
        1
    );
}

/// migrate rewrites old records and fills `since` entries; verify reports
/// drift; reconcile repairs it.
pub async fn maintenance_migrates_verifies_and_repairs<H: Harness>(h: &H) {
    let old = v1::UserRepo::new(h.store());
    for i in 0..7 {
        let u = v1::User {
            id: format!("m{i}"),
            email: format!("m{i}@x.io"),
            full_name: format!("M {i}"),
            legacy_flag: false,
            created_at: ts("2025-01-01T00:00:00Z"),
        };
        old.create(&u).await.unwrap();
    }
    let repo = users(h);
    assert!(
        matches!(
            repo.count_by_status(Status::Active).await,
            Err(Error::NotReadable { .. })
        ),
        "refused before the backfill"
    );
    let mut pages = 0;
    let done = repo.migrate_all(3, |_| pages += 1).await.unwrap();
    assert_eq!((done.visited, done.changed, pages), (7, 7, 3));
    assert_eq!(
        repo.count_by_status(Status::Active).await.unwrap(),
        7,
        "since-2 counters backfilled"
    );
    assert_eq!(
        repo.list_by_status(Status::Active, PageRequest::new(10))
            .await
            .unwrap()
            .items
            .len(),
        7
    );
    let again = repo.migrate_all(3, |_| {}).await.unwrap();
    assert_eq!(again.changed, 0, "migrate is idempotent");
    assert!(repo.verify(4).await.unwrap().is_clean());

    // Break things behind the repository's back.
    let s = h.store();
    let u3 = repo.get("m3").await.unwrap().unwrap();
    let mut b = Batch::new();
    b.delete(UserKeys::by_email("m1@x.io"))
        .remove(
            UserKeys::by_status(Status::Active),
            kvmodel_runtime::__private::key::sort_key(&u3.created_at),
            UserKeys::record("m3").into_bytes(),
        )
        .incr(UserKeys::counter_by_status(Status::Active), 5);
    assert!(s.commit(b).await.unwrap().is_applied());
    let drift = repo.verify(4).await.unwrap();
    assert_eq!(drift.records, 7);
    assert_eq!(
        drift.missing_claims,
        vec![(UserKeys::by_email("m1@x.io"), UserKeys::record("m1"))]
    );
    assert_eq!(
        drift.missing_members,
        vec![(UserKeys::by_status(Status::Active), UserKeys::record("m3"))]
    );
    assert_eq!(drift.counters.len(), 1);
    assert_eq!(
        (drift.counters[0].expected, drift.counters[0].actual),
        (7, 12)
    );
    let fixed = repo.reconcile(4).await.unwrap();
    assert_eq!(fixed, drift, "reconcile reports what it repaired");
    assert!(repo.verify(4).await.unwrap().is_clean());
    assert_eq!(
        repo.find_by_email("m1@x.io").await.unwrap().unwrap().id,
        "m1"
    );
}

/// `list_all` and `count_all` list every record of an entity and nothing
/// else, in pages, also beside an entity whose keys share its first literal
/// segment. A store that ranges over its keys (redb, memory) keeps no
/// discovery set; one that cannot (Redis) keeps one with every record.
pub async fn records_are_listed_by_their_keys_where_keys_are_ordered<H: Harness>(h: &H) {
    let (docs, notes) = (DocRepo::new(h.store()), NoteRepo::new(h.store()));
    let mut want = Vec::new();
    for i in 0..7 {
        for tenant in ["acme", "a:b", "zeta"] {
            let doc = Doc {
                tenant: tenant.into(),
                id: i,
                title: format!("{tenant} {i}"),
            };
            docs.create(&doc).await.unwrap();
            want.push(doc);
            notes
                .create(&Note {
                    tenant: tenant.into(),
                    id: i,
                })
                .await
                .unwrap();
        }
    }
    docs.delete("zeta", 3).await.unwrap();
    want.retain(|d| !(d.tenant == "zeta" && d.id == 3));
    let mut listed = Vec::new();
    let mut page = PageRequest::new(4);
    loop {
        let p = docs.list_all(page.clone()).await.unwrap();
        assert!(p.items.len() <= 4);
        listed.extend(p.items);
        match p.next {
            Some(next) => page = PageRequest::new(4).after(next),
            None => break,
        }
    }
    let key = |d: &Doc| (d.tenant.clone(), d.id);
    listed.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(listed, want);
    assert_eq!(docs.count_all().await.unwrap(), 20);
    assert_eq!(notes.count_all().await.unwrap(), 21);
    let s = h.store();
    let set = DocKeys::all();
    let members = collection_len(&s, &set).await;
    if s.orders_keys() {
        assert_eq!(
            members, 0,
            "a store that ranges over its keys keeps no `{set}`"
        );
    } else {
        assert_eq!(members, 20, "`{set}` lists every record");
    }
}
