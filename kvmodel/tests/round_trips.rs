//! Round trips per access pattern on a real Redis server, counted by the
//! store. These are the numbers `kvmodel keys` reports.

#[path = "repo/model.rs"]
#[allow(dead_code, unused_imports)]
mod model;

use kvmodel::PageRequest;
use kvmodel::conformance::RedisHarness;
use model::*;

#[tokio::test]
async fn each_access_pattern_costs_what_is_documented() {
    let h = RedisHarness::start().await;
    let store = kvmodel::conformance::Harness::store(&h);
    let repo = UserRepo::new(store.clone());
    let mut measure = {
        let store = store.clone();
        let mut last = store.round_trips();
        move || {
            let now = store.round_trips();
            let d = now - last;
            last = now;
            d
        }
    };
    // The first commit also loads the script (EVALSHA → NOSCRIPT → SCRIPT LOAD → EVALSHA).
    repo.create(&user(
        "warm",
        "warm@x.io",
        Status::Active,
        "2026-01-01T00:00:00Z",
    ))
    .await
    .unwrap();
    assert_eq!(measure(), 3, "first commit loads the script once");

    repo.create(&user("1", "a@x.io", Status::Active, "2026-01-01T00:00:00Z"))
        .await
        .unwrap();
    assert_eq!(measure(), 1, "create is one commit");
    repo.get("1").await.unwrap();
    assert_eq!(measure(), 1, "get is one GET");
    repo.get_many(&["1", "warm", "none"]).await.unwrap();
    assert_eq!(measure(), 1, "get_many is one MGET");
    repo.find_by_email("A@x.io").await.unwrap();
    assert_eq!(measure(), 2, "find by unique index: claim, then record");
    let page = repo
        .list_by_status(Status::Active, PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(measure(), 2, "a page of an ordered index: range, then MGET");
    repo.modify("1", |u| u.status = Status::Inactive)
        .await
        .unwrap();
    assert_eq!(measure(), 2, "update: read, then one commit");
    assert_eq!(repo.count_by_status(Status::Inactive).await.unwrap(), 1);
    assert_eq!(measure(), 1, "a counter is one GET");
    repo.delete("1").await.unwrap();
    assert_eq!(measure(), 2, "delete: read, then one commit");
}
