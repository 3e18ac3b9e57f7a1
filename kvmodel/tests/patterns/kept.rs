//! `keep: on_expiry | always` on a counter: a counter that only counts.
//! The expiry sweep never takes a kept counter's amounts back, deletes
//! only when it is `on_expiry`; `verify` checks it against the lower bound
//! the live records give, and `reconcile` never lowers it (it raises one
//! found below that bound).

use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{Batch, KvEntity, Store, Timestamp};
use kvmodel_runtime::__private::{CounterKeep, Drift, KeptCounter, ModelDef, Walker};
use serde::{Deserialize, Serialize};

/// A click on a short link: the raw event expires at its own `ends`, its
/// counts stay. A case that does not wait for expiry sets no `ends`, so
/// nothing expires within it however loaded the machine (Redis's time is
/// real).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "kept", key = "click:{id}")]
#[kv(counter(name = live, group_by(link)))]
#[kv(counter(name = per_link, group_by(link), keep = "on_expiry"))]
#[kv(counter(name = ever, group_by(link), keep = "always"))]
#[kv(counter(name = bytes, sum = size, group_by(link), keep = "on_expiry", shards = 4))]
pub struct Click {
    pub id: String,
    pub link: String,
    pub size: u64,
    #[kv(expiry)]
    pub ends: Option<Timestamp>,
}

fn click(id: &str, link: &str) -> Click {
    Click {
        id: id.into(),
        link: link.into(),
        size: 10,
        ends: None,
    }
}

/// How long an expiring click lives, and how long a case waits for it.
const LIFE_MS: u64 = 2_000;
const PASS: Duration = Duration::from_millis(2_500);

/// A click that expires `LIFE_MS` after now on `store`'s clock.
async fn expiring_click<S: Store>(store: &S, id: &str, link: &str) -> Click {
    let now = store.now_ms().await.unwrap();
    let ends = Timestamp::from_unix_millis(i64::try_from(now + LIFE_MS).unwrap()).unwrap();
    Click {
        ends: Some(ends),
        ..click(id, link)
    }
}

/// The four counts of `link`: live, per_link, ever, bytes.
async fn counts<S: Store>(repo: &ClickRepo<S>, link: &str) -> (i64, i64, i64, i64) {
    (
        repo.count_live(link).await.unwrap(),
        repo.count_per_link(link).await.unwrap(),
        repo.count_ever(link).await.unwrap(),
        repo.sum_bytes(link).await.unwrap(),
    )
}

/// The kept counters a walk reported, as (key, at least, actual).
fn kept(drift: &Drift) -> Vec<(String, i128, i64)> {
    drift
        .kept
        .iter()
        .map(
            |KeptCounter {
                 key,
                 at_least,
                 actual,
             }| (key.clone(), *at_least, *actual),
        )
        .collect()
}

/// `Click` as the `kvmodel` command reads it: through the run-time model.
fn click_model() -> ModelDef {
    use kvmodel_runtime::__private::{
        CounterModel, EntityModel, FieldExpr, FieldModel, Scalar, Segment, TypeModel,
    };
    let mut ends = FieldModel::new("ends", TypeModel::Scalar(Scalar::Timestamp));
    ends.optional = true;
    let mut m = EntityModel::new(
        "Click",
        "kept",
        vec![Segment::lit("click"), Segment::field("id")],
    )
    .with_field(FieldModel::new("id", TypeModel::Scalar(Scalar::String)))
    .with_field(FieldModel::new("link", TypeModel::Scalar(Scalar::String)))
    .with_field(FieldModel::new("size", TypeModel::Scalar(Scalar::U64)))
    .with_field(ends);
    m.expiry = Some("ends".into());
    let counter = |name: &str, sum: bool, shards: u32, keep: CounterKeep| CounterModel {
        name: name.into(),
        group_by: vec![FieldExpr::Field("link".into())],
        sum: sum.then(|| "size".into()),
        shards,
        keep,
        since: 1,
    };
    m.counters = vec![
        counter("live", false, 1, CounterKeep::Follows),
        counter("per_link", false, 1, CounterKeep::OnExpiry),
        counter("ever", false, 1, CounterKeep::Always),
        counter("bytes", true, 4, CounterKeep::OnExpiry),
    ];
    ModelDef::new(m)
}

/// `verify` through the generated repository and through the run-time
/// model agree, and the drift is returned.
async fn verify_both<S: Store>(repo: &ClickRepo<S>, store: &S) -> Drift {
    let typed = repo.verify(7).await.unwrap();
    let def = click_model();
    let model = Walker::new(&def, store).run(false, 7).await.unwrap();
    assert_eq!(
        typed, model,
        "the generated code and the run-time model disagree"
    );
    typed
}

pub async fn a_kept_counter_keeps_its_count_after_the_expiry_sweep<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ClickRepo::new(store.clone());
    for i in 0..5 {
        let c = expiring_click(&store, &format!("c{i}"), "a").await;
        repo.create(&c).await.unwrap();
    }
    assert_eq!(counts(&repo, "a").await, (5, 5, 5, 50));
    h.pass(PASS).await;
    let sweep = repo.sweep_expired(100).await.unwrap();
    assert_eq!((sweep.expired, sweep.more), (5, false), "{sweep:?}");
    // The counter that follows the records is back to 0: the sweep ran.
    assert_eq!(counts(&repo, "a").await, (0, 5, 5, 50));
    assert_eq!(repo.sweep_expired(100).await.unwrap().expired, 0);
    assert_eq!(counts(&repo, "a").await, (0, 5, 5, 50));

    // Clean, and it says what it could only check from below.
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(
        kept(&drift),
        vec![
            (ClickKeys::counter_bytes("a"), 0, 50),
            (ClickKeys::counter_ever("a"), 0, 5),
            (ClickKeys::counter_per_link("a"), 0, 5),
        ]
    );
    // reconcile, which sweeps first and deletes counters no record counts
    // in, leaves them.
    let drift = repo.reconcile(7).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(counts(&repo, "a").await, (0, 5, 5, 50));

    // Counting goes on from there.
    repo.create(&click("c9", "a")).await.unwrap();
    assert_eq!(counts(&repo, "a").await, (1, 6, 6, 60));
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean(), "{drift:?}");
    assert!(kept(&drift).contains(&(ClickKeys::counter_per_link("a"), 1, 6)));
}

pub async fn a_kept_counter_outlives_a_verify_before_the_sweep<H: Harness>(h: &H) {
    // Expired but not swept yet: verify counts the expired writes as
    // present and the kept counters are no drift either way.
    let store = h.store();
    let repo = ClickRepo::new(store.clone());
    for i in 0..3 {
        let c = expiring_click(&store, &format!("c{i}"), "b").await;
        repo.create(&c).await.unwrap();
    }
    h.pass(PASS).await;
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean(), "{drift:?}");
    assert_eq!(drift.expired, 3);
    assert_eq!(counts(&repo, "b").await, (3, 3, 3, 30));
    repo.reconcile(7).await.unwrap();
    assert_eq!(counts(&repo, "b").await, (0, 3, 3, 30));
}

pub async fn a_delete_takes_back_only_from_counters_not_kept_on_delete<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ClickRepo::new(store.clone());
    for i in 0..4 {
        repo.create(&click(&format!("c{i}"), "a")).await.unwrap();
    }
    assert!(repo.delete("c0").await.unwrap());
    assert!(repo.delete("c1").await.unwrap());
    // `on_expiry` counters follow deletes; `always` keeps.
    assert_eq!(counts(&repo, "a").await, (2, 2, 4, 20));
    let drift = verify_both(&repo, &store).await;
    assert!(drift.is_clean(), "{drift:?}");
    assert!(kept(&drift).contains(&(ClickKeys::counter_ever("a"), 2, 4)));
    repo.reconcile(7).await.unwrap();
    assert_eq!(counts(&repo, "a").await, (2, 2, 4, 20));

    // An update that moves a record to another group moves every count.
    let mut moved = click("c2", "b");
    moved.size = 7;
    repo.update(&moved).await.unwrap();
    assert_eq!(counts(&repo, "a").await, (1, 1, 3, 10));
    assert_eq!(counts(&repo, "b").await, (1, 1, 1, 7));
    assert!(verify_both(&repo, &store).await.is_clean());
}

pub async fn verify_reports_a_kept_counter_below_its_records_and_reconcile_raises_it<H: Harness>(
    h: &H,
) {
    let store = h.store();
    let repo = ClickRepo::new(store.clone());
    for i in 0..4 {
        repo.create(&click(&format!("c{i}"), "a")).await.unwrap();
    }
    let key = ClickKeys::counter_ever("a");
    let mut b = Batch::new();
    b.incr(&key, -3);
    assert!(store.commit(b).await.unwrap().is_applied());

    let drift = verify_both(&repo, &store).await;
    assert!(!drift.is_clean());
    let found: Vec<_> = drift
        .counters
        .iter()
        .map(|c| (c.key.clone(), c.expected, c.actual, c.at_least))
        .collect();
    assert_eq!(found, vec![(key.clone(), 4, 1, true)]);

    let def = click_model();
    let repaired = Walker::new(&def, &store).run(true, 7).await.unwrap();
    assert_eq!(repaired.counters.len(), 1, "{repaired:?}");
    assert_eq!(repo.count_ever("a").await.unwrap(), 4);
    assert!(verify_both(&repo, &store).await.is_clean());
}

pub async fn reconcile_never_lowers_a_kept_counter<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ClickRepo::new(store.clone());
    repo.create(&click("c0", "a")).await.unwrap();
    // Above what the records add up to, in a group with records and in one
    // without; and the same on a counter that follows the records.
    let mut b = Batch::new();
    b.incr(ClickKeys::counter_per_link("a"), 100)
        .incr(ClickKeys::counter_ever("z"), 7)
        .incr(ClickKeys::counter_live("a"), 100)
        .incr(ClickKeys::counter_live("z"), 7);
    assert!(store.commit(b).await.unwrap().is_applied());

    let drift = verify_both(&repo, &store).await;
    let found: Vec<_> = drift
        .counters
        .iter()
        .map(|c| (c.key.clone(), c.expected, c.actual, c.at_least))
        .collect();
    assert_eq!(
        found,
        vec![
            (ClickKeys::counter_live("a"), 1, 101, false),
            (ClickKeys::counter_live("z"), 0, 7, false),
        ]
    );
    assert!(kept(&drift).contains(&(ClickKeys::counter_per_link("a"), 1, 101)));
    assert!(kept(&drift).contains(&(ClickKeys::counter_ever("z"), 0, 7)));

    // Through the generated code, then through the model: each repairs the
    // counters that follow the records and leaves the kept ones.
    repo.reconcile(7).await.unwrap();
    let def = click_model();
    Walker::new(&def, &store).run(true, 7).await.unwrap();
    assert_eq!(counts(&repo, "a").await, (1, 101, 1, 10));
    assert_eq!(counts(&repo, "z").await, (0, 0, 7, 0));
    assert!(verify_both(&repo, &store).await.is_clean());
}

pub async fn a_delete_in_a_transaction_keeps_what_a_delete_keeps<H: Harness>(h: &H) {
    let store = h.store();
    let repo = ClickRepo::new(store.clone());
    repo.create(&click("c0", "a")).await.unwrap();
    repo.create(&click("c1", "a")).await.unwrap();
    let tx = kvmodel::Transaction::new(store.clone());
    assert!(
        repo.in_tx(&tx)
            .delete(&ClickKeys::record("c0"))
            .await
            .unwrap()
    );
    repo.in_tx(&tx).create(&click("c2", "a")).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(counts(&repo, "a").await, (2, 2, 3, 20));
    assert!(verify_both(&repo, &store).await.is_clean());
}
