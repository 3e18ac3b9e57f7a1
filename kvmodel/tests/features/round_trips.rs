//! Store calls per access pattern, counted on every backend, against the
//! runtime's cost table: the numbers `kvmodel keys` reports. On Redis the
//! store's own count of round trips confirms the table's round trips: one
//! per call, two for a write that reads first, and one more the first time
//! the server runs each script (delete plans: `delete_plans`).

use crate::model::*;
use kvmodel::__private::Store;
use kvmodel::PageRequest;
use kvmodel::conformance::{CountingStore, Harness, RedisHarness};
use kvmodel_runtime::__private::cost::{Access, STATE_CHECK, STATE_FIRST_LOOK};

/// Runs every access pattern of `UserRepo` once on `store`, calling
/// `check(access, what)` after each.
async fn each_access<S: Store>(store: CountingStore<S>, mut check: impl FnMut(Access, u64, &str)) {
    // Partial reads skip the state check of what version 2 added: it is
    // measured at the end.
    let repo = UserRepo::new(store.clone()).with_partial_reads();
    let mut last = store.calls();
    let mut measure = |access: Access, what: &str| {
        let now = store.calls();
        check(access, now - last, what);
        last = now;
    };
    let at = "2026-01-01T00:00:00Z";
    repo.create(&user("1", "a@x.io", Status::Active, at))
        .await
        .unwrap();
    measure(Access::Create, "create");
    repo.create(&user("2", "b@x.io", Status::Active, at))
        .await
        .unwrap();
    measure(Access::Create, "second create");
    repo.get("1").await.unwrap();
    measure(Access::Get, "get");
    repo.get_many(&["1", "2", "none"]).await.unwrap();
    measure(Access::GetMany, "get_many");
    assert!(repo.find_by_email("A@x.io").await.unwrap().is_some());
    measure(Access::FindUnique, "find by unique index");
    let page = repo
        .list_by_status(Status::Active, PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    measure(Access::ListCollection, "a page of an ordered index");
    assert_eq!(
        repo.list_all(PageRequest::new(10))
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    measure(Access::ListAll, "a page of list_all");
    let orders = OrderRepo::new(store.clone());
    orders.create(&order("o1", "2", 250, at)).await.unwrap();
    measure(Access::Create, "create of a related record");
    let page = orders
        .list_by_user("2", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    measure(Access::ListCollection, "a page of a relation");
    assert_eq!(repo.find_by_email("nobody@x.io").await.unwrap(), None);
    measure(Access::FindUnique, "find of a value nobody claimed");
    repo.modify("1", |u| u.status = Status::Inactive)
        .await
        .unwrap();
    measure(Access::Update, "modify");
    assert_eq!(repo.count_by_status(Status::Inactive).await.unwrap(), 1);
    measure(Access::ReadCounter, "a counter");
    repo.delete("1").await.unwrap();
    measure(Access::Delete, "delete");
    // `by_status` came with version 2: the first read of it establishes the
    // entity's index state, and each repository reads that state once.
    let first = UserRepo::new(store.clone());
    let before = store.calls();
    first.count_by_status(Status::Active).await.unwrap();
    let established = store.calls() - before;
    let second = UserRepo::new(store.clone());
    let before = store.calls();
    second.count_by_status(Status::Active).await.unwrap();
    second.count_by_status(Status::Inactive).await.unwrap();
    let checked = store.calls() - before;
    assert_eq!(
        established,
        u64::from(Access::ReadCounter.calls() + STATE_CHECK + STATE_FIRST_LOOK),
        "the first read of what version 2 added, where no state is recorded"
    );
    assert_eq!(
        checked,
        u64::from(2 * Access::ReadCounter.calls() + STATE_CHECK),
        "a repository's first two reads of what version 2 added"
    );
}

async fn matches_the_table<H: Harness>(h: &H) {
    each_access(CountingStore::new(h.store()), |access, calls, what| {
        assert_eq!(
            calls,
            u64::from(access.calls()),
            "{what} on {}: store calls differ from the cost table",
            h.store().backend()
        );
    })
    .await;
}

kvmodel_runtime::on_every_backend!(matches_the_table);

#[tokio::test]
async fn redis_round_trips_match_the_table() {
    let h = RedisHarness::start().await;
    let store = h.store();
    let mut last = store.round_trips();
    let mut found = false;
    each_access(CountingStore::new(store.clone()), |access, _, what| {
        let now = store.round_trips();
        let mut want = u64::from(access.round_trips());
        // A write's script, written for the shape of its batch, goes whole
        // with EVAL the first time the store sends it: no round trip more.
        // The read script goes as EVALSHA, answered NOSCRIPT the first
        // time; EVAL then sends its text (it then stays cached).
        if access == Access::FindUnique && !std::mem::replace(&mut found, true) {
            want += 1;
        }
        assert_eq!(now - last, want, "{what}: round trips on Redis");
        last = now;
    })
    .await;
}
