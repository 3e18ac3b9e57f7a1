//! A unique claim that points at a record which no longer carries the value
//! (drift written behind the repository's back) never returns that record,
//! on every backend (each reads the claim and its record in its own way).

use kvmodel::conformance::Harness;
use kvmodel::{Batch, KvEntity, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "s", key = "acct:{tenant}:{id}", colocate = tenant)]
#[kv(index(
    name = "by_handle",
    fields(tenant, handle),
    unique,
    normalize = "lowercase"
))]
struct Account {
    tenant: String,
    id: u64,
    handle: String,
    #[kv(unique)]
    email: Option<String>,
}

kvmodel_runtime::on_every_backend!(
    stale_claims_are_ignored,
    a_claim_another_record_holds_is_left_to_it
);

async fn stale_claims_are_ignored<H: Harness>(h: &H) {
    let store = h.store();
    let repo = AccountRepo::new(store.clone());
    let a = Account {
        tenant: "t:1".into(),
        id: 7,
        handle: "Ada".into(),
        email: None,
    };
    repo.create(&a).await.unwrap();
    assert_eq!(
        repo.find_by_handle("t:1", "ADA").await.unwrap(),
        Some(a.clone())
    );

    // Forge claims that point at `a` for values it does not hold.
    let owner = AccountKeys::record("t:1", 7).into_bytes();
    let mut b = Batch::new();
    b.put(AccountKeys::by_handle("t:1", "grace"), owner.clone(), None)
        .put(AccountKeys::by_email("ada@x.io"), owner, None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(repo.find_by_handle("t:1", "grace").await.unwrap(), None);
    assert_eq!(
        repo.find_by_email("ada@x.io").await.unwrap(),
        None,
        "a None field claims nothing"
    );

    // Once the record holds the value, the same claim resolves.
    repo.modify("t:1", 7, |a| a.email = Some("ada@x.io".into()))
        .await
        .unwrap();
    assert_eq!(repo.find_by_email("ada@x.io").await.unwrap().unwrap().id, 7);
}

/// A record whose claim another record holds (drift) is updated and
/// deleted as usual, and the claim stays with the record that holds it.
async fn a_claim_another_record_holds_is_left_to_it<H: Harness>(h: &H) {
    let store = h.store();
    let repo = AccountRepo::new(store.clone());
    let account = |id: u64, email: &str| Account {
        tenant: "t".into(),
        id,
        handle: format!("h{id}"),
        email: Some(email.into()),
    };
    for (id, email) in [(1, "a@x.io"), (2, "b@x.io"), (3, "c@x.io")] {
        repo.create(&account(id, email)).await.unwrap();
    }
    let holder = AccountKeys::record("t", 2).into_bytes();
    let mut b = Batch::new();
    b.put(AccountKeys::by_email("a@x.io"), holder.clone(), None)
        .put(AccountKeys::by_email("c@x.io"), holder.clone(), None);
    assert!(store.commit(b).await.unwrap().is_applied());

    assert!(repo.delete("t", 1).await.unwrap(), "deleted");
    repo.modify("t", 3, |a| a.email = Some("d@x.io".into()))
        .await
        .unwrap();
    for email in ["a@x.io", "c@x.io"] {
        assert_eq!(
            store.get(&AccountKeys::by_email(email)).await.unwrap(),
            Some(holder.clone()),
            "the claim of {email} is still the other record's"
        );
    }
    assert_eq!(
        store.get(&AccountKeys::by_email("d@x.io")).await.unwrap(),
        Some(AccountKeys::record("t", 3).into_bytes())
    );
    assert_eq!(repo.find_by_email("d@x.io").await.unwrap().unwrap().id, 3);
    assert_eq!(repo.get("t", 1).await.unwrap(), None);
}
