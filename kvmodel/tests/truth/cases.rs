//! The cases, generic over the store.

use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{Batch, Error, PageRequest, RangeRequest, Store};

use super::model::*;

/// Creates `sessions` from 16 tasks at once, so that on a networked store
/// (a cluster above all) they are all written well within their TTL.
async fn create_all<S: Store>(repo: &SessionRepo<S>, sessions: Vec<Session>) {
    let mut tasks = Vec::new();
    for chunk in sessions.chunks(sessions.len().div_ceil(16).max(1)) {
        let (repo, chunk) = (repo.clone(), chunk.to_vec());
        tasks.push(tokio::spawn(async move {
            for s in chunk {
                repo.create(&s).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// The members of the collection at `key`, as record keys.
async fn members<S: Store>(s: &S, key: &str) -> Vec<String> {
    s.range(key, RangeRequest::all(100_000))
        .await
        .unwrap()
        .members
        .into_iter()
        .map(|m| String::from_utf8(m.member).unwrap())
        .collect()
}

/// The expiry ledger of sessions.
fn ledger() -> String {
    <Session as kvmodel::__private::Entity>::ledger_key()
}

/// The expiry receipt of a session.
fn receipt(token: &str) -> String {
    <Session as kvmodel::__private::Entity>::receipt_key(&SessionKeys::record(token))
}

async fn put<S: Store>(s: &S, key: &str, value: &[u8]) {
    let mut b = Batch::new();
    b.put(key, value.to_vec(), None);
    assert!(s.commit(b).await.unwrap().is_applied());
}

/// Item: a session expires and its token is created again for another
/// user; the first user's listing and counters must not show it.
pub async fn recreated_session_leaves_its_old_user<H: Harness>(h: &H) {
    let repo = SessionRepo::new(h.store());
    repo.create(&session("tok", "u1")).await.unwrap();
    h.pass(Duration::from_millis(3_200)).await;
    assert_eq!(repo.get("tok").await.unwrap(), None, "expired");
    repo.create(&session("tok", "u2")).await.unwrap();

    let u1 = repo.list_by_user("u1", PageRequest::new(10)).await.unwrap();
    assert!(u1.items.is_empty(), "u1 lists {:?}", u1.items);
    assert_eq!(repo.count_per_user("u1").await.unwrap(), 0);
    assert_eq!(repo.sum_hits_per_user("u1").await.unwrap(), 0);
    let u2 = repo.list_by_user("u2", PageRequest::new(10)).await.unwrap();
    assert_eq!(u2.items, vec![session("tok", "u2")]);
    assert_eq!(repo.count_per_user("u2").await.unwrap(), 1);
    let drift = repo.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

/// Item: a member whose record no longer derives it (here: put there by
/// hand, as drift or old code leaves it) is not listed, and is removed.
pub async fn stale_members_are_dropped_from_listings<H: Harness>(h: &H) {
    let store = h.store();
    let orders = OrderRepo::new(store.clone());
    orders.create(&order("1", "u1", 5)).await.unwrap();
    orders.create(&order("2", "u2", 7)).await.unwrap();
    // Order 2 belongs to u2, but u1's relation lists it too (same sort key
    // as its real entry, and another one).
    let u1 = OrderKeys::relation_user("u1");
    let sort = kvmodel::__private::sort_of(&ts("2026-01-01T00:00:00Z"));
    let mut b = Batch::new();
    b.add(&u1, sort.clone(), OrderKeys::record("2").into_bytes())
        .add(&u1, Vec::new(), OrderKeys::record("1").into_bytes());
    assert!(store.commit(b).await.unwrap().is_applied());

    let page = orders
        .list_by_user("u1", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items, vec![order("1", "u1", 5)]);
    assert_eq!(members(&store, &u1).await, vec![OrderKeys::record("1")]);

    // A record stored under a key that is not its own is not listed as
    // that key's record.
    let copy = store.get(&OrderKeys::record("1")).await.unwrap().unwrap();
    put(&store, &OrderKeys::record("3"), &copy).await;
    let mut b = Batch::new();
    b.add(
        OrderKeys::all(),
        Vec::new(),
        OrderKeys::record("3").into_bytes(),
    );
    assert!(store.commit(b).await.unwrap().is_applied());
    let all = orders.list_all(PageRequest::new(10)).await.unwrap();
    assert_eq!(all.items, vec![order("1", "u1", 5), order("2", "u2", 7)]);

    // Expiring records: the same check.
    let sessions = SessionRepo::new(store.clone());
    sessions.create(&session("a", "u1")).await.unwrap();
    let mut b = Batch::new();
    b.add(
        SessionKeys::relation_user("u9"),
        Vec::new(),
        SessionKeys::record("a").into_bytes(),
    );
    assert!(store.commit(b).await.unwrap().is_applied());
    let page = sessions
        .list_by_user("u9", PageRequest::new(10))
        .await
        .unwrap();
    assert!(page.items.is_empty(), "{:?}", page.items);
    assert!(
        members(&store, &SessionKeys::relation_user("u9"))
            .await
            .is_empty()
    );
}

/// Item: expiry reaches derived data. After the records expire and one
/// sweep runs, counters equal the live records and no collection holds an
/// expired member.
pub async fn expiry_reaches_counters_and_collections<H: Harness>(h: &H) {
    let store = h.store();
    let repo = SessionRepo::new(store.clone());
    let users = 10;
    let n = 60;
    let all = (0..n)
        .map(|i| session(&format!("t{i}"), &format!("u{}", i % users)))
        .collect();
    create_all(&repo, all).await;
    assert_eq!(repo.count_per_user("u3").await.unwrap(), 6);
    h.pass(Duration::from_millis(3_300)).await;
    // One live session written after the others expired.
    repo.create(&session("live", "u3")).await.unwrap();
    let sweep = repo.sweep_expired(10_000).await.unwrap();
    assert!(!sweep.more, "{sweep:?}");
    assert!(sweep.skipped.is_empty(), "{sweep:?}");

    for u in 0..users {
        let user = format!("u{u}");
        let live = i64::from(u == 3);
        assert_eq!(repo.count_per_user(&user).await.unwrap(), live, "{user}");
        assert_eq!(repo.sum_hits_per_user(&user).await.unwrap(), 3 * live);
        assert_eq!(
            members(&store, &SessionKeys::relation_user(&user))
                .await
                .len() as i64,
            live,
            "{user}"
        );
    }
    // The discovery set, where the store keeps one; either way the listing.
    let discovery = if store.orders_keys() {
        vec![]
    } else {
        vec![SessionKeys::record("live")]
    };
    assert_eq!(members(&store, &SessionKeys::all()).await, discovery);
    let listed = repo.list_all(PageRequest::new(100)).await.unwrap().items;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].token, "live");
    assert_eq!(
        members(&store, &SessionKeys::by_role("member")).await,
        vec![SessionKeys::record("live")]
    );
    assert!(members(&store, &ledger()).await == vec![SessionKeys::record("live")]);
    let drift = repo.verify(100).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(drift.expired, 0, "{drift:?}");

    // A second sweep finds nothing; the live session expires too.
    assert_eq!(repo.sweep_expired(10_000).await.unwrap().expired, 0);
    h.pass(Duration::from_millis(3_300)).await;
    let drift = repo.verify(100).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(
        drift.expired, 1,
        "verify counts an expired write until swept"
    );
    assert_eq!(repo.sweep_expired(10).await.unwrap().expired, 1);
    assert_eq!(repo.count_per_user("u3").await.unwrap(), 0);
    assert!(members(&store, &SessionKeys::all()).await.is_empty());
    assert!(members(&store, &ledger()).await.is_empty());
    assert_eq!(store.get(&receipt("live")).await.unwrap(), None);
}

/// Item: garbage under one record key: listings and maintenance report the
/// key and go on; `get` names it; the record can be removed.
pub async fn corrupt_record_stops_nothing<H: Harness>(h: &H) {
    let store = h.store();
    let orders = OrderRepo::new(store.clone());
    for (id, user) in [("1", "u1"), ("2", "u1"), ("3", "u2")] {
        orders.create(&order(id, user, 10)).await.unwrap();
    }
    let bad = OrderKeys::record("2");
    put(&store, &bad, b"\x00garbage").await;

    let all = orders.list_all(PageRequest::new(10)).await.unwrap();
    assert_eq!(all.items, vec![order("1", "u1", 10), order("3", "u2", 10)]);
    assert_eq!(skipped_keys(&all.skipped), vec![bad.clone()]);
    assert!(matches!(*all.skipped[0].error, Error::Decode { .. }));
    let u1 = orders
        .list_by_user("u1", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(u1.items, vec![order("1", "u1", 10)]);
    assert_eq!(skipped_keys(&u1.skipped), vec![bad.clone()]);
    let err = orders.get("2").await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { key, .. } if *key == bad),
        "{err}"
    );
    let err = orders.modify("2", |_| {}).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { key, .. } if *key == bad),
        "{err}"
    );
    let drift = orders.verify(10).await.unwrap();
    assert_eq!(drift.records, 2, "{drift:?}");
    assert_eq!(skipped_keys(&drift.undecodable), vec![bad.clone()]);
    let progress = orders.migrate_all(10, |_| {}).await.unwrap();
    assert_eq!(progress.visited, 3);
    let err = orders.delete("2").await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { key, .. } if *key == bad),
        "{err}"
    );
    assert!(err.to_string().contains("`purge`"), "{err}");

    // purge removes it with its claim and members; reconcile then
    // corrects the counters it could not know.
    assert!(orders.purge("2").await.unwrap());
    assert_eq!(orders.get("2").await.unwrap(), None);
    assert_eq!(
        store.get(&OrderKeys::by_reference("ref-2")).await.unwrap(),
        None
    );
    assert_eq!(
        members(&store, &OrderKeys::relation_user("u1")).await,
        vec![OrderKeys::record("1")]
    );
    assert!(!members(&store, &OrderKeys::all()).await.contains(&bad));
    assert!(!orders.purge("2").await.unwrap(), "nothing left to purge");
    let drift = orders.reconcile(10).await.unwrap();
    assert_eq!(drift.counters.len(), 2, "{drift:?}");
    assert_eq!(orders.count_per_user("u1").await.unwrap(), 1);
    assert_eq!(orders.sum_amount_per_user("u1").await.unwrap(), 10);
    assert!(orders.verify(10).await.unwrap().is_clean());

    // An expiring record: its receipt says exactly what to remove.
    let sessions = SessionRepo::new(store.clone());
    sessions.create(&session("s", "u1")).await.unwrap();
    sessions.create(&session("t", "u1")).await.unwrap();
    put(&store, &SessionKeys::record("s"), b"{\"v\":1,\"d\":[]}").await;
    let page = sessions
        .list_by_user("u1", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items, vec![session("t", "u1")]);
    assert_eq!(skipped_keys(&page.skipped), vec![SessionKeys::record("s")]);
    assert!(sessions.purge("s").await.unwrap());
    assert_eq!(sessions.count_per_user("u1").await.unwrap(), 1);
    assert_eq!(sessions.sum_hits_per_user("u1").await.unwrap(), 3);
    assert_eq!(
        store.get(&SessionKeys::by_handle("h-s")).await.unwrap(),
        None
    );
    assert!(sessions.verify(10).await.unwrap().is_clean());
}

fn skipped_keys(skipped: &[kvmodel::Skipped]) -> Vec<String> {
    skipped.iter().map(|s| s.key.clone()).collect()
}

/// Item: a record written by old code with a sum contribution beyond what
/// a 64-bit counter holds can still be deleted.
pub async fn oversized_sum_from_old_code_is_deletable<H: Harness>(h: &H) {
    let store = h.store();
    let orders = OrderRepo::new(store.clone());
    orders.create(&order("1", "u1", 10)).await.unwrap();
    let huge = order("2", "u1", u64::MAX);
    let key = OrderKeys::record("2");
    let bytes = format!(
        r#"{{"v":1,"d":{}}}"#,
        kvmodel::__private::serde_json::to_string(&huge).unwrap()
    );
    let mut b = Batch::new();
    b.put(&key, bytes.into_bytes(), None)
        .add(OrderKeys::all(), Vec::new(), key.clone().into_bytes())
        .put(
            OrderKeys::by_reference("ref-2"),
            key.clone().into_bytes(),
            None,
        )
        .incr(OrderKeys::counter_per_user("u1"), 1);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(orders.get("2").await.unwrap(), Some(huge));
    assert!(orders.delete("2").await.unwrap());
    assert_eq!(orders.get("2").await.unwrap(), None);
    assert_eq!(
        store.get(&OrderKeys::by_reference("ref-2")).await.unwrap(),
        None
    );
    assert_eq!(orders.count_per_user("u1").await.unwrap(), 1);
}

/// Item: verify and reconcile find and repair orphans: a counter of a
/// group with no records, members and claims whose records are gone.
pub async fn orphans_are_found_and_repaired<H: Harness>(h: &H) {
    let store = h.store();
    let orders = OrderRepo::new(store.clone());
    orders.create(&order("1", "u1", 10)).await.unwrap();
    let ghost = OrderKeys::record("ghost");
    let mut b = Batch::new();
    b.incr(OrderKeys::counter_per_user("nobody"), 41)
        .add(
            OrderKeys::relation_user("u1"),
            Vec::new(),
            ghost.clone().into_bytes(),
        )
        .put(
            OrderKeys::by_reference("ref-ghost"),
            ghost.clone().into_bytes(),
            None,
        );
    assert!(store.commit(b).await.unwrap().is_applied());

    let drift = orders.verify(10).await.unwrap();
    assert!(!drift.is_clean(), "{drift:?}");
    assert_eq!(
        drift.orphan_members,
        vec![(OrderKeys::relation_user("u1"), ghost.clone())]
    );
    assert_eq!(
        drift.orphan_claims,
        vec![(OrderKeys::by_reference("ref-ghost"), ghost.clone())]
    );
    assert!(
        drift
            .counters
            .iter()
            .any(|c| c.key == OrderKeys::counter_per_user("nobody")
                && c.expected == 0
                && c.actual == 41),
        "{drift:?}"
    );
    orders.reconcile(10).await.unwrap();
    assert_eq!(orders.count_per_user("nobody").await.unwrap(), 0);
    assert_eq!(
        members(&store, &OrderKeys::relation_user("u1")).await,
        vec![OrderKeys::record("1")]
    );
    assert_eq!(
        store
            .get(&OrderKeys::by_reference("ref-ghost"))
            .await
            .unwrap(),
        None
    );
    let drift = orders.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");

    // Expiring records: members and counters left by an expired write
    // whose receipt is gone, and a ledger entry no receipt matches.
    let sessions = SessionRepo::new(store.clone());
    sessions.create(&session("s1", "u1")).await.unwrap();
    h.pass(Duration::from_millis(3_300)).await;
    let mut b = Batch::new();
    b.delete(receipt("s1"))
        .add(ledger(), vec![0; 8], b"truth:session:nope".to_vec());
    assert!(store.commit(b).await.unwrap().is_applied());
    let drift = sessions.verify(10).await.unwrap();
    assert!(
        drift
            .orphan_members
            .contains(&(SessionKeys::relation_user("u1"), SessionKeys::record("s1"))),
        "{drift:?}"
    );
    assert!(
        drift
            .orphan_members
            .contains(&(ledger(), "truth:session:nope".to_owned())),
        "{drift:?}"
    );
    assert!(
        drift
            .counters
            .iter()
            .any(|c| c.key == SessionKeys::counter_per_user("u1")
                && c.actual == 1
                && c.expected == 0),
        "{drift:?}"
    );
    sessions.reconcile(10).await.unwrap();
    assert_eq!(sessions.count_per_user("u1").await.unwrap(), 0);
    assert!(
        members(&store, &SessionKeys::relation_user("u1"))
            .await
            .is_empty()
    );
    assert!(members(&store, &ledger()).await.is_empty());
    assert!(members(&store, &SessionKeys::all()).await.is_empty());
    let drift = sessions.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}

/// Expiry reaches derived data without an explicit sweep too: writes of an
/// expiring entity sweep in small steps.
pub async fn writes_sweep_in_small_steps<H: Harness>(h: &H) {
    let store = h.store();
    let repo = SessionRepo::new(store.clone());
    let old = (0..32)
        .map(|i| session(&format!("old{i}"), "old"))
        .collect();
    create_all(&repo, old).await;
    h.pass(Duration::from_millis(3_300)).await;
    // One step in 8 writes examines 32 due entries: 160 writes sweep 32
    // expired sessions unless none of them steps (odds about 5e-10). The
    // writes are 16 creates and 144 rewrites of those sessions, so none of
    // them expires meanwhile however slow the store.
    let new = (0..16)
        .map(|i| session(&format!("new{i}"), "new"))
        .collect();
    create_all(&repo, new).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..9 {
                repo.modify(&format!("new{i}"), |s| s.hits += 1)
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(repo.count_per_user("old").await.unwrap(), 0);
    assert!(
        members(&store, &SessionKeys::relation_user("old"))
            .await
            .is_empty()
    );
    assert_eq!(repo.count_per_user("new").await.unwrap(), 16);
    assert_eq!(repo.sum_hits_per_user("new").await.unwrap(), 16 * (3 + 9));
}

/// Expired records whose receipts cannot be read stay in the ledger (for
/// `purge`); a sweep called again while it says `more` still ends, and
/// `reconcile` sweeps the records behind them.
pub async fn a_sweep_ends_past_receipts_it_cannot_read<H: Harness>(h: &H) {
    let store = h.store();
    let repo = SessionRepo::new(store.clone());
    let broken: Vec<Session> = (0..6).map(|i| session(&format!("b{i}"), "u")).collect();
    create_all(&repo, broken).await;
    // Due after the broken ones: behind them in the ledger.
    tokio::time::sleep(Duration::from_millis(20)).await;
    create_all(&repo, vec![session("ok0", "u"), session("ok1", "u")]).await;
    for i in 0..6 {
        put(&store, &receipt(&format!("b{i}")), b"not a receipt").await;
    }
    h.pass(Duration::from_millis(3_300)).await;

    let mut calls = 0;
    loop {
        calls += 1;
        let sweep = repo.sweep_expired(4).await.unwrap();
        if !sweep.more {
            break;
        }
        assert!(calls < 5, "the sweep says more forever: {sweep:?}");
    }
    let drift = tokio::time::timeout(Duration::from_secs(60), repo.reconcile(10))
        .await
        .expect("reconcile ends")
        .unwrap();
    for i in 0..6 {
        let key = SessionKeys::record(&format!("b{i}"));
        assert!(
            drift.undecodable.iter().any(|s| s.key == key),
            "{key} is not reported: {drift:?}"
        );
    }
    let left = members(&store, &ledger()).await;
    for ok in ["ok0", "ok1"] {
        let key = SessionKeys::record(ok);
        assert!(!left.contains(&key), "{key} was not swept: {left:?}");
    }
}

/// A `verify` beside writers that rewrite expiring records: each record's
/// receipt and ledger entry are judged as they were when the record was
/// read, so no receipt is reported out of step.
pub async fn verify_beside_rewrites_reports_no_receipt<H: Harness>(h: &H) {
    use kvmodel_runtime::__private::{Typed, WalkState, Walker};
    let store = h.store();
    let repo = SessionRepo::new(store.clone());
    let all = (0..4).map(|i| session(&format!("w{i}"), "u")).collect();
    create_all(&repo, all).await;
    let def = Typed::<Session>::new();
    let walker = Walker::new(&def, &store);
    let mut state = WalkState::new(false);
    walker.start(&mut state).await.unwrap();
    walker.step(&mut state, 1).await.unwrap();
    // Later due times: every receipt and ledger entry moves.
    h.pass(Duration::from_millis(50)).await;
    for i in 0..4 {
        repo.modify(&format!("w{i}"), |s| s.hits += 1)
            .await
            .unwrap();
    }
    while !state.is_done() {
        walker.step(&mut state, 1).await.unwrap();
    }
    assert!(state.drift.receipts.is_empty(), "{:?}", state.drift);
}

/// Concurrent read-modify-writes of one expiring record keep its receipt,
/// ledger entry, members and counters in step.
pub async fn concurrent_writes_keep_receipts_true<H: Harness>(h: &H) {
    let store = h.store();
    let repo = SessionRepo::new(store.clone());
    repo.create(&session("hot", "u0")).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..8 {
        let repo = repo.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..5 {
                repo.modify("hot", |s| {
                    s.user_id = format!("u{}", (t + i) % 3);
                    s.hits += 1;
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let live = repo.get("hot").await.unwrap().unwrap();
    assert_eq!(live.hits, 3 + 40);
    for u in 0..3 {
        let user = format!("u{u}");
        let mine = i64::from(live.user_id == user);
        assert_eq!(repo.count_per_user(&user).await.unwrap(), mine);
        assert_eq!(repo.sum_hits_per_user(&user).await.unwrap(), 43 * mine);
    }
    assert_eq!(
        members(&store, &ledger()).await,
        vec![SessionKeys::record("hot")]
    );
    // Maintenance futures are `Send`: they run on spawned tasks.
    let drift = {
        let repo = repo.clone();
        tokio::spawn(async move { repo.verify(10).await })
    };
    let drift = drift.await.unwrap().unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    let maintenance = {
        let repo = repo.clone();
        tokio::spawn(async move {
            repo.reconcile(10).await.unwrap();
            repo.sweep_expired(10).await.unwrap();
            repo.purge("absent").await.unwrap()
        })
    };
    assert!(!maintenance.await.unwrap());

    h.pass(Duration::from_millis(3_300)).await;
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 1);
    for u in 0..3 {
        assert_eq!(repo.count_per_user(&format!("u{u}")).await.unwrap(), 0);
        assert_eq!(repo.sum_hits_per_user(&format!("u{u}")).await.unwrap(), 0);
    }
}

/// A live record without a receipt (written before receipts existed) is
/// reported, and `reconcile` writes its receipt, so its expiry then
/// reaches its entries like any other.
pub async fn records_without_receipts_are_repaired<H: Harness>(h: &H) {
    let store = h.store();
    let repo = SessionRepo::new(store.clone());
    repo.create(&session("a", "u1")).await.unwrap();
    repo.create(&session("b", "u1")).await.unwrap();
    let mut b = Batch::new();
    b.delete(receipt("a")).delete(ledger());
    assert!(store.commit(b).await.unwrap().is_applied());
    let drift = repo.verify(10).await.unwrap();
    assert_eq!(
        drift.receipts,
        vec![SessionKeys::record("a"), SessionKeys::record("b")]
    );
    let drift = repo.reconcile(10).await.unwrap();
    assert_eq!(drift.receipts.len(), 2, "{drift:?}");
    let drift = repo.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");

    h.pass(Duration::from_millis(3_300)).await;
    let sweep = repo.sweep_expired(100).await.unwrap();
    assert_eq!(sweep.expired, 2, "{sweep:?}");
    assert_eq!(repo.count_per_user("u1").await.unwrap(), 0);
    assert!(members(&store, &SessionKeys::all()).await.is_empty());
    assert!(repo.verify(10).await.unwrap().is_clean());
}

/// Every write path of an expiring entity (create, upsert, create_many,
/// modify, try_modify, update) leaves a receipt, so expiry reaches what it
/// wrote; a key whose record expired is written again by each of them
/// without inheriting the old entries.
pub async fn every_write_path_keeps_receipts<H: Harness>(h: &H) {
    let store = h.store();
    let repo = SessionRepo::new(store.clone());
    repo.create(&session("c", "u1")).await.unwrap();
    assert!(repo.upsert(&session("up", "u1")).await.unwrap());
    assert!(!repo.upsert(&session("up", "u2")).await.unwrap());
    repo.create_many(&[
        session("m1", "u1"),
        session("m2", "u2"),
        session("m3", "u2"),
    ])
    .await
    .unwrap();
    repo.modify("m1", |s| s.hits += 1).await.unwrap();
    repo.try_modify("m2", |s| {
        s.user_id = "u1".into();
        Ok::<(), Error>(())
    })
    .await
    .unwrap();
    let mut c = session("c", "u2");
    c.hits = 10;
    repo.update(&c).await.unwrap();
    let drift = repo.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(members(&store, &ledger()).await.len(), 5);
    assert_eq!(repo.count_per_user("u1").await.unwrap(), 2);
    assert_eq!(repo.count_per_user("u2").await.unwrap(), 3);

    h.pass(Duration::from_millis(3_300)).await;
    // Written again after expiry, through each path, for another user.
    assert!(repo.upsert(&session("up", "u9")).await.unwrap());
    repo.create_many(&[session("m1", "u9")]).await.unwrap();
    // (A write may have swept some already: one in 8 takes a sweep step.)
    let sweep = repo.sweep_expired(100).await.unwrap();
    assert!(!sweep.more && sweep.expired <= 3, "{sweep:?}");
    for user in ["u1", "u2"] {
        assert_eq!(repo.count_per_user(user).await.unwrap(), 0, "{user}");
        assert_eq!(repo.sum_hits_per_user(user).await.unwrap(), 0, "{user}");
        assert!(
            members(&store, &SessionKeys::relation_user(user))
                .await
                .is_empty()
        );
    }
    assert_eq!(repo.count_per_user("u9").await.unwrap(), 2);
    assert_eq!(repo.count_all().await.unwrap(), 2);
    let drift = repo.verify(10).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
}
