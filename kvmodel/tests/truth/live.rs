//! Maintenance on a store that is serving traffic: `reconcile` beside live
//! writers never adds drift, and maintenance run with an older schema (a
//! rolling deploy) or beside a record it cannot read changes nothing it
//! cannot judge.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kvmodel::conformance::Harness;
use kvmodel::{Batch, Error, KvEntity, Store};
use serde::{Deserialize, Serialize};

/// An item, as the running (second) version of a service writes it.
// Clippy reads `group_by(kind)` in two counters as a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "live", key = "item:{id}", version = 2, migrate_from = ItemV1)]
#[kv(index(name = "by_kind", fields(kind), order_by = n))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "per_kind", group_by(kind)))]
#[kv(counter(name = "n_per_kind", sum = n, group_by(kind)))]
#[kv(counter(name = "hot", group_by(kind), shards = 4))]
pub struct Item {
    pub id: String,
    #[kv(unique)]
    pub code: String,
    pub kind: String,
    pub n: i64,
    pub note: Option<String>,
}

/// The same entity as the previous version of the service declares it.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "live", key = "item:{id}", version = 1)]
#[kv(index(name = "by_kind", fields(kind), order_by = n))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "per_kind", group_by(kind)))]
#[kv(counter(name = "n_per_kind", sum = n, group_by(kind)))]
#[kv(counter(name = "hot", group_by(kind), shards = 4))]
pub struct ItemV1 {
    pub id: String,
    #[kv(unique)]
    pub code: String,
    pub kind: String,
    pub n: i64,
}

impl From<ItemV1> for Item {
    fn from(v: ItemV1) -> Self {
        Item {
            id: v.id,
            code: v.code,
            kind: v.kind,
            n: v.n,
            note: None,
        }
    }
}

const KINDS: [&str; 3] = ["a", "b", "c"];

fn item(i: u32) -> Item {
    Item {
        id: format!("i{i}"),
        code: format!("code-{i}"),
        kind: KINDS[(i % 3) as usize].to_owned(),
        n: i64::from(i % 7),
        note: None,
    }
}

/// How far the counters `drift` lists are off, in units.
fn units(drift: &kvmodel::Drift) -> i128 {
    drift
        .counters
        .iter()
        .map(|c| (c.expected - i128::from(c.actual)).abs())
        .sum()
}

/// Every counter of the entity as the repository reads it.
async fn counters<S: Store>(repo: &ItemRepo<S>) -> Vec<i64> {
    let mut out = vec![repo.count_total().await.unwrap()];
    for k in KINDS {
        out.push(repo.count_per_kind(k).await.unwrap());
        out.push(repo.sum_n_per_kind(k).await.unwrap());
        out.push(repo.count_hot(k).await.unwrap());
    }
    out
}

/// Four writers create, update and delete items for a fixed time while
/// `reconcile` and `verify` run in a loop beside them, after 10 units of
/// drift were injected by hand: no `verify` ever reports more than the 10
/// units, no run fails, and once the writers stop, `verify` is clean. On a
/// store that shows one instant (memory, redb) the loop's own runs repaired
/// the drift; on one that does not (Redis, Redis Cluster), a counter that
/// writers kept moving is reported unsettled instead of being guessed, so
/// one more `reconcile` in the quiet finishes it.
pub async fn reconcile_beside_writers_adds_no_drift<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ItemRepo::new(store.clone());
    for i in 0..120 {
        repo.create(&item(i)).await.unwrap();
    }
    let mut b = Batch::new();
    b.incr(ItemKeys::counter_total(), 3)
        .incr(ItemKeys::counter_per_kind("a"), -2)
        .incr(ItemKeys::counter_n_per_kind("b"), 5);
    assert!(store.commit(b).await.unwrap().is_applied());
    let injected = units(&repo.verify(50).await.unwrap());
    assert_eq!(injected, 10);

    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4u32 {
        let (repo, stop) = (repo.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(u64::from(w) + 7);
            let mut ops = 0;
            while !stop.load(Ordering::Relaxed) && ops < 5_000 {
                ops += 1;
                let i = rng.u32(0..160);
                let id = format!("i{i}");
                let done = match rng.u32(0..3) {
                    0 => {
                        // Records written at different times differ, as
                        // real ones do (a stamp, a note).
                        let note = Some(format!("w{w}-{ops}"));
                        repo.create(&Item { note, ..item(i) }).await.map(|_| ())
                    }
                    1 => {
                        let kind = KINDS[rng.usize(0..3)];
                        let n = rng.i64(0..9);
                        repo.modify(&id, |it| {
                            it.kind = kind.to_owned();
                            it.n = n;
                        })
                        .await
                        .map(|_| ())
                    }
                    _ => repo.delete(&id).await.map(|_| ()),
                };
                match done {
                    Ok(()) | Err(Error::NotFound { .. } | Error::AlreadyExists { .. }) => {}
                    Err(e) => panic!("writer {w}: {e}"),
                }
            }
        }));
    }
    let started = Instant::now();
    let mut runs = 0;
    while runs < 2 || started.elapsed() < Duration::from_millis(1_500) {
        let fixed = repo.reconcile(40).await.unwrap();
        assert!(units(&fixed) <= injected, "reconcile measured {fixed:?}");
        let seen = repo.verify(40).await.unwrap();
        assert!(units(&seen) <= injected, "verify beside writers: {seen:?}");
        assert!(
            seen.missing_claims.is_empty()
                && seen.missing_members.is_empty()
                && seen.orphan_claims.is_empty()
                && seen.orphan_members.is_empty(),
            "verify reported a write in flight: {seen:?}"
        );
        runs += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    if store.snapshot().await.unwrap().is_none() {
        let last = repo.reconcile(40).await.unwrap();
        assert!(units(&last) <= injected, "{last:?}");
    }
    let after = repo.verify(40).await.unwrap();
    assert!(
        after.is_clean(),
        "after {runs} runs beside writers: {after:?}"
    );
}

/// The service runs version 2 while an older deployment's maintenance
/// (version 1) walks the store: it cannot read the version 2 records, so it
/// leaves every counter, claim and member as it is, and says why. The
/// current schema's maintenance beside one record that does not decode
/// does not lower its group's counters either.
pub async fn maintenance_changes_nothing_it_cannot_judge<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ItemRepo::new(store.clone());
    for i in 0..9 {
        repo.create(&item(i)).await.unwrap();
    }
    let before = counters(&repo).await;
    assert_eq!(before[0], 9);

    let old = ItemV1Repo::new(store.clone());
    for _ in 0..2 {
        let drift = old.reconcile(4).await.unwrap();
        assert_eq!(drift.undecodable.len(), 9, "{drift:?}");
        assert!(
            drift
                .undecodable
                .iter()
                .all(|s| matches!(*s.error, Error::FutureVersion { .. })),
            "{drift:?}"
        );
        assert!(drift.counters.is_empty(), "{drift:?}");
        assert!(!drift.unsettled.is_empty(), "{drift:?}");
        assert!(drift.orphan_claims.is_empty() && drift.orphan_members.is_empty());
        assert_eq!(
            counters(&repo).await,
            before,
            "an older schema changed counters"
        );
        assert!(repo.verify(4).await.unwrap().is_clean());
    }

    // One record that no longer decodes, in a group with others.
    let bad = ItemKeys::record("i0");
    let mut b = Batch::new();
    b.put(&bad, b"\x01not a record".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
    let drift = repo.reconcile(4).await.unwrap();
    assert_eq!(drift.undecodable.len(), 1, "{drift:?}");
    assert!(drift.counters.is_empty(), "{drift:?}");
    assert_eq!(
        counters(&repo).await,
        before,
        "an unreadable record lowered a counter"
    );
    let drift = repo.verify(4).await.unwrap();
    assert_eq!(drift.undecodable.len(), 1, "{drift:?}");
    assert!(drift.counters.is_empty(), "{drift:?}");
}

/// A walk that read its stamps more than half a stamp's afterlife ago (a
/// saved walk resumed a day later), or that cannot tell when (saved by a
/// version that did not keep the time), judges no counter by them: the
/// drift of a counter nothing moved is reported unsettled, where a fresh
/// walk measures it. A store that shows one instant judges it either way.
pub async fn a_walk_trusts_stamps_for_half_their_afterlife<H: Harness>(h: &H) {
    use kvmodel_runtime::__private::{Typed, WalkState, Walker};
    use kvmodel_runtime::store::counter::STAMP_AFTERLIFE;

    let store = h.store();
    let repo = ItemRepo::new(store.clone());
    for i in [1, 4, 7] {
        repo.create(&item(i)).await.unwrap();
    }
    let per_b = ItemKeys::counter_per_kind("b");
    let mut b = Batch::new();
    b.incr(&per_b, 2);
    assert!(store.commit(b).await.unwrap().is_applied());
    let judged_now = store.snapshot().await.unwrap().is_some();

    let def = Typed::<Item>::new();
    // Read a day ago, then as a walker saved before its time was kept.
    let half = STAMP_AFTERLIFE.as_millis() as u64 / 2;
    let olds: [&dyn Fn(u64) -> serde_json::Value; 2] =
        [&|at| serde_json::json!(at - half), &|_| {
            serde_json::Value::Null
        }];
    for old in olds {
        let mut state = WalkState::new(false);
        Walker::new(&def, &store).start(&mut state).await.unwrap();
        let mut aged = false;
        while !state.is_done() {
            let mut saved = serde_json::to_value(&state).unwrap();
            if let Some(at) = saved.get_mut("stamps_at").filter(|at| !at.is_null())
                && !aged
            {
                *at = old(at.as_u64().unwrap());
                aged = true;
            }
            state = serde_json::from_value(saved).unwrap();
            Walker::new(&def, &store)
                .step(&mut state, 10)
                .await
                .unwrap();
        }
        assert_eq!(aged, !judged_now, "stamps read: {aged}");
        if judged_now {
            assert_eq!(units(&state.drift), 2, "{:?}", state.drift);
        } else {
            assert_eq!(units(&state.drift), 0, "{:?}", state.drift);
            assert!(
                state.drift.unsettled.iter().any(|u| u.key == per_b),
                "{:?}",
                state.drift
            );
        }
    }
    // A fresh walk judges it.
    assert_eq!(units(&repo.reconcile(10).await.unwrap()), 2);
    assert!(repo.verify(10).await.unwrap().is_clean());
}

/// A counter removed and made again within its stamp's afterlife: where
/// counters are judged by change stamps (Redis, Redis Cluster, DynamoDB)
/// its stamp reads as removed, so its drift is reported unsettled, never
/// guessed; once the afterlife has passed (on the store whose clock a test
/// moves) and a write started the stamp again, the counter is judged and
/// repaired again.
/// A store that shows one instant judges it at once.
pub async fn a_counter_made_again_is_judged_once_its_old_stamp_has_gone<H: Harness>(h: &H) {
    use kvmodel_runtime::store::counter::{REMOVED_STAMP, STAMP_AFTERLIFE};

    let store = h.store();
    let repo = ItemRepo::new(store.clone());
    for i in [0, 3, 6] {
        repo.create(&item(i)).await.unwrap();
    }
    let per_a = ItemKeys::counter_per_kind("a");
    // Removed (as `reconcile` or a cascade removes counters), then moved
    // again by one more record: it holds 1 where the records say 4.
    let mut b = Batch::new();
    b.delete(&per_a);
    assert!(store.commit(b).await.unwrap().is_applied());
    repo.create(&item(9)).await.unwrap();
    assert_eq!(repo.count_per_kind("a").await.unwrap(), 1);
    let judged_now = store.snapshot().await.unwrap().is_some();
    let stamps = store
        .change_stamps(std::slice::from_ref(&per_a))
        .await
        .unwrap();
    assert_eq!(stamps.is_none(), judged_now, "{stamps:?}");
    if let Some(stamps) = &stamps {
        assert!(stamps[0] >= REMOVED_STAMP, "{stamps:?}");
    }

    let drift = repo.verify(10).await.unwrap();
    if judged_now {
        assert_eq!(units(&drift), 3, "{drift:?}");
    } else {
        assert_eq!(units(&drift), 0, "{drift:?}");
        assert!(
            drift.unsettled.iter().any(|u| u.key == per_a),
            "a removed counter's stamp proved nothing moved: {drift:?}"
        );
        // Redis keeps real time: the afterlife (a day) cannot be waited
        // out here; its stamp goes by the TTL every value has
        // (`stores`' `a_removed_counters_stamp_goes_by_its_ttl`).
        if matches!(store.backend(), "redis" | "redis-cluster") {
            return;
        }
        // DynamoDB: past its expiry the stamp still proves nothing while
        // it is stored (a writer whose clock is behind could still move
        // it); the first write past its expiry starts it again.
        h.pass(STAMP_AFTERLIFE + Duration::from_secs(1)).await;
        let stamps = store
            .change_stamps(std::slice::from_ref(&per_a))
            .await
            .unwrap()
            .unwrap();
        assert!(stamps[0] >= REMOVED_STAMP, "{stamps:?}");
        assert_eq!(units(&repo.verify(10).await.unwrap()), 0);
        repo.create(&item(12)).await.unwrap();
        let stamps = store
            .change_stamps(std::slice::from_ref(&per_a))
            .await
            .unwrap();
        assert_eq!(
            stamps,
            Some(vec![1]),
            "a write past its expiry starts it again"
        );
        let drift = repo.verify(10).await.unwrap();
        assert_eq!(units(&drift), 3, "{drift:?}");
    }
    let fixed = repo.reconcile(10).await.unwrap();
    assert_eq!(units(&fixed), 3, "{fixed:?}");
    let records = if judged_now { 4 } else { 5 };
    assert_eq!(repo.count_per_kind("a").await.unwrap(), records);
    assert!(repo.verify(10).await.unwrap().is_clean());
}
