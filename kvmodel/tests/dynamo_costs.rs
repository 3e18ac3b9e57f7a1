//! The requests and transaction actions each access pattern sends to
//! DynamoDB, counted on the emulator, against the table `kvmodel keys
//! --store dynamodb` prints (`kvmodel_runtime::engine::dynamo_cost`).

use std::collections::BTreeMap;

use kvmodel::conformance::{DynamoEmulator, DynamoRequests};
use kvmodel::{DynamoStore, KvEntity, PageRequest};
use kvmodel_runtime::engine::cost::Access;
use kvmodel_runtime::engine::dynamo_cost::{DynamoCost, DynamoShape};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "c", key = "user:{id}")]
#[kv(index(name = "by_team", fields(team), order_by = score))]
#[kv(counter(name = "per_team", group_by(team)))]
struct User {
    id: String,
    #[kv(unique)]
    email: String,
    team: String,
    score: i64,
}

fn user(i: usize, team: &str) -> User {
    User {
        id: format!("u{i}"),
        email: format!("u{i}@example.com"),
        team: team.to_owned(),
        score: i as i64,
    }
}

/// `User`'s shape: one claim, one ordered index, one counter.
const SHAPE: DynamoShape = DynamoShape {
    claims: 1,
    collections: 1,
    grouped: 1,
    capped: 0,
    counters: 1,
    kept_on_delete: 0,
    moving_counters: 2,
    parents: 0,
    dependents: 0,
    expires: false,
};

/// The requests the table gives, by operation, as the counter names them.
fn requests(cost: &DynamoCost) -> BTreeMap<String, u64> {
    cost.requests
        .by_operation()
        .into_iter()
        .map(|(op, n)| (op.to_owned(), u64::from(n)))
        .collect()
}

/// The actions the table gives: writes and checks.
fn actions(sent: &BTreeMap<String, u64>) -> (u32, u32) {
    let get = |k: &str| u32::try_from(sent.get(k).copied().unwrap_or(0)).unwrap();
    (
        get("Put") + get("Update") + get("Delete"),
        get("ConditionCheck"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_pattern_sends_what_the_table_says() {
    let emulator = DynamoEmulator::start().await;
    emulator.store("app").await;
    let counted = DynamoRequests::new();
    let users = UserRepo::new(DynamoStore::from_client(
        emulator.counted_client(&counted),
        "app",
    ));
    // Collections and the discovery set's shards exist from here on.
    for i in 0..24 {
        users.create(&user(i, "t0")).await.unwrap();
    }
    counted.take();
    counted.take_actions();
    let check = |access: Access, page: u32, what: &str| {
        let want = SHAPE.cost(access, page);
        assert_eq!(counted.take(), requests(&want), "requests of {what}");
        let sent = counted.take_actions();
        assert_eq!(
            actions(&sent),
            (want.writes, want.checks),
            "actions (writes, checks) of {what}: {sent:?}"
        );
    };

    users.create(&user(100, "t1")).await.unwrap();
    check(Access::Create, 0, "create");
    users.get("u100").await.unwrap().unwrap();
    check(Access::Get, 0, "get");
    users
        .find_by_email("u100@example.com")
        .await
        .unwrap()
        .unwrap();
    check(Access::FindUnique, 0, "find_by_email");
    assert_eq!(users.count_per_team("t1").await.unwrap(), 1);
    check(Access::ReadCounter, 0, "count_per_team");
    let page = users.list_by_team("t0", PageRequest::new(5)).await.unwrap();
    assert_eq!(page.items.len(), 5);
    check(Access::ListCollection, 5, "list_by_team, a page of 5");
    let all = users.list_all(PageRequest::new(20)).await.unwrap();
    assert_eq!(all.items.len(), 20);
    check(Access::ListAll, 20, "list_all, a page of 20");
    // Every derived value moves: the email, the team and the score.
    let mut moved = user(100, "t2");
    moved.email = "moved@example.com".into();
    moved.score = 1000;
    users.update(&moved).await.unwrap();
    check(Access::Update, 0, "update moving every derived value");
    users.delete("u100").await.unwrap();
    check(Access::Delete, 0, "delete");
}
