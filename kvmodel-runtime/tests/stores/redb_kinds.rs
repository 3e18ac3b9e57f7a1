//! redb's rule that a key never holds a value and a sorted collection,
//! kept by a marker in the value table: refusals, the marker never read
//! as a value, group commits, and files written before the marker.

use std::time::Duration;

use kvmodel_runtime::store::clock::ManualClock;
use kvmodel_runtime::{Batch, Error, RangeRequest, RedbStore, Store};

fn refused(result: kvmodel_runtime::Result<kvmodel_runtime::store::Outcome>) -> bool {
    matches!(result, Err(Error::InvalidBatch { .. }))
}

async fn members(store: &RedbStore, key: &str) -> usize {
    store
        .range(key, RangeRequest::all(100))
        .await
        .unwrap()
        .members
        .len()
}

#[tokio::test]
async fn a_collection_and_a_value_never_share_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("k.redb")).unwrap();
    let mut b = Batch::new();
    b.add("set", vec![1], b"a".to_vec())
        .add("set", vec![2], b"b".to_vec())
        .put("val", b"v".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());

    let mut put = Batch::new();
    put.put("set", b"x".to_vec(), None);
    assert!(refused(store.commit(put).await), "a put onto a collection");
    let mut incr = Batch::new();
    incr.incr("set", 1);
    assert!(
        refused(store.commit(incr).await),
        "an increment of a collection"
    );
    let mut cond = Batch::new();
    cond.absent("set").put("other", b"o".to_vec(), None);
    assert!(
        refused(store.commit(cond).await),
        "a condition on a collection"
    );
    let mut add = Batch::new();
    add.add("val", vec![1], b"m".to_vec());
    assert!(refused(store.commit(add).await), "an add under a value");
    let mut remove = Batch::new();
    remove.remove("val", vec![1], b"m".to_vec());
    assert!(
        refused(store.commit(remove).await),
        "a remove under a value"
    );

    // The marker is no value: not read, not listed as one.
    assert_eq!(store.get("set").await.unwrap(), None);
    assert_eq!(store.time_to_live("set").await.unwrap(), None);
    let (keys, _) = store
        .range_keys_with("", |_| true, RangeRequest::all(100), |k, _| k.to_owned())
        .await
        .unwrap();
    assert_eq!(keys, ["val"]);
    let scanned = store.scan("", None, 100).await.unwrap();
    assert_eq!(scanned.keys, ["set", "val"]);
    assert_eq!(members(&store, "set").await, 2);

    // Emptied, the collection is nothing: a value may take the key, and the
    // key is listed once, as the value.
    let mut b = Batch::new();
    b.remove("set", vec![1], b"a".to_vec())
        .remove("set", vec![2], b"b".to_vec());
    assert!(store.commit(b).await.unwrap().is_applied());
    assert!(store.scan("", None, 100).await.unwrap().keys == ["val"]);
    let mut put = Batch::new();
    put.absent("set").put("set", b"now a value".to_vec(), None);
    assert!(store.commit(put).await.unwrap().is_applied());
    assert_eq!(
        store.get("set").await.unwrap().as_deref(),
        Some(&b"now a value"[..])
    );
    let mut add = Batch::new();
    add.add("set", vec![1], b"a".to_vec());
    assert!(
        refused(store.commit(add).await),
        "an add under the new value"
    );

    // A delete makes room for the other kind, in the same batch too.
    let mut b = Batch::new();
    b.delete("set").add("set", vec![3], b"c".to_vec());
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.get("set").await.unwrap(), None);
    assert_eq!(members(&store, "set").await, 1);
    let mut b = Batch::new();
    b.delete("set").incr("set", 5);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.counter("set").await.unwrap(), 5);
    assert_eq!(
        members(&store, "set").await,
        0,
        "the delete took the members"
    );
}

#[tokio::test]
async fn removals_do_not_make_room_for_a_put() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("b.redb")).unwrap();
    let mut b = Batch::new();
    b.add("k", vec![1], b"only".to_vec())
        .add("two", vec![1], b"a".to_vec())
        .add("two", vec![2], b"b".to_vec());
    assert!(store.commit(b).await.unwrap().is_applied());
    // Removing one of two members leaves a collection: the put is refused
    // and nothing of the batch is written.
    let mut b = Batch::new();
    b.remove("two", vec![1], b"a".to_vec())
        .put("two", b"v".to_vec(), None);
    assert!(refused(store.commit(b).await));
    assert_eq!(members(&store, "two").await, 2);
    // An add in the same batch as a put onto the same key is refused.
    let mut b = Batch::new();
    b.add("fresh", vec![1], b"m".to_vec())
        .put("fresh", b"v".to_vec(), None);
    assert!(refused(store.commit(b).await));
    assert_eq!(members(&store, "fresh").await, 0);
    assert_eq!(store.get("fresh").await.unwrap(), None);
}

#[tokio::test]
async fn an_expired_collection_gives_way_to_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let store = RedbStore::open_with_clock(dir.path().join("e.redb"), clock.clone()).unwrap();
    let mut b = Batch::new();
    b.add("gone", vec![1], b"m".to_vec())
        .expire("gone", Duration::from_secs(1));
    assert!(store.commit(b).await.unwrap().is_applied());
    clock.advance(Duration::from_secs(2));
    let mut b = Batch::new();
    b.incr("gone", 2);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.counter("gone").await.unwrap(), 2);
    // The expired members went with the marker: a later collection at the
    // key (after a delete) starts empty and lasts.
    let mut b = Batch::new();
    b.delete("gone").add("gone", vec![2], b"new".to_vec());
    assert!(store.commit(b).await.unwrap().is_applied());
    clock.advance(Duration::from_secs(10));
    let page = store.range("gone", RangeRequest::all(10)).await.unwrap();
    assert_eq!(page.members.len(), 1);
    assert_eq!(page.members[0].member, b"new".to_vec());
}

/// 64 writers race to give one key a kind: in each group commit, as across
/// groups, every batch is checked against what the ones before it left,
/// so the winning kind's batches all apply and the other kind's are all
/// refused, none failing a neighbour.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_kinds_in_group_commits_leave_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("r.redb")).unwrap();
    let mut tasks = Vec::new();
    for i in 0..64u8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut b = Batch::new();
            let value = i % 2 == 0;
            if value {
                b.put("mixed", vec![i], None);
            } else {
                b.add("mixed", vec![i], vec![i]);
            }
            b.incr(format!("own:{i}"), 1);
            (value, store.commit(b).await)
        }));
    }
    let (mut puts, mut adds, mut refusals) = (0, 0, 0);
    for t in tasks {
        let (value, result) = t.await.unwrap();
        match result {
            Ok(outcome) => {
                assert!(outcome.is_applied());
                if value {
                    puts += 1;
                } else {
                    adds += 1;
                }
            }
            Err(Error::InvalidBatch { key, .. }) => {
                assert_eq!(key, "mixed");
                refusals += 1;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(refusals, 32, "one kind was refused whole");
    assert!((puts == 32) != (adds == 32), "{puts} puts, {adds} adds");
    let value = store.get("mixed").await.unwrap();
    let n = members(&store, "mixed").await;
    if puts == 32 {
        assert!(value.is_some());
        assert_eq!(n, 0);
    } else {
        assert_eq!(value, None);
        assert_eq!(n, 32);
    }
    let own: Vec<String> = (0..64).map(|i| format!("own:{i}")).collect();
    let applied = store
        .get_many(&own)
        .await
        .unwrap()
        .iter()
        .filter(|v| v.is_some())
        .count();
    assert_eq!(applied, 32, "a refused batch wrote nothing");
}

/// A file whose collections have no marker (written before markers) gets
/// them when opened, so the rule holds for what it already holds.
#[tokio::test]
async fn a_file_without_markers_is_marked_when_opened() {
    use redb::{Database, TableDefinition};
    const KV: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("kv");
    const MEMBERS: TableDefinition<'_, (&str, &[u8]), ()> = TableDefinition::new("members");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.redb");
    {
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut kv = txn.open_table(KV).unwrap();
            let mut members = txn.open_table(MEMBERS).unwrap();
            let mut value = 0u64.to_be_bytes().to_vec();
            value.extend_from_slice(b"v");
            kv.insert("val", value.as_slice()).unwrap();
            // An expired value beside members, which that layout allowed.
            let mut expired = 5u64.to_be_bytes().to_vec();
            expired.extend_from_slice(b"old");
            kv.insert("both", expired.as_slice()).unwrap();
            for (c, m) in [("both", &b"m"[..]), ("set", b"a"), ("set", b"b")] {
                let entry = kvmodel_runtime::store::encode_entry(&[], m);
                members.insert((c, entry.as_slice()), ()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    let store = RedbStore::open(&path).unwrap();
    for key in ["set", "both"] {
        let mut put = Batch::new();
        put.put(key, b"x".to_vec(), None);
        assert!(refused(store.commit(put).await), "a put onto {key}");
        assert_eq!(store.get(key).await.unwrap(), None);
    }
    assert_eq!(store.get("val").await.unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(members(&store, "set").await, 2);
    let mut b = Batch::new();
    b.delete("set");
    assert!(store.commit(b).await.unwrap().is_applied());
    let mut put = Batch::new();
    put.put("set", b"x".to_vec(), None);
    assert!(store.commit(put).await.unwrap().is_applied());
    drop(store);
    // Opening again finds the layout recorded and leaves the data alone.
    let store = RedbStore::open(&path).unwrap();
    assert_eq!(store.get("set").await.unwrap().as_deref(), Some(&b"x"[..]));
    let mut add = Batch::new();
    add.add("both", vec![], b"n".to_vec());
    assert!(store.commit(add).await.unwrap().is_applied());
}

/// A batch of many keys (as `create_many` commits) keeps what its check
/// read by key through a map: each increment still lands on its own
/// counter, and the rule still holds for a key deep inside the batch.
#[tokio::test]
async fn a_large_batch_keeps_every_key_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("l.redb")).unwrap();
    let mut seed = Batch::new();
    for i in 0..40i64 {
        seed.incr(format!("c{i}"), i);
    }
    seed.add("two", vec![1], b"a".to_vec())
        .add("two", vec![2], b"b".to_vec());
    assert!(store.commit(seed).await.unwrap().is_applied());

    let mut bad = Batch::new();
    for i in 0..40i64 {
        bad.incr(format!("c{i}"), 1)
            .add("idx", vec![], i.to_string().into_bytes());
    }
    bad.remove("two", vec![1], b"a".to_vec())
        .put("two", b"v".to_vec(), None);
    assert!(refused(store.commit(bad).await));
    assert_eq!(store.counter("c7").await.unwrap(), 7, "nothing was written");

    let mut good = Batch::new();
    for i in 0..40i64 {
        good.incr(format!("c{i}"), 100)
            .add("idx", vec![], i.to_string().into_bytes());
    }
    good.delete("two").put("two", b"v".to_vec(), None);
    assert!(store.commit(good).await.unwrap().is_applied());
    for i in [0i64, 17, 39] {
        assert_eq!(store.counter(&format!("c{i}")).await.unwrap(), 100 + i);
    }
    assert_eq!(members(&store, "idx").await, 40);
    assert_eq!(store.get("two").await.unwrap().as_deref(), Some(&b"v"[..]));
}
