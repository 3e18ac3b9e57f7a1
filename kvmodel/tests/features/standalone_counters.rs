//! Standalone counters (`#[derive(KvCounter)]`, a schema's namespace-level
//! `counters:`) on every backend: exact under concurrent increments, reset
//! in one commit, expiring `ttl` after the last increment, refusing an
//! overflow with nothing written, and keys no field value can make meet
//! another counter's or an entity's.

use std::time::Duration;

use kvmodel::conformance::Harness;
use kvmodel::{KvCounter, KvEntity, Store};
use kvmodel_runtime::__private::{ModelDef, Walker, key::shard_key};
use serde::{Deserialize, Serialize};

/// Page views per page and day, spread over 4 keys, kept a day after the
/// last view (no case waits that long).
#[derive(Debug, Clone, PartialEq, Eq, KvCounter)]
#[kv(namespace = "site", key = "views:{page}:{day}", ttl = "1d", shards = 4)]
pub struct PageViews {
    pub page: String,
    pub day: String,
}

/// Visits per page: one key, no TTL.
#[derive(Debug, Clone, PartialEq, Eq, KvCounter)]
#[kv(namespace = "site", key = "visits:{page}")]
pub struct Visits {
    pub page: String,
}

/// Sign-ins per user, forgotten 4 s after the last one: long enough that a
/// loaded machine reads it alive 2.5 s after an increment.
#[derive(Debug, Clone, PartialEq, Eq, KvCounter)]
#[kv(namespace = "site", key = "signins:{user}", ttl = "4s", shards = 3)]
pub struct Signins {
    pub user: String,
}

/// One counter for the whole site.
#[derive(Debug, Clone, PartialEq, Eq, KvCounter)]
#[kv(namespace = "site", key = "total")]
pub struct Total {}

/// An entity whose key template has the very shape of `PageViews`'s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "site", key = "views:{page}:{day}")]
#[kv(counter(name = per_page, group_by(page)))]
pub struct View {
    pub page: String,
    pub day: String,
}

/// `View` as the `kvmodel` command reads it: through the run-time model.
fn view_model() -> ModelDef {
    use kvmodel_runtime::__private::CounterKeep;
    use kvmodel_runtime::__private::{
        CounterModel, EntityModel, FieldExpr, FieldModel, Scalar, Segment, TypeModel,
    };
    let mut m = EntityModel::new(
        "View",
        "site",
        vec![
            Segment::lit("views"),
            Segment::field("page"),
            Segment::field("day"),
        ],
    )
    .with_field(FieldModel::new("page", TypeModel::Scalar(Scalar::String)))
    .with_field(FieldModel::new("day", TypeModel::Scalar(Scalar::String)));
    m.counters = vec![CounterModel {
        name: "per_page".into(),
        group_by: vec![FieldExpr::Field("page".into())],
        sum: None,
        shards: 1,
        keep: CounterKeep::Follows,
        since: 1,
    }];
    ModelDef::new(m)
}

pub async fn concurrent_increments_sum_exactly<H: Harness>(h: &H) {
    let store = h.store();
    let mut tasks = Vec::new();
    for t in 0..16i64 {
        let views = PageViews::counter(store.clone());
        let visits = VisitsCounter::new(store.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..20i64 {
                views.incr("home", "2026-11-27", t + i).await.unwrap();
                visits.incr("home", 1).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Σ over t of Σ over i of (t + i) = 20·Σt + 16·Σi.
    let expected = 20 * (0..16).sum::<i64>() + 16 * (0..20).sum::<i64>();
    let views = PageViews::counter(store.clone());
    assert_eq!(views.get("home", "2026-11-27").await.unwrap(), expected);
    assert_eq!(
        VisitsCounter::new(store.clone()).get("home").await.unwrap(),
        320
    );
    // The writes went to more than one shard, and the shards add up.
    let key = PageViews {
        page: "home".into(),
        day: "2026-11-27".into(),
    }
    .key();
    let shards: Vec<String> = (0..4).map(|i| shard_key(&key, i)).collect();
    let values = store.get_many(&shards).await.unwrap();
    assert!(
        values.iter().filter(|v| v.is_some()).count() > 1,
        "{values:?}"
    );
    let sum: i64 = values
        .iter()
        .flatten()
        .map(|v| std::str::from_utf8(v).unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(sum, expected);
    // Other keys are untouched.
    assert_eq!(views.get("home", "2026-11-28").await.unwrap(), 0);
}

pub async fn reset_removes_every_shard_in_one_commit<H: Harness>(h: &H) {
    let store = h.store();
    let views = PageViews::counter(store.clone());
    for i in 0..40 {
        views.incr("a", "d", i).await.unwrap();
    }
    views.incr("b", "d", 7).await.unwrap();
    assert_eq!(views.get("a", "d").await.unwrap(), (0..40).sum::<i64>());
    views.reset("a", "d").await.unwrap();
    assert_eq!(views.get("a", "d").await.unwrap(), 0);
    let key = PageViews {
        page: "a".into(),
        day: "d".into(),
    }
    .key();
    let shards: Vec<String> = (0..4).map(|i| shard_key(&key, i)).collect();
    assert!(
        store
            .get_many(&shards)
            .await
            .unwrap()
            .iter()
            .all(Option::is_none)
    );
    // Only that counter.
    assert_eq!(views.get("b", "d").await.unwrap(), 7);
    // It counts again from 0, and a counter without key fields works alike.
    views.incr("a", "d", 3).await.unwrap();
    assert_eq!(views.get("a", "d").await.unwrap(), 3);
    let total = Total::counter(store.clone());
    total.incr(5).await.unwrap();
    total.incr(-2).await.unwrap();
    assert_eq!(total.get().await.unwrap(), 3);
    total.reset().await.unwrap();
    assert_eq!(total.get().await.unwrap(), 0);
}

pub async fn a_counter_expires_its_ttl_after_the_last_increment<H: Harness>(h: &H) {
    let store = h.store();
    let signins = Signins::counter(store.clone());
    for _ in 0..12 {
        signins.incr("ann", 1).await.unwrap();
    }
    signins.incr("bob", 1).await.unwrap();
    h.pass(Duration::from_millis(2_500)).await;
    // An increment sets every shard's TTL again, the ones it did not write too.
    signins.incr("ann", 1).await.unwrap();
    h.pass(Duration::from_millis(2_500)).await;
    assert_eq!(
        signins.get("ann").await.unwrap(),
        13,
        "alive 2.5 s after its last increment"
    );
    assert_eq!(
        signins.get("bob").await.unwrap(),
        0,
        "gone 5 s after its last increment"
    );
    h.pass(Duration::from_millis(2_500)).await;
    assert_eq!(signins.get("ann").await.unwrap(), 0);
    let key = Signins { user: "ann".into() }.key();
    let shards: Vec<String> = (0..3).map(|i| shard_key(&key, i)).collect();
    assert!(
        store
            .get_many(&shards)
            .await
            .unwrap()
            .iter()
            .all(Option::is_none)
    );
    // A counter without a TTL never expires.
    let visits = Visits::counter(store.clone());
    visits.incr("p", 2).await.unwrap();
    h.pass(Duration::from_millis(10)).await;
    assert_eq!(visits.get("p").await.unwrap(), 2);
}

pub async fn an_overflow_is_refused_and_writes_nothing<H: Harness>(h: &H) {
    let store = h.store();
    let visits = Visits::counter(store.clone());
    visits.incr("p", i64::MAX - 1).await.unwrap();
    let refused = visits.incr("p", 2).await;
    assert!(
        matches!(refused, Err(kvmodel::Error::InvalidBatch { .. })),
        "{refused:?}"
    );
    assert_eq!(visits.get("p").await.unwrap(), i64::MAX - 1);
    visits.incr("p", 1).await.unwrap();
    assert_eq!(visits.get("p").await.unwrap(), i64::MAX);
    // A shard of a sharded counter stays within its share of 64 bits, so
    // the total can always be read.
    let views = PageViews::counter(store.clone());
    let refused = views.incr("p", "d", i64::MAX / 4 + 1).await;
    assert!(
        matches!(refused, Err(kvmodel::Error::InvalidBatch { .. })),
        "{refused:?}"
    );
    assert_eq!(views.get("p", "d").await.unwrap(), 0);
    let key = PageViews {
        page: "p".into(),
        day: "d".into(),
    }
    .key();
    let shards: Vec<String> = (0..4).map(|i| shard_key(&key, i)).collect();
    assert!(
        store
            .get_many(&shards)
            .await
            .unwrap()
            .iter()
            .all(Option::is_none)
    );
}

pub async fn field_values_never_make_keys_meet<H: Harness>(h: &H) {
    let store = h.store();
    let views = PageViews::counter(store.clone());
    let visits = Visits::counter(store.clone());
    // Pairs that would meet if components were joined unescaped, tried
    // hash-tag and shard spellings, and a page that spells another
    // counter's key.
    let pairs = [
        ("a:b", "c"),
        ("a", "b:c"),
        ("a}", "{b"),
        ("a", "b}#1"),
        ("a", "b#1"),
        ("x", "y#tally:{z}"),
        ("%3A", "c"),
        (":", ""),
        ("", ":"),
        ("visits", "home"),
    ];
    for (i, (p, d)) in pairs.iter().enumerate() {
        views.incr(p, d, 1 << i).await.unwrap();
    }
    for page in ["home", "a:b", "}x{", "home}#2"] {
        visits.incr(page, 1000).await.unwrap();
    }
    let view = ViewRepo::new(store.clone());
    view.create(&View {
        page: "a:b".into(),
        day: "c".into(),
    })
    .await
    .unwrap();
    view.create(&View {
        page: "x".into(),
        day: "y#tally:{z}".into(),
    })
    .await
    .unwrap();
    for (i, (p, d)) in pairs.iter().enumerate() {
        assert_eq!(views.get(p, d).await.unwrap(), 1 << i, "{p:?} {d:?}");
    }
    for page in ["home", "a:b", "}x{", "home}#2"] {
        assert_eq!(visits.get(page).await.unwrap(), 1000, "{page:?}");
    }
    let mut keys: Vec<String> = pairs
        .iter()
        .map(|(p, d)| {
            PageViews {
                page: (*p).into(),
                day: (*d).into(),
            }
            .key()
        })
        .collect();
    keys.push(
        Visits {
            page: "home".into(),
        }
        .key(),
    );
    keys.push(ViewKeys::record("a:b", "c"));
    keys.push(ViewKeys::counter_per_page("a:b"));
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "{keys:?}");
    // The entity's records and counters are its own, and a walk of its keys
    // (which meets the counters' keys of the same key space) finds nothing
    // amiss and repairs nothing.
    assert_eq!(view.count_per_page("a:b").await.unwrap(), 1);
    assert!(view.get("a:b", "c").await.unwrap().is_some());
    let typed = view.verify(100).await.unwrap();
    assert!(typed.is_clean(), "{typed:?}");
    // The `kvmodel` command walks through the run-time model: the same.
    let def = view_model();
    let walked = Walker::new(&def, &store).run(false, 100).await.unwrap();
    assert_eq!(typed, walked);
    let repaired = Walker::new(&def, &store).run(true, 100).await.unwrap();
    assert!(repaired.is_clean(), "{repaired:?}");
    let repaired = view.reconcile(100).await.unwrap();
    assert!(repaired.is_clean(), "{repaired:?}");
    for (i, (p, d)) in pairs.iter().enumerate() {
        assert_eq!(views.get(p, d).await.unwrap(), 1 << i, "{p:?} {d:?}");
    }
}

kvmodel_runtime::on_every_backend!(
    concurrent_increments_sum_exactly,
    reset_removes_every_shard_in_one_commit,
    a_counter_expires_its_ttl_after_the_last_increment,
    an_overflow_is_refused_and_writes_nothing,
    field_values_never_make_keys_meet,
);
