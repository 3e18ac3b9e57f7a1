//! Delete plans on Redis (`RedisStoreBuilder::delete_plans`): every write
//! of a record whose delete needs only its entries stores the batch that
//! deletes them beside it, so that a delete is one round trip; a plan that no longer fits its record (the
//! record rewritten by a writer that keeps none, a plan written under
//! another schema or tampered with, a record that has links) is never
//! used, and the delete goes the usual way, with the same result.

use kvmodel::conformance::{Harness, RedisHarness};
use kvmodel::{Batch, KvEntity, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "dp", key = "member:{id}")]
#[kv(index(name = "by_plan", fields(plan), order_by = credits))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "per_plan", group_by(plan)))]
struct Member {
    id: u64,
    #[kv(unique, normalize = "lowercase")]
    email: String,
    plan: String,
    credits: i64,
}

/// A store on `h`'s server that keeps delete plans.
async fn planning(h: &RedisHarness) -> kvmodel::RedisStore {
    kvmodel::RedisStore::builder(&h.server().url())
        .delete_plans(true)
        .connect()
        .await
        .unwrap()
}

fn member(id: u64, email: &str, plan: &str) -> Member {
    Member {
        id,
        email: email.into(),
        plan: plan.into(),
        credits: i64::try_from(id).unwrap() * 10,
    }
}

/// What the records of `Member` derive, read back: the claim of each
/// e-mail, the members of each plan's index, the counters.
async fn derived(
    store: &kvmodel::RedisStore,
    emails: &[&str],
    plans: &[&str],
) -> (Vec<Option<Vec<u8>>>, Vec<usize>, i64, Vec<i64>) {
    let repo = MemberRepo::new(store.clone());
    let mut claims = Vec::new();
    for e in emails {
        claims.push(store.get(&MemberKeys::by_email(e)).await.unwrap());
    }
    let mut listed = Vec::new();
    let mut per_plan = Vec::new();
    for p in plans {
        let key = MemberKeys::by_plan(p);
        listed.push(store.collection_len(&key).await.unwrap() as usize);
        per_plan.push(repo.count_per_plan(p).await.unwrap());
    }
    (claims, listed, repo.count_total().await.unwrap(), per_plan)
}

#[tokio::test]
async fn a_delete_by_its_plan_is_one_round_trip_and_leaves_nothing() {
    let h = RedisHarness::start().await;
    let store = planning(&h).await;
    let repo = MemberRepo::new(store.clone());
    repo.create(&member(1, "Ada@x.io", "pro")).await.unwrap();
    repo.create(&member(2, "bob@x.io", "pro")).await.unwrap();
    let plan = <Member as kvmodel::__private::Entity>::space().plan_key(&MemberKeys::record(1));
    assert!(
        store.get(&plan).await.unwrap().is_some(),
        "a create stores the plan"
    );
    // An update moves the plan with the record: the delete removes what
    // the record derives now, not what it derived before.
    repo.modify(1, |m| {
        m.email = "ada@y.io".into();
        m.plan = "free".into();
    })
    .await
    .unwrap();
    // The server learns the delete script on the store's first delete.
    assert!(!repo.delete(9).await.unwrap());
    let before = store.round_trips();
    assert!(repo.delete(1).await.unwrap());
    assert_eq!(store.round_trips() - before, 1, "one round trip");
    assert_eq!(repo.get(1).await.unwrap(), None);
    assert_eq!(
        store.get(&plan).await.unwrap(),
        None,
        "the plan goes with it"
    );
    let (claims, listed, total, per_plan) = derived(
        &store,
        &["ada@x.io", "ada@y.io", "bob@x.io"],
        &["pro", "free"],
    )
    .await;
    assert_eq!(claims[..2], [None, None]);
    assert_eq!(claims[2].as_deref(), Some(MemberKeys::record(2).as_bytes()));
    assert_eq!((listed, total, per_plan), (vec![1, 0], 1, vec![1, 0]));
    assert_eq!(
        repo.list_all(kvmodel::PageRequest::new(10))
            .await
            .unwrap()
            .items,
        vec![member(2, "bob@x.io", "pro")]
    );
    // A second delete finds nothing, in one round trip.
    let before = store.round_trips();
    assert!(!repo.delete(1).await.unwrap());
    assert_eq!(store.round_trips() - before, 1);
}

#[tokio::test]
async fn a_plan_that_does_not_fit_its_record_is_not_used() {
    let h = RedisHarness::start().await;
    let store = planning(&h).await;
    let repo = MemberRepo::new(store.clone());
    let space = <Member as kvmodel::__private::Entity>::space();
    for id in 1..=6 {
        repo.create(&member(id, &format!("m{id}@x.io"), "pro"))
            .await
            .unwrap();
    }
    // 1: rewritten by a writer that keeps no plan (another e-mail, the
    // entries moved by hand as such a writer would): the plan was written
    // for other bytes.
    let old = store.get(&MemberKeys::record(1)).await.unwrap().unwrap();
    let new = String::from_utf8(old.clone())
        .unwrap()
        .replace("m1@x.io", "z1@x.io")
        .into_bytes();
    let mut b = Batch::new();
    b.equals(MemberKeys::record(1), old)
        .put(MemberKeys::record(1), new, None)
        .delete(MemberKeys::by_email("m1@x.io"))
        .put(
            MemberKeys::by_email("z1@x.io"),
            MemberKeys::record(1).into_bytes(),
            None,
        );
    assert!(store.commit(b).await.unwrap().is_applied());
    // 2: its plan tampered with.
    let mut b = Batch::new();
    b.put(
        space.plan_key(&MemberKeys::record(2)),
        b"\x93garbage".to_vec(),
        None,
    );
    assert!(store.commit(b).await.unwrap().is_applied());
    // 3: a link registry beside it (links go the usual way).
    let registry = kvmodel::__private::registry_key(space, &MemberKeys::record(3));
    let mut b = Batch::new();
    b.put(&registry, br#"{"incarnation":7,"links":[]}"#.to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
    // 4: its plan written under other code (another schema): the tag
    // after the record's digest differs.
    let key = space.plan_key(&MemberKeys::record(4));
    let mut plan = store.get(&key).await.unwrap().unwrap();
    plan[21] = if plan[21] == b'0' { b'1' } else { b'0' };
    let mut b = Batch::new();
    b.put(&key, plan, None);
    assert!(store.commit(b).await.unwrap().is_applied());
    // 6: its plan made to delete record 5 instead (its digest and tag
    // left as they were): a plan that does not delete its own record is
    // never run.
    let key = space.plan_key(&MemberKeys::record(6));
    let plan = store.get(&key).await.unwrap().unwrap();
    let (six, five) = (MemberKeys::record(6), MemberKeys::record(5));
    // (The two keys are as long as each other: every length stays.)
    let mut forged = plan.clone();
    let at = plan
        .windows(six.len())
        .position(|w| w == six.as_bytes())
        .unwrap();
    forged[at..at + six.len()].copy_from_slice(five.as_bytes());
    let mut b = Batch::new();
    b.put(&key, forged, None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert!(!repo.delete(9).await.unwrap());
    for id in [1, 2, 3, 4, 6] {
        let before = store.round_trips();
        assert!(repo.delete(id).await.unwrap(), "{id}");
        assert_eq!(
            store.round_trips() - before,
            3,
            "{id}: the plan, then the usual way"
        );
        assert_eq!(
            store
                .get(&space.plan_key(&MemberKeys::record(id)))
                .await
                .unwrap(),
            None,
            "{id}: the usual delete removes the plan too"
        );
    }
    let (claims, listed, total, per_plan) = derived(
        &store,
        &[
            "m1@x.io", "z1@x.io", "m2@x.io", "m3@x.io", "m4@x.io", "m5@x.io",
        ],
        &["pro"],
    )
    .await;
    // The claim moved by hand to z1@x.io went: the delete removed what the
    // record's bytes name, not what its plan does.
    assert_eq!(claims[..5], [None, None, None, None, None]);
    assert_eq!(claims[5].as_deref(), Some(MemberKeys::record(5).as_bytes()));
    assert_eq!((listed, total, per_plan), (vec![1], 1, vec![1]));
    assert_eq!(
        repo.get(5).await.unwrap(),
        Some(member(5, "m5@x.io", "pro"))
    );
}

#[tokio::test]
async fn a_plan_left_without_its_record_goes_on_delete() {
    let h = RedisHarness::start().await;
    let store = planning(&h).await;
    let repo = MemberRepo::new(store.clone());
    repo.create(&member(1, "a@x.io", "pro")).await.unwrap();
    let plan = <Member as kvmodel::__private::Entity>::space().plan_key(&MemberKeys::record(1));
    let mut b = Batch::new();
    b.delete(MemberKeys::record(1));
    assert!(store.commit(b).await.unwrap().is_applied());
    assert!(!repo.delete(1).await.unwrap());
    assert_eq!(store.get(&plan).await.unwrap(), None);
}

/// A store that keeps no plans (the default) deletes a record another
/// store planned as usual, and removes its plan; a plan outdated by its
/// write is never used.
#[tokio::test]
async fn a_store_without_plans_removes_those_of_others() {
    let h = RedisHarness::start().await;
    let (planning, plain) = (planning(&h).await, h.store());
    assert!(plain.delete_plans().is_none());
    let repo = MemberRepo::new(planning.clone());
    let other = MemberRepo::new(plain.clone());
    let space = <Member as kvmodel::__private::Entity>::space();
    for id in 1..=2 {
        repo.create(&member(id, &format!("m{id}@x.io"), "pro"))
            .await
            .unwrap();
    }
    assert!(other.delete(1).await.unwrap());
    assert_eq!(
        plain
            .get(&space.plan_key(&MemberKeys::record(1)))
            .await
            .unwrap(),
        None
    );
    // Moved by a store that writes no plan: the plan left is for other
    // bytes, and the planning store's delete goes the usual way.
    other
        .modify(2, |m| m.email = "z2@x.io".into())
        .await
        .unwrap();
    assert!(repo.delete(2).await.unwrap());
    let (claims, listed, total, per_plan) =
        derived(&planning, &["m1@x.io", "m2@x.io", "z2@x.io"], &["pro"]).await;
    assert_eq!(claims, [None, None, None]);
    assert_eq!((listed, total, per_plan), (vec![0], 0, vec![0]));
    assert_eq!(
        planning
            .scan("dp:member#drop", None, 10)
            .await
            .unwrap()
            .keys,
        Vec::<String>::new()
    );
}

/// A record with a sharded counter keeps no plan (a shard's move is
/// checked whole): its delete goes the usual way, in two round trips.
#[tokio::test]
async fn a_sharded_counter_keeps_no_plan() {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "dp", key = "hit:{id}")]
    #[kv(counter(name = "total", shards = 4))]
    struct Hit {
        id: u64,
    }
    let h = RedisHarness::start().await;
    let store = planning(&h).await;
    let repo = HitRepo::new(store.clone());
    repo.create(&Hit { id: 1 }).await.unwrap();
    let space = <Hit as kvmodel::__private::Entity>::space();
    assert_eq!(
        store
            .get(&space.plan_key(&HitKeys::record(1)))
            .await
            .unwrap(),
        None
    );
    assert!(!repo.delete(9).await.unwrap());
    let before = store.round_trips();
    assert!(repo.delete(1).await.unwrap());
    assert_eq!(store.round_trips() - before, 2);
    assert_eq!(repo.count_total().await.unwrap(), 0);
}

/// The stores that keep no plan write none, and delete as before.
async fn no_plan_where_the_store_keeps_none<H: Harness>(h: &H) {
    let store = h.store();
    let repo = MemberRepo::new(store.clone());
    repo.create(&member(1, "a@x.io", "pro")).await.unwrap();
    let plan = <Member as kvmodel::__private::Entity>::space().plan_key(&MemberKeys::record(1));
    let kept = store.get(&plan).await.unwrap().is_some();
    assert_eq!(kept, store.delete_plans().is_some(), "{}", store.backend());
    assert!(repo.delete(1).await.unwrap());
    assert_eq!(store.get(&plan).await.unwrap(), None);
    assert_eq!(repo.count_total().await.unwrap(), 0);
}

kvmodel_runtime::on_every_backend!(no_plan_where_the_store_keeps_none);
