//! Concurrent creates of one entity on DynamoDB do not refuse each other:
//! each touches the entity's discovery set and counters, which are written
//! without a version, so 16 writers at once send one transaction per
//! create, and every index, counter and member is in step afterwards.

use kvmodel::conformance::{DynamoEmulator, DynamoRequests};
use kvmodel::{DynamoStore, KvEntity, PageRequest};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "w", key = "user:{id}")]
#[kv(index(name = "by_team", fields(team), order_by = score))]
#[kv(counter(name = "per_team", group_by(team)))]
struct User {
    id: String,
    #[kv(unique)]
    email: String,
    team: String,
    score: i64,
}

fn user(i: usize) -> User {
    User {
        id: format!("u{i}"),
        email: format!("u{i}@example.com"),
        team: format!("t{}", i % 2),
        score: i as i64,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_creates_send_one_transaction_each() {
    let emulator = DynamoEmulator::start().await;
    emulator.store("app").await;
    let requests = DynamoRequests::new();
    let users = UserRepo::new(DynamoStore::from_client(
        emulator.counted_client(&requests),
        "app",
    ));
    // The first creates make the index collections and the discovery
    // set's shards: making a collection is a versioned write, which
    // concurrent makers of the same one would race for.
    for i in 0..40 {
        users.create(&user(i)).await.unwrap();
    }
    requests.take();
    let tasks: Vec<_> = (40..56)
        .map(|i| {
            let users = users.clone();
            tokio::spawn(async move { users.create(&user(i)).await.unwrap() })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let sent = requests.take();
    assert_eq!(
        sent.get("TransactWriteItems"),
        Some(&16),
        "no create was refused and retried: {sent:?}"
    );
    assert_eq!(users.count_all().await.unwrap(), 56);
    assert_eq!(users.count_per_team("t0").await.unwrap(), 28);
    assert_eq!(users.count_per_team("t1").await.unwrap(), 28);
    let mut listed = Vec::new();
    let mut page = PageRequest::new(10);
    loop {
        let got = users.list_all(page.clone()).await.unwrap();
        listed.extend(got.items.into_iter().map(|u| u.id));
        match got.next {
            Some(next) => page = page.after(next),
            None => break,
        }
    }
    listed.sort();
    let mut want: Vec<String> = (0..56).map(|i| format!("u{i}")).collect();
    want.sort();
    assert_eq!(
        listed, want,
        "every record listed once, over the shards' pages"
    );
    let team = users
        .list_by_team("t1", PageRequest::new(100))
        .await
        .unwrap();
    assert_eq!(team.items.len(), 28);
    assert!(users.verify(50).await.unwrap().is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_many_is_one_transaction_within_dynamodbs_item_limit() {
    let emulator = DynamoEmulator::start().await;
    emulator.store("app").await;
    let requests = DynamoRequests::new();
    let users = UserRepo::new(DynamoStore::from_client(
        emulator.counted_client(&requests),
        "app",
    ));
    let ten: Vec<User> = (0..10).map(user).collect();
    users.create_many(&ten).await.unwrap();
    let sent = requests.take();
    assert_eq!(sent.get("TransactWriteItems"), Some(&1), "{sent:?}");
    assert_eq!(users.count_all().await.unwrap(), 10);
    assert_eq!(users.count_per_team("t0").await.unwrap(), 5);

    // Each record is several items (itself, its claim, its index and
    // discovery members): 30 of them are beyond one transaction's 100.
    let thirty: Vec<User> = (10..40).map(user).collect();
    let err = users.create_many(&thirty).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("DynamoDB's limit of 100"), "{text}");
    assert_eq!(users.count_all().await.unwrap(), 10, "nothing was written");
    assert_eq!(users.get("u10").await.unwrap(), None);
}
