//! Renaming a struct changes no key (docs/schema.md): the old version kept as
//! `AccountV1` beside a new `Account` with `migrate_from = AccountV1` reads
//! and writes the same claims, entries and counters, on every backend.

use kvmodel::conformance::Harness;
use kvmodel::{Error, KvEntity, PageRequest};
use serde::{Deserialize, Serialize};

/// Version 1, as the code before the rename wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bank", key = "account:{id}", version = 1)]
#[kv(index(name = "by_branch", fields(branch)))]
#[kv(counter(name = "per_branch", group_by(branch)))]
pub struct AccountV1 {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub email: String,
    pub branch: String,
}

/// Version 2, under the name the struct had all along in users' minds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bank", key = "account:{id}", version = 2, migrate_from = AccountV1)]
#[kv(index(name = "by_branch", fields(branch)))]
#[kv(counter(name = "per_branch", group_by(branch)))]
pub struct Account {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub email: String,
    pub branch: String,
    pub nickname: Option<String>,
}

impl From<AccountV1> for Account {
    fn from(v: AccountV1) -> Self {
        Account {
            id: v.id,
            email: v.email,
            branch: v.branch,
            nickname: None,
        }
    }
}

async fn renamed_struct_shares_every_derived_key<H: Harness>(h: &H) {
    assert_eq!(
        AccountV1Keys::by_email("a@x.io"),
        AccountKeys::by_email("a@x.io")
    );
    assert_eq!(AccountV1Keys::all(), AccountKeys::all());
    let old = AccountV1Repo::new(h.store());
    let new = AccountRepo::new(h.store());
    old.create(&AccountV1 {
        id: "1".into(),
        email: "Ann@X.io".into(),
        branch: "north".into(),
    })
    .await
    .unwrap();

    // The new code sees what the old code wrote.
    let found = new.find_by_email("ann@x.io").await.unwrap().unwrap();
    assert_eq!(found.id, "1");
    assert_eq!(new.count_per_branch("north").await.unwrap(), 1);
    let page = new
        .list_by_branch("north", PageRequest::new(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(
        new.list_all(PageRequest::new(10))
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    // A value claimed by the old code stays claimed for the new code.
    let dup = Account {
        id: "2".into(),
        email: "ANN@x.io".into(),
        branch: "south".into(),
        nickname: None,
    };
    assert!(matches!(
        new.create(&dup).await,
        Err(Error::UniqueViolation { .. })
    ));

    // After a rewrite by the new code, both still agree.
    new.modify("1", |a| a.branch = "south".into())
        .await
        .unwrap();
    assert_eq!(
        new.find_by_email("ann@x.io").await.unwrap().unwrap().id,
        "1"
    );
    assert_eq!(new.count_per_branch("north").await.unwrap(), 0);
    assert_eq!(new.count_per_branch("south").await.unwrap(), 1);
    assert!(matches!(
        new.create(&dup).await,
        Err(Error::UniqueViolation { .. })
    ));
    assert!(new.verify(10).await.unwrap().is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory() {
    renamed_struct_shares_every_derived_key(&kvmodel::conformance::MemoryHarness::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb() {
    renamed_struct_shares_every_derived_key(&kvmodel::conformance::RedbHarness::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    renamed_struct_shares_every_derived_key(&kvmodel::conformance::RedisHarness::start().await)
        .await;
}
