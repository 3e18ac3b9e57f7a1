//! Entities used by the repository tests: two versions of one user schema
//! coexist here, as they do in a crate that tests its migrations.

use kvmodel::{KvEntity, KvEnum, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Active,
    Inactive,
    Suspended,
}

pub mod v1 {
    use super::*;

    /// The user as version 1 of the schema wrote it.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "shop", key = "user:{id}", version = 1)]
    #[kv(counter(name = "total"))]
    pub struct User {
        pub id: String,
        #[kv(unique, normalize = "lowercase")]
        pub email: String,
        pub full_name: String,
        pub legacy_flag: bool,
        pub created_at: Timestamp,
    }
}

pub mod v2 {
    use super::*;

    /// Version 2: `full_name` became `name`, `status` arrived with an index
    /// and a counter that did not exist for version-1 records.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
    #[kv(namespace = "shop", key = "user:{id}", version = 2)]
    #[kv(index(name = "by_status", fields(status), order_by = created_at, since = 2))]
    #[kv(counter(name = "total"))]
    #[kv(counter(name = "by_status", group_by(status), since = 2))]
    #[kv(migration(from = 1, rename(full_name = name), add(status = "active"), remove(legacy_flag)))]
    pub struct User {
        pub id: String,
        #[kv(unique, normalize = "lowercase")]
        pub email: String,
        pub name: String,
        pub status: Status,
        pub visits: Option<u64>,
        pub created_at: Timestamp,
    }
}

pub use v2::{User, UserKeys, UserRepo};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "order:{id}", encoding = "msgpack")]
#[kv(relation(name = "user", belongs_to = User, by = user_id, order_by = created_at))]
#[kv(counter(name = "per_user", group_by(user_id)))]
#[kv(counter(name = "revenue_by_day", sum = total_cents, group_by(day(created_at))))]
pub struct Order {
    pub id: String,
    pub user_id: String,
    pub total_cents: i64,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(
    namespace = "auth",
    key = "session:{id}",
    ttl = "2s",
    ttl_jitter = "10%"
)]
#[kv(index(name = "by_user", fields(user_id), order_by = started_at))]
pub struct Session {
    pub id: String,
    #[kv(unique)]
    pub token: String,
    pub user_id: String,
    pub started_at: Timestamp,
}

/// A composite key with an integer part and a hash tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "docs", key = "tenant:{tenant}:doc:{id}", colocate = tenant)]
#[kv(index(name = "by_title", fields(tenant, title), unique))]
#[kv(counter(name = "per_tenant", group_by(tenant)))]
pub struct Doc {
    pub tenant: String,
    pub id: i64,
    pub title: String,
}

/// Records whose keys share `Doc`'s first literal segment: on a store
/// that ranges over its keys, `Doc`'s listing must leave them out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "docs", key = "tenant:{tenant}:note:{id}")]
pub struct Note {
    pub tenant: String,
    pub id: i64,
}

/// Old versions of a profile, read through a chain of `From` impls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(version = 1)]
pub struct ProfileV1 {
    pub id: String,
    pub display: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(version = 2, migrate_from = ProfileV1)]
pub struct ProfileV2 {
    pub id: String,
    pub first: String,
    pub last: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "profile:{id}", version = 3, migrate_from = ProfileV2)]
pub struct Profile {
    pub id: String,
    pub first: String,
    pub last: String,
    pub initials: String,
}

impl From<ProfileV1> for ProfileV2 {
    fn from(v: ProfileV1) -> Self {
        let (first, last) = v.display.split_once(' ').unwrap_or((&v.display, ""));
        ProfileV2 {
            id: v.id,
            first: first.into(),
            last: last.into(),
        }
    }
}

impl From<ProfileV2> for Profile {
    fn from(v: ProfileV2) -> Self {
        let initials = format!(
            "{}{}",
            v.first.chars().next().unwrap_or('?'),
            v.last.chars().next().unwrap_or('?')
        );
        Profile {
            id: v.id,
            first: v.first,
            last: v.last,
            initials,
        }
    }
}

pub fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

pub fn user(id: &str, email: &str, status: Status, at: &str) -> User {
    User {
        id: id.into(),
        email: email.into(),
        name: format!("user {id}"),
        status,
        visits: None,
        created_at: ts(at),
    }
}

pub fn order(id: &str, user_id: &str, cents: i64, at: &str) -> Order {
    Order {
        id: id.into(),
        user_id: user_id.into(),
        total_cents: cents,
        created_at: ts(at),
    }
}
