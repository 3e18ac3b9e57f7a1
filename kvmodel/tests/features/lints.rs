//! Generated code is hygienic and lint-clean in a user's crate: prelude
//! names are shadowed and every warning is an error.

#![deny(
    warnings,
    missing_debug_implementations,
    rust_2018_idioms,
    unused_qualifications
)]

#[allow(dead_code)]
mod shadowed {
    pub type Result<T> = ::core::marker::PhantomData<T>;
    pub struct Option;
    pub struct Some;
    pub struct None;
    pub struct Ok;
    pub struct Err;
    pub struct Vec;
    pub struct String;
    pub struct Box;
    pub trait Clone {}
    pub trait Send {}
    pub trait Debug {}
    pub struct Store;
}

mod user_code {
    #![allow(unused_imports)]
    use super::shadowed::*;

    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, kvmodel::KvEnum)]
    pub enum Kind {
        A,
        B,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, kvmodel::KvEntity)]
    #[kv(
        namespace = "lint",
        key = "item:{id}:{n}",
        version = 2,
        ttl = "1h",
        ttl_jitter = "5%",
        allow(W003)
    )]
    #[kv(index(name = "by_kind", fields(kind), order_by = day(at)))]
    #[kv(index(name = "by_slug", fields(slug), unique, normalize = "lowercase"))]
    #[kv(relation(name = "owner", belongs_to = Owner, by = owner, order_by = at))]
    #[kv(counter(name = "total", allow(W001)))]
    #[kv(counter(name = "weight", sum = weight, group_by(kind, hour(at), month(at))))]
    #[kv(migration(from = 1, add(weight = 0), rename(old = slug), remove(junk)))]
    pub struct Item {
        pub id: ::std::string::String,
        pub n: u64,
        pub slug: ::std::string::String,
        pub kind: Kind,
        pub owner: ::std::string::String,
        pub weight: i32,
        pub tag: ::core::option::Option<::std::string::String>,
        pub at: kvmodel::Timestamp,
        pub r#type: ::core::option::Option<u32>,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, kvmodel::KvEntity)]
    #[kv(namespace = "lint", key = "owner:{id}")]
    pub(crate) struct Owner {
        pub id: ::std::string::String,
        #[kv(index, order_by = id, allow(W002))]
        pub(crate) r#type: ::std::string::String,
    }
}

/// A crate that re-exports kvmodel points the generated code at its path.
mod reexport {
    pub use kvmodel as kvm;
}

mod renamed {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, kvmodel::KvEnum)]
    #[kv(crate = "crate::lints::reexport::kvm")]
    pub enum Tier {
        Free,
        Paid,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, kvmodel::KvEntity)]
    #[kv(
        crate = "crate::lints::reexport::kvm",
        namespace = "re",
        key = "acct:{id}"
    )]
    #[kv(counter(name = "per_tier", group_by(tier)))]
    pub struct Account {
        pub id: u64,
        pub tier: Tier,
    }
}

#[tokio::test]
async fn crate_override_points_generated_code_at_a_reexport() {
    use renamed::*;
    let repo = AccountRepo::new(kvmodel::MemoryStore::new());
    repo.create(&Account {
        id: 7,
        tier: Tier::Paid,
    })
    .await
    .unwrap();
    assert_eq!(repo.count_per_tier(Tier::Paid).await.unwrap(), 1);
    assert_eq!(AccountKeys::record(7), "re:acct:7");
}

#[tokio::test]
async fn generated_code_compiles_and_runs_under_deny_warnings() {
    use user_code::*;
    let store = kvmodel::MemoryStore::new();
    let items = ItemRepo::new(store.clone());
    let item = Item {
        id: "i".into(),
        n: 1,
        slug: "S".into(),
        kind: Kind::A,
        owner: "o".into(),
        weight: 3,
        tag: None,
        at: kvmodel::Timestamp::EPOCH,
        r#type: Some(1),
    };
    items.create(&item).await.unwrap();
    assert_eq!(items.find_by_slug("s").await.unwrap(), Some(item.clone()));
    let day = kvmodel::Date::from_ymd(1970, 1, 1).unwrap();
    let at = kvmodel::Timestamp::EPOCH;
    assert_eq!(items.sum_weight(Kind::A, at, day).await.unwrap(), 3);
    assert_eq!(
        items
            .list_by_owner("o", kvmodel::PageRequest::new(5))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(
        items
            .list_by_kind(Kind::A, kvmodel::PageRequest::new(5))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let owners = OwnerRepo::new(store);
    owners
        .create(&Owner {
            id: "o".into(),
            r#type: "t".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        owners
            .list_by_type("t", kvmodel::PageRequest::new(1))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let _ = format!("{items:?} {owners:?} {:?}", ItemKeys::all());
}
