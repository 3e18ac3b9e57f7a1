//! Writers of one counter or one collection do not refuse each other: an
//! increment is `ADD`ed unread, members move the count by `ADD`; what
//! needs a read to stay exact (overflow, a key of another kind, an expired
//! counter, a counter stored as text) still gets one, and the contract's
//! error. Requests are counted from the client ([`DynamoRequests`]); the
//! emulator applies transactions one at a time, so a writer refused by
//! another shows as a second `TransactWriteItems`.

use std::time::Duration;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use kvmodel_runtime::conformance::{DynamoEmulator, DynamoRequests};
use kvmodel_runtime::store::clock::{Clock, ManualClock, SystemClock};
use kvmodel_runtime::{Batch, DynamoStore, Error, RangeRequest, Store};

/// A store on a new table whose client counts its requests.
async fn counted(emulator: &DynamoEmulator, requests: &DynamoRequests) -> DynamoStore {
    emulator.store("app").await;
    DynamoStore::from_client(emulator.counted_client(requests), "app")
}

async fn commit(store: &DynamoStore, b: Batch) {
    assert!(store.commit(b).await.unwrap().is_applied());
}

fn sent(requests: &DynamoRequests, operation: &str) -> u64 {
    requests.take().get(operation).copied().unwrap_or(0)
}

/// Runs `each(i)` for i in 0..16 on 16 tasks at once.
async fn sixteen<F, Fut>(each: F)
where
    F: Fn(i64) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let tasks: Vec<_> = (0..16).map(|i| tokio::spawn(each(i))).collect();
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_increments_of_one_counter_add_up_without_a_retry() {
    let emulator = DynamoEmulator::start().await;
    let requests = DynamoRequests::new();
    let store = counted(&emulator, &requests).await;
    requests.take();
    sixteen(|i| {
        let store = store.clone();
        async move {
            for _ in 0..8 {
                let mut b = Batch::new();
                b.incr("hits", i + 1);
                commit(&store, b).await;
            }
        }
    })
    .await;
    let all = requests.take();
    assert_eq!(
        all.get("TransactWriteItems"),
        Some(&128),
        "one transaction per commit, none refused: {all:?}"
    );
    assert_eq!(all.get("TransactGetItems"), None, "nothing read: {all:?}");
    assert_eq!(
        store.counter("hits").await.unwrap(),
        8 * (1..=16).sum::<i64>()
    );
    assert_eq!(
        store.get("hits").await.unwrap(),
        Some(b"1088".to_vec()),
        "a counter reads as its decimal text"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_increment_out_of_range_is_refused_and_writes_nothing() {
    let emulator = DynamoEmulator::start().await;
    let requests = DynamoRequests::new();
    let store = counted(&emulator, &requests).await;
    let mut b = Batch::new();
    b.incr("up", i64::MAX - 5).incr("down", i64::MIN + 3);
    commit(&store, b).await;
    requests.take();
    for (key, delta) in [("up", 6), ("down", -4)] {
        let mut b = Batch::new();
        b.put("marker", b"m".to_vec(), None).incr(key, delta);
        let err = store.commit(b).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidBatch { key: k, reason } if k == key && reason.contains("overflow")),
            "{err}"
        );
        assert_eq!(
            sent(&requests, "TransactWriteItems"),
            1,
            "the refused transaction only: decided again on what was read"
        );
        assert_eq!(store.get("marker").await.unwrap(), None, "{key}");
    }
    assert_eq!(store.counter("up").await.unwrap(), i64::MAX - 5);
    assert_eq!(store.counter("down").await.unwrap(), i64::MIN + 3);
    // Two increments of one batch overflow as their sum does.
    let mut b = Batch::new();
    b.incr("up", 3).incr("up", 3);
    let err = store.commit(b).await.unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
    assert_eq!(store.counter("up").await.unwrap(), i64::MAX - 5);
    let mut b = Batch::new();
    b.incr("up", 5).incr("down", -3);
    commit(&store, b).await;
    assert_eq!(store.counter("up").await.unwrap(), i64::MAX);
    assert_eq!(store.counter("down").await.unwrap(), i64::MIN);

    // A shard's limit: refused past it, allowed back toward 0.
    let mut b = Batch::new();
    b.incr_within("shard", 10, 10);
    commit(&store, b).await;
    let mut b = Batch::new();
    b.put("marker", b"m".to_vec(), None)
        .incr_within("shard", 1, 10);
    let err = store.commit(b).await.unwrap_err();
    assert!(err.to_string().contains("sharded counter"), "{err}");
    assert_eq!(store.get("marker").await.unwrap(), None);
    let mut b = Batch::new();
    b.incr_within("shard", -3, 10);
    commit(&store, b).await;
    assert_eq!(store.counter("shard").await.unwrap(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_increment_of_another_kind_is_refused_and_writes_nothing() {
    let emulator = DynamoEmulator::start().await;
    let store = emulator.store("app").await;
    let mut b = Batch::new();
    b.put("text", b"hello".to_vec(), None)
        .add("set", vec![], b"m".to_vec());
    commit(&store, b).await;
    for (key, says) in [("text", "decimal integer"), ("set", "sorted collection")] {
        let mut b = Batch::new();
        b.put("marker", b"m".to_vec(), None).incr(key, 1);
        let err = store.commit(b).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidBatch { key: k, .. } if k == key),
            "{err}"
        );
        assert!(err.to_string().contains(says), "{err}");
        assert_eq!(store.get("marker").await.unwrap(), None, "{key}");
    }
    assert_eq!(store.get("text").await.unwrap(), Some(b"hello".to_vec()));
    assert_eq!(store.collection_len("set").await.unwrap(), 1);
}

/// The stored item of `key`'s head, as the SDK hands it over.
async fn raw(
    emulator: &DynamoEmulator,
    key: &str,
) -> std::collections::HashMap<String, AttributeValue> {
    emulator
        .client()
        .get_item()
        .table_name("app")
        .key("pk", AttributeValue::S(key.to_owned()))
        .key("sk", AttributeValue::B(Blob::new(vec![0])))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item()
        .cloned()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_stored_as_text_counts_on_and_is_then_stored_as_a_number() {
    let emulator = DynamoEmulator::start().await;
    let store = emulator.store("app").await;
    // How counters were stored before they were numbers: a binary value.
    let mut b = Batch::new();
    b.put("old", b"41".to_vec(), None);
    commit(&store, b).await;
    assert!(matches!(
        raw(&emulator, "old").await.get("v"),
        Some(AttributeValue::B(_))
    ));
    assert_eq!(store.counter("old").await.unwrap(), 41);
    let mut b = Batch::new();
    b.incr("old", 1);
    commit(&store, b).await;
    assert_eq!(store.get("old").await.unwrap(), Some(b"42".to_vec()));
    let item = raw(&emulator, "old").await;
    assert_eq!(item.get("v"), Some(&AttributeValue::N("42".to_owned())));
    assert_eq!(item.get("kind"), Some(&AttributeValue::S("n".to_owned())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_counter_starts_again_from_zero() {
    let emulator = DynamoEmulator::start().await;
    let clock = ManualClock::new(SystemClock.now_ms());
    let store = emulator.store("app").await.with_clock(clock.clone());
    let mut b = Batch::new();
    b.incr("c", 5).expire("c", Duration::from_secs(60));
    commit(&store, b).await;
    let mut b = Batch::new();
    b.incr("c", 1);
    commit(&store, b).await;
    assert_eq!(
        store.counter("c").await.unwrap(),
        6,
        "a live counter keeps counting"
    );
    assert!(
        store.time_to_live("c").await.unwrap().is_some(),
        "and keeps its expiry"
    );
    clock.advance(Duration::from_secs(61));
    // Still stored (DynamoDB removes expired items late), but expired.
    let mut b = Batch::new();
    b.incr("c", 2);
    commit(&store, b).await;
    assert_eq!(store.counter("c").await.unwrap(), 2);
    assert_eq!(store.time_to_live("c").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_adds_and_removes_of_one_collection_do_not_refuse_each_other() {
    let emulator = DynamoEmulator::start().await;
    let requests = DynamoRequests::new();
    let store = counted(&emulator, &requests).await;
    let mut b = Batch::new();
    b.add("all", vec![], b"seed".to_vec());
    commit(&store, b).await;
    requests.take();
    sixteen(|i| {
        let store = store.clone();
        async move {
            for j in 0..4 {
                let mut b = Batch::new();
                b.add("all", vec![], format!("m{i}:{j}").into_bytes());
                commit(&store, b).await;
            }
        }
    })
    .await;
    assert_eq!(sent(&requests, "TransactWriteItems"), 64, "none refused");
    assert_eq!(store.collection_len("all").await.unwrap(), 65);
    let page = store.range("all", RangeRequest::all(100)).await.unwrap();
    assert_eq!(page.members.len(), 65);

    // Adding a member twice counts it once.
    let mut b = Batch::new();
    b.add("all", vec![], b"m0:0".to_vec());
    commit(&store, b).await;
    assert_eq!(store.collection_len("all").await.unwrap(), 65);

    requests.take();
    sixteen(|i| {
        let store = store.clone();
        async move {
            for j in 0..3 {
                let mut b = Batch::new();
                b.remove("all", vec![], format!("m{i}:{j}").into_bytes());
                commit(&store, b).await;
            }
        }
    })
    .await;
    assert_eq!(sent(&requests, "TransactWriteItems"), 48, "none refused");
    assert_eq!(store.collection_len("all").await.unwrap(), 17);

    // Removing the last members empties it, whoever comes last.
    let mut last: Vec<String> = (0..16).map(|i| format!("m{i}:3")).collect();
    last.push("seed".to_owned());
    let tasks: Vec<_> = last
        .into_iter()
        .map(|m| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut b = Batch::new();
                b.remove("all", vec![], m.into_bytes());
                commit(&store, b).await;
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(store.collection_len("all").await.unwrap(), 0);
    assert!(
        store
            .range("all", RangeRequest::all(10))
            .await
            .unwrap()
            .members
            .is_empty()
    );
    let mut b = Batch::new();
    b.add("all", vec![], b"again".to_vec());
    commit(&store, b).await;
    let page = store.range("all", RangeRequest::all(10)).await.unwrap();
    assert_eq!(page.members.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_swaps_a_collections_only_member_applies_at_once() {
    let emulator = DynamoEmulator::start().await;
    let requests = DynamoRequests::new();
    let store = counted(&emulator, &requests).await;
    let mut b = Batch::new();
    b.add("c", vec![1], b"a".to_vec());
    commit(&store, b).await;
    requests.take();
    // Added before removed: the count goes 1, 2, 1 and the collection
    // stays; removed before added: it empties and starts again.
    let mut b = Batch::new();
    b.add("c", vec![2], b"b".to_vec())
        .remove("c", vec![1], b"a".to_vec());
    commit(&store, b).await;
    let mut b = Batch::new();
    b.remove("c", vec![2], b"b".to_vec())
        .add("c", vec![3], b"c".to_vec());
    commit(&store, b).await;
    assert_eq!(sent(&requests, "TransactWriteItems"), 2, "no retry");
    let page = store.range("c", RangeRequest::all(10)).await.unwrap();
    let members: Vec<&[u8]> = page.members.iter().map(|m| m.member.as_slice()).collect();
    assert_eq!(members, [&b"c"[..]]);
    assert_eq!(store.collection_len("c").await.unwrap(), 1);
}
