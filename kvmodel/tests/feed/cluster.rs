//! Change feeds on Redis Cluster: one Stream per entity feed, in its own
//! slot, appended to through the cross-slot protocol (docs/feed.md, "On
//! Redis Cluster"). The suites every store runs, on the cluster harness,
//! and what only the cluster has: a write stopped at every crash point has
//! its event exactly once after recovery if it committed, and none if it
//! was undone, whether the stream lies in the record's slot or elsewhere.

use std::time::Duration;

use kvmodel::RedisClusterStore;
use kvmodel::Store;
use kvmodel::conformance::{ClusterHarness, Harness};
use kvmodel::feed::{Event, Position};
use kvmodel::key::hash_slot;
use kvmodel_runtime::store::CrashPoint;

use super::{
    Acct, AcctKeys, AcctRepo, behind_retention, cascade_deletes_have_their_events,
    consumer_groups_share_the_feed_at_least_once, feed_follows_a_burst,
    transactions_have_their_events,
};

async fn store() -> RedisClusterStore {
    ClusterHarness::spread().await.store()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_feed_follows_a_burst() {
    feed_follows_a_burst(store().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_reader_behind_retention_gets_an_error() {
    behind_retention(store().await, async || {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_transactions_have_their_events() {
    transactions_have_their_events(store().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_cascade_deletes_have_their_events() {
    cascade_deletes_have_their_events(store().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_consumer_groups_share_the_feed_at_least_once() {
    consumer_groups_share_the_feed_at_least_once(store().await).await;
}

/// The slot `key` is stored in by `store`.
fn slot(store: &RedisClusterStore, key: &str) -> u16 {
    hash_slot(&format!("{}{key}", store.key_prefix()))
}

/// A record id starting with `stem` whose record lies in the feed's slot
/// (`same`) or in another one.
fn id_for(store: &RedisClusterStore, stem: &str, same: bool) -> String {
    let feed = slot(store, "f:acct#feed");
    (0..)
        .map(|n| format!("{stem}-{n}"))
        .find(|id| (slot(store, &AcctKeys::record(id)) == feed) == same)
        .expect("some id hashes either way")
}

/// The kind of every event of the record `id`, in feed order: the whole
/// feed as it stands now, read up to its newest entry (rather than until
/// the stream stays idle for a while).
async fn kinds_of(repo: &AcctRepo<RedisClusterStore>, id: &str) -> Vec<&'static str> {
    let key = AcctKeys::record(id);
    let last = repo.store().feed_last("f:acct#feed").await.unwrap();
    let mut stream = repo.feed().from(Position::Start);
    let mut changes = Vec::new();
    while last.is_some() && stream.position() < last {
        let next = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
        let change = next
            .expect("the feed reaches its newest entry")
            .expect("the stream goes on")
            .unwrap();
        changes.push(change);
    }
    assert_eq!(stream.position(), last, "read up to the newest entry");
    changes
        .into_iter()
        .filter(|c| c.key == key)
        .map(|c| match c.event {
            Event::Created(_) => "created",
            Event::Updated { .. } => "updated",
            Event::Deleted(_) => "deleted",
            Event::Expired(_) => "expired",
            _ => "unknown",
        })
        .collect()
}

/// A create, an update and a delete of a record of an entity with a feed,
/// each stopped at every crash point, with the stream in another slot than
/// the record (its append a late operation of a token) and in the same slot
/// (applied at the commit point): no event before the write's effects are
/// there; after recovery, the event exactly once if the write committed,
/// none if it was undone; the record agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_crashed_writes_have_their_event_exactly_once() {
    let store = ClusterHarness::with_lease(Duration::from_millis(200))
        .await
        .store();
    let repo = AcctRepo::new(store.clone());
    for same in [false, true] {
        for (i, point) in CrashPoint::ALL.into_iter().enumerate() {
            let committed = matches!(
                point,
                CrashPoint::Committed | CrashPoint::AppliedPart | CrashPoint::Applied
            );
            let crashing = AcctRepo::new(store.crashing_at(point));
            for what in ["create", "update", "delete"] {
                let id = id_for(&store, &format!("{what}{i}"), same);
                let a = Acct {
                    id: id.clone(),
                    email: format!("{id}@x"),
                    n: 0,
                };
                let mut before = Vec::new();
                if what != "create" {
                    repo.create(&a).await.unwrap();
                    before.push("created");
                }
                let result = match what {
                    "create" => crashing.create(&a).await,
                    "update" => crashing.update(&Acct { n: 1, ..a.clone() }).await,
                    _ => crashing.delete(&id).await.map(drop),
                };
                let case = format!("{what} {point:?}, same slot: {same}");
                let event = match what {
                    "create" => "created",
                    "update" => "updated",
                    _ => "deleted",
                };
                // A batch within one slot (an update of a record in its
                // feed's slot that moves nothing elsewhere) is one script,
                // with no step to stop at.
                let one_script = result.is_ok();
                let committed = committed || one_script;
                if let Err(e) = result {
                    assert!(e.to_string().contains("test hook"), "{case}: {e}");
                } else {
                    assert!(same && what == "update", "{case}: it did not stop");
                }
                let seen = kinds_of(&repo, &id).await;
                let with_event = [&before[..], &[event]].concat();
                match point {
                    _ if one_script => assert_eq!(seen, with_event, "{case}"),
                    // Applied at the commit point when the stream shares the
                    // record's slot; otherwise late, still owed.
                    CrashPoint::Committed if same => assert_eq!(seen, with_event, "{case}"),
                    CrashPoint::Applied => assert_eq!(seen, with_event, "{case}"),
                    CrashPoint::AppliedPart => {}
                    _ => assert_eq!(seen, before, "{case}: no event yet"),
                }

                let done = store.recover_writes(true).await.unwrap();
                // A write stopped before its intent may have left nothing
                // but members (no token) to recover.
                let want_done = if one_script {
                    (0, 0, 0)
                } else if committed {
                    (1, 0, 0)
                } else {
                    (0, done.undone.min(1), 0)
                };
                assert_eq!(
                    (done.finished, done.undone, done.live),
                    want_done,
                    "{case}: {done:?}"
                );
                let mut want = before.clone();
                if committed {
                    want.push(event);
                }
                assert_eq!(kinds_of(&repo, &id).await, want, "{case}: after recovery");
                // Recovering again appends nothing more.
                store.recover_writes(true).await.unwrap();
                assert_eq!(kinds_of(&repo, &id).await, want, "{case}: once");

                let stored = repo.get(&id).await.unwrap();
                let expected = match (what, committed) {
                    ("create", true) | ("update", false) => Some(a.clone()),
                    ("update", true) => Some(Acct { n: 1, ..a.clone() }),
                    ("delete", false) => Some(a.clone()),
                    _ => None,
                };
                assert_eq!(stored, expected, "{case}: the record agrees");
            }
        }
    }
}

/// A write of two records in two slots (neither the feed's) stopped after
/// its first token applied: the record in the other slot is released only
/// once the feed holds its event, so a later update of it never has its
/// event before that record's creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_a_record_of_a_crashed_write_keeps_its_events_in_order() {
    let store = ClusterHarness::with_lease(Duration::from_millis(200))
        .await
        .store();
    let repo = AcctRepo::new(store.clone());
    let feed = slot(&store, "f:acct#feed");
    let rec = |id: &str| slot(&store, &AcctKeys::record(id));
    let claim = |id: &str| slot(&store, &AcctKeys::by_email(&format!("{id}@x")));
    // The first record's claim shares its slot; the second record lies in
    // a slot of its own, ahead of the feed's in the write's plan.
    let a = (0..)
        .map(|n| format!("order-a-{n}"))
        .find(|id| rec(id) != feed && claim(id) == rec(id))
        .expect("an id whose claim shares its slot");
    let b = (0..)
        .map(|n| format!("order-b-{n}"))
        .find(|id| ![feed, rec(&a)].contains(&rec(id)))
        .expect("an id in another slot");
    let acct = |id: &str| Acct {
        id: id.to_owned(),
        email: format!("{id}@x"),
        n: 0,
    };
    let crashing = AcctRepo::new(store.crashing_at(CrashPoint::AppliedPart));
    let e = crashing
        .create_many(&[acct(&a), acct(&b)])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("test hook"), "{e}");
    // Refused (`Conflict`) while the crashed write still holds the record,
    // or applied: either way after the record's creation in the feed.
    let updated = repo.update(&Acct { n: 1, ..acct(&b) }).await;
    store.recover_writes(true).await.unwrap();
    if let Err(e) = updated {
        assert!(matches!(e, kvmodel::Error::Conflict { .. }), "{e}");
        repo.update(&Acct { n: 1, ..acct(&b) }).await.unwrap();
    }
    assert_eq!(kinds_of(&repo, &b).await, ["created", "updated"]);
    assert_eq!(kinds_of(&repo, &a).await, ["created"]);
}
