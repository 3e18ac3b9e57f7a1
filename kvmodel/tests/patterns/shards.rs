//! `shards: N` on a counter: each write adds to one of N keys, a read sums
//! them in one round trip, and `verify`/`reconcile` treat them as one
//! counter.

use kvmodel::conformance::{CountingStore, Harness};
use kvmodel::{Batch, KvEntity, Store};
use kvmodel_runtime::__private::{cost::Access, key::shard_key};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shard", key = "like:{post_id}:{user_id}")]
#[kv(counter(name = per_post, group_by(post_id), shards = 16))]
#[kv(counter(name = total, shards = 4))]
#[kv(counter(name = weight, sum = weight, group_by(post_id), shards = 8))]
pub struct Like {
    pub post_id: String,
    pub user_id: String,
    pub weight: i64,
}

/// The same records with a counter of one key, as before `shards` was
/// declared: the same key space, so both types read one store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shard", key = "like:{post_id}:{user_id}")]
#[kv(counter(name = per_post, group_by(post_id)))]
pub struct PlainLike {
    pub post_id: String,
    pub user_id: String,
    pub weight: i64,
}

fn like(post: &str, user: &str) -> Like {
    Like {
        post_id: post.into(),
        user_id: user.into(),
        weight: 2,
    }
}

/// The values of the 16 shards of `post`'s `per_post` counter.
async fn shard_values<S: Store>(s: &S, post: &str) -> Vec<Option<i64>> {
    let keys: Vec<String> = (0..16)
        .map(|i| shard_key(&LikeKeys::counter_per_post(post), i))
        .collect();
    s.get_many(&keys)
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.map(|b| String::from_utf8(b).unwrap().parse().unwrap()))
        .collect()
}

pub async fn a_hot_sharded_counter_is_exact_under_concurrent_creates<H: Harness>(h: &H) {
    let store = h.store();
    let mut tasks = Vec::new();
    for t in 0..16 {
        let repo = LikeRepo::new(store.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                repo.create(&like("hot", &format!("u{t}-{i}")))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let repo = LikeRepo::new(store.clone());
    assert_eq!(repo.count_per_post("hot").await.unwrap(), 160);
    assert_eq!(repo.count_total().await.unwrap(), 160);
    assert_eq!(repo.sum_weight("hot").await.unwrap(), 320);
    // The writes went to several keys, which add up to the count.
    let shards = shard_values(&store, "hot").await;
    assert!(
        shards.iter().filter(|v| v.is_some()).count() > 1,
        "160 writes all went to one shard: {shards:?}"
    );
    assert_eq!(shards.iter().flatten().sum::<i64>(), 160);
    // Deletes take back from any shard; the sum stays exact.
    for i in 0..10 {
        assert!(repo.delete("hot", &format!("u3-{i}")).await.unwrap());
    }
    assert_eq!(repo.count_per_post("hot").await.unwrap(), 150);
    assert_eq!(repo.sum_weight("hot").await.unwrap(), 300);
    assert!(repo.verify(50).await.unwrap().is_clean());
}

pub async fn a_sharded_read_is_one_store_call<H: Harness>(h: &H) {
    let store = CountingStore::new(h.store());
    let repo = LikeRepo::new(store.clone());
    for u in 0..20 {
        repo.create(&like("p", &format!("u{u}"))).await.unwrap();
    }
    let before = store.calls();
    assert_eq!(repo.count_per_post("p").await.unwrap(), 20);
    assert_eq!(
        store.calls() - before,
        u64::from(Access::ReadShardedCounter.calls())
    );
    assert_eq!(Access::ReadShardedCounter.round_trips(), 1);
}

pub async fn verify_and_reconcile_treat_the_shards_as_one_counter<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LikeRepo::new(store.clone());
    for u in 0..20 {
        repo.create(&like("p", &format!("u{u}"))).await.unwrap();
    }
    assert!(repo.verify(7).await.unwrap().is_clean());
    let counter = LikeKeys::counter_per_post("p");
    // A shard set off by hand: the counter, not the shard, has drifted.
    let mut b = Batch::new();
    b.incr(shard_key(&counter, 5), 3);
    // Shards of a post without likes: one counter that must be 0.
    let empty = LikeKeys::counter_per_post("gone");
    b.incr(shard_key(&empty, 7), 2)
        .incr(shard_key(&empty, 0), 1);
    // A shard beyond the 16 declared is read by nobody: it must be 0.
    let beyond = shard_key(&counter, 40);
    b.incr(&beyond, 5);
    let _ = store.commit(b).await.unwrap();
    assert_eq!(repo.count_per_post("p").await.unwrap(), 23);
    let drift = repo.verify(7).await.unwrap();
    let mut found: Vec<(String, i128, i64)> = drift
        .counters
        .iter()
        .map(|c| (c.key.clone(), c.expected, c.actual))
        .collect();
    found.sort();
    let mut want = vec![
        (counter.clone(), 20, 23),
        (empty.clone(), 0, 3),
        (beyond.clone(), 0, 5),
    ];
    want.sort();
    assert_eq!(found, want);
    let fixed = repo.reconcile(7).await.unwrap();
    assert_eq!(fixed.counters.len(), 3);
    assert!(repo.verify(7).await.unwrap().is_clean());
    assert_eq!(repo.count_per_post("p").await.unwrap(), 20);
    assert_eq!(repo.count_per_post("gone").await.unwrap(), 0);
    assert!(
        shard_values(&store, "gone")
            .await
            .iter()
            .all(Option::is_none)
    );
    assert_eq!(store.get(&beyond).await.unwrap(), None);
}

pub async fn a_counter_that_becomes_sharded_keeps_its_count<H: Harness>(h: &H) {
    let store = h.store();
    let plain = PlainLikeRepo::new(store.clone());
    for u in 0..5 {
        plain
            .create(&PlainLike {
                post_id: "p".into(),
                user_id: format!("u{u}"),
                weight: 1,
            })
            .await
            .unwrap();
    }
    assert_eq!(plain.count_per_post("p").await.unwrap(), 5);
    let sharded = LikeRepo::new(store.clone());
    assert_eq!(sharded.count_per_post("p").await.unwrap(), 5);
    for u in 5..40 {
        sharded.create(&like("p", &format!("u{u}"))).await.unwrap();
    }
    assert_eq!(sharded.count_per_post("p").await.unwrap(), 40);
}

/// `Like` as the `kvmodel` command reads it: through the run-time model.
fn like_model() -> kvmodel_runtime::__private::ModelDef {
    use kvmodel_runtime::__private::{
        CounterModel, EntityModel, FieldExpr, FieldModel, Scalar, Segment, TypeModel,
    };
    let mut m = EntityModel::new(
        "Like",
        "shard",
        vec![
            Segment::lit("like"),
            Segment::field("post_id"),
            Segment::field("user_id"),
        ],
    )
    .with_field(FieldModel::new(
        "post_id",
        TypeModel::Scalar(Scalar::String),
    ))
    .with_field(FieldModel::new(
        "user_id",
        TypeModel::Scalar(Scalar::String),
    ))
    .with_field(FieldModel::new("weight", TypeModel::Scalar(Scalar::I64)));
    let counter = |name: &str, group: bool, sum: bool, shards: u32| CounterModel {
        name: name.into(),
        group_by: if group {
            vec![FieldExpr::Field("post_id".into())]
        } else {
            Vec::new()
        },
        sum: sum.then(|| "weight".into()),
        shards,
        keep: kvmodel_runtime::__private::CounterKeep::Follows,
        since: 1,
    };
    m.counters = vec![
        counter("per_post", true, false, 16),
        counter("total", false, false, 4),
        counter("weight", true, true, 8),
    ];
    kvmodel_runtime::__private::ModelDef::new(m)
}

pub async fn the_model_walk_treats_the_shards_as_one_counter<H: Harness>(h: &H) {
    use kvmodel_runtime::__private::Walker;
    let store = h.store();
    let repo = LikeRepo::new(store.clone());
    for u in 0..30 {
        repo.create(&like("p", &format!("u{u}"))).await.unwrap();
    }
    let def = like_model();
    let walker = Walker::new(&def, &store);
    assert!(walker.run(false, 7).await.unwrap().is_clean());
    let counter = LikeKeys::counter_total();
    let mut b = Batch::new();
    b.incr(shard_key(&counter, 3), -2);
    let _ = store.commit(b).await.unwrap();
    let drift = walker.run(false, 7).await.unwrap();
    let found: Vec<_> = drift
        .counters
        .iter()
        .map(|c| (c.key.clone(), c.expected, c.actual))
        .collect();
    assert_eq!(found, vec![(counter, 30, 28)]);
    assert_eq!(walker.run(true, 7).await.unwrap().counters.len(), 1);
    assert!(walker.run(false, 7).await.unwrap().is_clean());
    assert_eq!(repo.count_total().await.unwrap(), 30);
}

/// A sharded sum near the edge of 64 bits: every shard stays within its
/// share, so a write that would take one past it is refused with nothing
/// written, and the total is readable after every write that lands (as a
/// counter of one key refuses the write that would overflow it). A total
/// made unreadable by hand is reported by `verify` and brought back by
/// `reconcile`, spread over the shards.
pub async fn a_sharded_sum_at_the_edge_is_refused_never_unreadable<H: Harness>(h: &H) {
    let store = h.store();
    let repo = LikeRepo::new(store.clone());
    let share = i64::MAX / 8;
    let mut refused = 0;
    for i in 0..12 {
        let big = Like {
            weight: share / 2 + 1,
            ..like("edge", &format!("u{i}"))
        };
        match repo.create(&big).await {
            Ok(()) => {}
            Err(kvmodel::Error::InvalidBatch { reason, .. }) => {
                assert!(reason.contains("sharded counter"), "{reason}");
                assert_eq!(repo.get("edge", &format!("u{i}")).await.unwrap(), None);
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
        // Readable after every write, whatever landed.
        let sum = repo.sum_weight("edge").await.unwrap();
        assert!(sum > 0);
    }
    assert!(refused > 0, "no write met the limit of a shard");
    assert!(repo.verify(10).await.unwrap().is_clean());

    // Shards that add up to more than a read returns, written by hand.
    let key = LikeKeys::counter_weight("hand");
    let mut b = Batch::new();
    b.incr(shard_key(&key, 1), i64::MAX)
        .incr(shard_key(&key, 2), i64::MAX);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert!(repo.sum_weight("hand").await.is_err());
    let drift = repo.verify(10).await.unwrap();
    assert!(
        drift
            .counters
            .iter()
            .any(|c| c.key == key && c.expected == 0),
        "{drift:?}"
    );
    repo.reconcile(10).await.unwrap();
    assert_eq!(repo.sum_weight("hand").await.unwrap(), 0);
    repo.create(&like("hand", "a")).await.unwrap();
    assert_eq!(repo.sum_weight("hand").await.unwrap(), 2);
    assert!(repo.verify(10).await.unwrap().is_clean());
}
