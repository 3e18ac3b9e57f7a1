//! The shared conformance suite on a Redis Cluster: once with every test's
//! keys in one hash slot (one script per batch, as on one server), once with
//! them spread over the slots (every batch of several keys runs the
//! cross-slot protocol); then what only a cluster has: the protocol's crash
//! points, locks met by other writes, shared holds, the sharded discovery set, receipts
//! in their record's slot, and the `redis+cluster://` URL.

mod one_slot {
    kvmodel_runtime::conformance_tests!(kvmodel_runtime::conformance::ClusterHarness::start());
}

mod across_slots {
    kvmodel_runtime::conformance_tests!(kvmodel_runtime::conformance::ClusterHarness::spread());
}

mod holds;
mod members_race;
mod settle;

use std::time::Duration;

use kvmodel_runtime::__private::hash_slot;
use kvmodel_runtime::conformance::{ClusterHarness, Harness, RedisCluster};
use kvmodel_runtime::store::{AnyStore, CrashPoint};
use kvmodel_runtime::{Batch, Error, RangeRequest, RedisClusterStore, Store};

const LEASE: Duration = Duration::from_millis(200);

async fn members(s: &RedisClusterStore, key: &str) -> Vec<String> {
    s.range(key, RangeRequest::all(10_000))
        .await
        .unwrap()
        .members
        .into_iter()
        .map(|m| String::from_utf8(m.member).unwrap())
        .collect()
}

/// Keys named so that each lands in a slot of its own (checked).
struct Keys {
    record: String,
    claim: String,
    set: String,
    counter: String,
    old: String,
}

fn keys(name: &str) -> Keys {
    let k = Keys {
        record: format!("s:item:{name}"),
        claim: format!("s:item#uniq:code:{name}"),
        set: format!("s:item#idx:tag:{name}"),
        counter: format!("s:item#count:total:{name}"),
        old: format!("s:item#uniq:code:old-{name}"),
    };
    let slots: std::collections::HashSet<u16> = [&k.record, &k.claim, &k.set, &k.counter, &k.old]
        .iter()
        .map(|key| hash_slot(key))
        .collect();
    assert_eq!(slots.len(), 5, "pick another name: two keys share a slot");
    k
}

/// A write of every kind across five slots: a record created, a claim
/// taken, a member added, a counter incremented, an old claim released.
fn create(k: &Keys) -> Batch {
    let owner = k.record.as_bytes().to_vec();
    let mut b = Batch::new();
    b.absent(&k.record)
        .put(&k.record, b"v1".to_vec(), None)
        .absent_or_equals(&k.claim, owner.clone())
        .put(&k.claim, owner.clone(), None)
        .add(&k.set, vec![1], owner)
        .incr(&k.counter, 1)
        .delete(&k.old);
    b
}

async fn seed_old(s: &RedisClusterStore, k: &Keys) {
    let mut b = Batch::new();
    b.put(&k.old, b"s:item:someone".to_vec(), None);
    assert!(s.commit(b).await.unwrap().is_applied());
}

/// What readers see of the write of [`create`]: `None` while it is not
/// committed (record absent, and what is there is seen through: a claim or
/// member naming an absent record), `Some(counted)` once the record is.
async fn readers(s: &RedisClusterStore, k: &Keys) -> Option<bool> {
    let record = s.get(&k.record).await.unwrap();
    let claim = s.get(&k.claim).await.unwrap();
    let set = members(s, &k.set).await;
    let counter = s.counter(&k.counter).await.unwrap();
    match record {
        None => {
            // A claim or member may be there early; it names a record that
            // does not exist, so a reader checking the record ignores it.
            assert!(claim.is_none_or(|c| c == k.record.as_bytes()));
            assert!(set.iter().all(|m| *m == k.record));
            assert_eq!(counter, 0, "nothing counted before the commit point");
            assert!(s.get(&k.old).await.unwrap().is_some(), "old claim kept");
            None
        }
        Some(v) => {
            assert_eq!(v, b"v1");
            // Past the commit point the claim and the member are there:
            // they went first.
            assert_eq!(claim.as_deref(), Some(k.record.as_bytes()));
            assert_eq!(set, vec![k.record.clone()]);
            assert!((0..=1).contains(&counter));
            Some(counter == 1)
        }
    }
}

async fn assert_committed(s: &RedisClusterStore, k: &Keys) {
    assert_eq!(readers(s, k).await, Some(true));
    assert_eq!(s.get(&k.old).await.unwrap(), None, "old claim released");
}

/// Undone: as before, except that a member added to a slot the write only
/// added to may stay (no token records whether it was new): it names a
/// record that does not exist, so listings skip and remove it, and
/// `reconcile` removes it.
async fn assert_untouched(s: &RedisClusterStore, k: &Keys) {
    assert_eq!(s.get(&k.record).await.unwrap(), None);
    assert_eq!(s.get(&k.claim).await.unwrap(), None);
    assert!(members(s, &k.set).await.iter().all(|m| *m == k.record));
    assert_eq!(s.counter(&k.counter).await.unwrap(), 0);
    assert!(s.get(&k.old).await.unwrap().is_some());
}

/// Every crash point of the protocol: readers give right answers, the
/// store reports the write as unfinished once its lease has passed, and a
/// recovery pass finishes it (past the commit point) or undoes it (before),
/// leaving nothing of the protocol behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_crash_point_leaves_what_recovery_repairs() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let s = h.store();
    for (i, point) in CrashPoint::ALL.into_iter().enumerate() {
        let k = keys(&format!("crash{i}"));
        seed_old(&s, &k).await;
        let err = s.crashing_at(point).commit(create(&k)).await.unwrap_err();
        assert!(err.to_string().contains("test hook"), "{point:?}: {err}");
        let committed = readers(&s, &k).await.is_some();
        assert_eq!(
            committed,
            matches!(
                point,
                CrashPoint::Committed | CrashPoint::AppliedPart | CrashPoint::Applied
            ),
            "{point:?}"
        );
        s.outlive_leases();
        let unfinished = s.unfinished_writes().await.unwrap();
        assert_eq!(unfinished.len(), 1, "{point:?}: {unfinished:?}");
        let done = s.recover_now().await.unwrap();
        assert_eq!(done.finished + done.undone, 1, "{point:?}: {done:?}");
        assert_eq!(done.finished == 1, committed, "{point:?}: {done:?}");
        if committed {
            assert_committed(&s, &k).await;
        } else {
            assert_untouched(&s, &k).await;
        }
        assert!(s.unfinished_writes().await.unwrap().is_empty(), "{point:?}");
        assert_eq!(s.recover().await.unwrap(), 0, "{point:?}: nothing left");
    }
}

/// The test hook that moves the lease clock on: a write stamped before it
/// is overdue at once, one stamped after it is within its lease on the
/// moved clock (live to recovery, not reported); another store on the same
/// cluster, whose clock nobody moved, sees no write of its own overdue.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_moved_lease_clock_makes_only_earlier_writes_overdue() {
    let h = ClusterHarness::with_lease(Duration::from_secs(30)).await;
    let s = h.store();
    let (old, new) = (keys("clock0"), keys("clock1"));
    for k in [&old, &new] {
        seed_old(&s, k).await;
    }
    let stopped = s.crashing_at(CrashPoint::Prepared);
    stopped.commit(create(&old)).await.unwrap_err();
    assert_eq!(s.recover_now().await.unwrap().live, 1, "within its lease");
    assert!(s.unfinished_writes().await.unwrap().is_empty());

    s.outlive_leases();
    stopped.commit(create(&new)).await.unwrap_err();
    assert_eq!(s.unfinished_writes().await.unwrap().len(), 1, "the old one");
    let done = s.recover_now().await.unwrap();
    assert_eq!((done.undone, done.live), (1, 1), "{done:?}");
    assert_untouched(&s, &old).await;

    // A store of its own (another prefix), its clock unmoved.
    let other = ClusterHarness::with_lease(Duration::from_secs(30))
        .await
        .store();
    let k = keys("clock2");
    seed_old(&other, &k).await;
    let _ = other
        .crashing_at(CrashPoint::Prepared)
        .commit(create(&k))
        .await;
    assert_eq!(other.recover_now().await.unwrap().live, 1);
    assert!(other.unfinished_writes().await.unwrap().is_empty());
    assert!(s.recover_writes(true).await.unwrap().undone >= 1);
    assert!(other.recover_writes(true).await.unwrap().undone >= 1);
}

/// A write that meets the locks of a crashed write waits for its lease,
/// then finishes or undoes it and goes on; so does a batch within one slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_next_write_finishes_or_undoes_a_crashed_one() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let s = h.store();

    // Crashed before its commit point: undone, so the same create succeeds.
    let k = keys("next0");
    seed_old(&s, &k).await;
    let _ = s.crashing_at(CrashPoint::Prepared).commit(create(&k)).await;
    let started = std::time::Instant::now();
    assert!(s.commit(create(&k)).await.unwrap().is_applied());
    assert!(started.elapsed() >= LEASE, "it waited for the lease");
    assert_committed(&s, &k).await;

    // Crashed after it: finished, so a create of the same record fails and
    // a one-slot write of the record sees the committed value.
    let k = keys("next1");
    seed_old(&s, &k).await;
    let _ = s
        .crashing_at(CrashPoint::Committed)
        .commit(create(&k))
        .await;
    // Within its lease a condition on the record it holds would fail after
    // a short wait (see docs/cluster.md); once it is overdue, the next
    // write settles it.
    s.outlive_leases();
    let mut again = Batch::new();
    again
        .equals(&k.record, b"v1".to_vec())
        .put(&k.record, b"v2".to_vec(), None);
    assert!(s.commit(again).await.unwrap().is_applied());
    assert_eq!(s.get(&k.record).await.unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(s.counter(&k.counter).await.unwrap(), 1);
    assert_eq!(s.get(&k.old).await.unwrap(), None);
    assert!(s.unfinished_writes().await.unwrap().is_empty());
}

/// A batch within one slot is one request; across slots it takes the
/// protocol's steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_slot_is_one_request() {
    let h = ClusterHarness::start().await;
    let s = h.store();
    let mut b = Batch::new();
    b.absent(h.key("a"))
        .put(h.key("a"), b"1".to_vec(), None)
        .incr(h.key("n"), 1);
    let before = s.round_trips();
    assert!(s.commit(b).await.unwrap().is_applied());
    assert_eq!(s.round_trips() - before, 1);

    // A store of its own, under a known prefix, so that the test knows the
    // stored keys' slots (a harness's prefix depends on how many stores the
    // tests opened before, and it moves every key's slot).
    let cluster = tokio::task::spawn_blocking(RedisCluster::shared)
        .await
        .unwrap();
    let seeds = cluster.seeds();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let k = keys("trips");
    // The first prefix under which the five stored keys keep five slots.
    let prefix = (0..)
        .map(|i| format!("trips{i}/"))
        .find(|prefix| {
            let slots: std::collections::HashSet<u16> =
                [&k.record, &k.claim, &k.set, &k.counter, &k.old]
                    .iter()
                    .map(|key| hash_slot(&format!("{prefix}{key}")))
                    .collect();
            slots.len() == 5
        })
        .unwrap();
    let s = RedisClusterStore::builder(&seeds)
        .key_prefix(&prefix)
        .connect()
        .await
        .unwrap();
    let before = s.round_trips();
    assert!(s.commit(create(&k)).await.unwrap().is_applied());
    // Prepare in five slots, commit, apply in three (claim, counter, old
    // claim), finish.
    assert_eq!(s.round_trips() - before, 5 + 1 + 3 + 1);
}

/// The discovery set is one logical sorted collection over shards: pages
/// and cursors run over all of them in order, lengths add up, `scan`
/// names the set once, a delete clears every shard, and conditions on it
/// are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn discovery_sets_are_sharded_and_read_as_one() {
    let h = ClusterHarness::spread().await;
    let s = h.store();
    let all = "d:thing#all";
    let mut want: Vec<String> = (0..120).map(|i| format!("d:thing:{i:03}")).collect();
    for chunk in want.chunks(20) {
        let mut b = Batch::new();
        for m in chunk {
            b.add(all, Vec::new(), m.clone().into_bytes());
        }
        assert!(s.commit(b).await.unwrap().is_applied());
    }
    want.sort();
    assert_eq!(s.collection_len(all).await.unwrap(), 120);
    for direction in [
        kvmodel_runtime::Direction::Ascending,
        kvmodel_runtime::Direction::Descending,
    ] {
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let req = RangeRequest {
                direction,
                after: after.take(),
                ..RangeRequest::all(7)
            };
            let page = s.range(all, req).await.unwrap();
            seen.extend(
                page.members
                    .into_iter()
                    .map(|m| String::from_utf8(m.member).unwrap()),
            );
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let mut expect = want.clone();
        if direction == kvmodel_runtime::Direction::Descending {
            expect.reverse();
        }
        assert_eq!(seen, expect, "{direction:?}");
    }
    let mut keys = Vec::new();
    let mut cursor = None;
    loop {
        let page = s.scan("d:thing#", cursor.take(), 100).await.unwrap();
        keys.extend(page.keys);
        match page.next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    keys.sort();
    keys.dedup();
    assert_eq!(keys, vec![all.to_owned()]);

    let mut b = Batch::new();
    b.absent(all);
    let err = s.commit(b).await.unwrap_err();
    assert!(matches!(err, Error::InvalidBatch { .. }), "{err}");

    let mut b = Batch::new();
    b.delete(all);
    assert!(s.commit(b).await.unwrap().is_applied());
    assert_eq!(s.collection_len(all).await.unwrap(), 0);
}

/// A receipt shares its record's slot: a write of both is one request, and
/// both read back under the names the repository uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn receipts_share_their_records_slot() {
    let h = ClusterHarness::spread().await;
    let s = h.store();
    let (record, receipt) = ("r:session:abc", "r:session#rcpt:session:abc");
    let mut b = Batch::new();
    b.absent(record)
        .put(record, b"v".to_vec(), Some(Duration::from_secs(60)))
        .absent(receipt)
        .put(receipt, b"r".to_vec(), None);
    let before = s.round_trips();
    assert!(s.commit(b).await.unwrap().is_applied());
    assert_eq!(s.round_trips() - before, 1);
    assert_eq!(s.get(receipt).await.unwrap().as_deref(), Some(&b"r"[..]));
    let both = s
        .get_many(&[record.to_owned(), receipt.to_owned()])
        .await
        .unwrap();
    assert_eq!(both, vec![Some(b"v".to_vec()), Some(b"r".to_vec())]);
    let page = s.scan("r:session#", None, 100).await.unwrap();
    let mut keys = page.keys;
    let mut cursor = page.next;
    while let Some(c) = cursor {
        let page = s.scan("r:session#", Some(c), 100).await.unwrap();
        keys.extend(page.keys);
        cursor = page.next;
    }
    assert_eq!(keys, vec![receipt.to_owned()]);
}

/// `AnyStore` opens `redis+cluster://HOST:PORT,HOST:PORT`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn any_store_opens_a_cluster_url() {
    let cluster = tokio::task::spawn_blocking(RedisCluster::shared)
        .await
        .unwrap();
    let hosts: Vec<String> = cluster
        .ports()
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    let store = AnyStore::open(&format!("redis+cluster://{}", hosts.join(",")))
        .await
        .unwrap();
    assert_eq!(store.backend(), "redis-cluster");
    let key = format!("any-store-url-{}", std::process::id());
    let mut b = Batch::new();
    b.put(&key, b"x".to_vec(), Some(Duration::from_secs(60)));
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some(&b"x"[..]));
}

/// A `RedisStore` opened on one node of a cluster says to open it as a
/// cluster, on a read of a key another node serves and on a commit across
/// slots, and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_single_server_store_on_a_cluster_node_names_the_cluster_url() {
    let cluster = tokio::task::spawn_blocking(RedisCluster::shared)
        .await
        .unwrap();
    let seed = &cluster.seeds()[0];
    let node = kvmodel_runtime::RedisStore::connect(seed).await.unwrap();
    let at = seed.trim_start_matches("redis://");
    let hint = format!("redis+cluster://{at}");
    // Keys of every node's slots: some are another node's.
    let keys: Vec<String> = (0..64).map(|i| format!("on-a-node-{i}")).collect();
    let mut moved = None;
    for key in &keys {
        if let Err(e) = node.get(key).await {
            moved = Some(e.to_string());
            break;
        }
    }
    let moved = moved.expect("some key is served by another node");
    assert!(moved.contains(&hint), "{moved}");
    let mut b = Batch::new();
    for key in &keys {
        b.put(key, b"x".to_vec(), None);
    }
    let crossed = node.commit(b).await.unwrap_err().to_string();
    assert!(crossed.contains(&hint), "{crossed}");
    assert!(crossed.contains("nothing was written"), "{crossed}");
    let seeds = cluster.seeds();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let cluster_store = RedisClusterStore::connect(&seeds).await.unwrap();
    for key in &keys {
        assert_eq!(cluster_store.get(key).await.unwrap(), None);
    }
}
