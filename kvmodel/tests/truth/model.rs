//! Entities of the derived-data tests: an expiring session (a relation, a
//! unique claim, a count and a sum per user) and a lasting order.

use kvmodel::{KvEntity, Timestamp};
use serde::{Deserialize, Serialize};

/// The parent of the relations below.
#[allow(dead_code)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "truth", key = "account:{id}")]
pub struct Account {
    pub id: String,
}

/// A session keyed by its token, living three seconds (time enough for a
/// hundred and fifty writes on a busy cluster).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "truth", key = "session:{token}", ttl = "3s")]
#[kv(relation(name = "user", belongs_to = Account, by = user_id))]
#[kv(index(name = "by_role", fields(role), order_by = started_at))]
#[kv(counter(name = "per_user", group_by(user_id)))]
#[kv(counter(name = "hits_per_user", sum = hits, group_by(user_id)))]
pub struct Session {
    pub token: String,
    pub user_id: String,
    #[kv(unique)]
    pub handle: String,
    pub role: String,
    pub hits: i64,
    pub started_at: Timestamp,
}

/// An order that never expires; `amount` is a `u64`, so an old record can
/// hold a sum contribution a 64-bit counter cannot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "truth", key = "order:{id}")]
#[kv(relation(name = "user", belongs_to = Account, by = user_id, order_by = placed_at))]
#[kv(counter(name = "per_user", group_by(user_id)))]
#[kv(counter(name = "amount_per_user", sum = amount, group_by(user_id)))]
pub struct Order {
    pub id: String,
    pub user_id: String,
    #[kv(unique)]
    pub reference: String,
    pub amount: u64,
    pub placed_at: Timestamp,
}

pub fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

pub fn session(token: &str, user: &str) -> Session {
    Session {
        token: token.into(),
        user_id: user.into(),
        handle: format!("h-{token}"),
        role: "member".into(),
        hits: 3,
        started_at: ts("2026-01-01T00:00:00Z"),
    }
}

pub fn order(id: &str, user: &str, amount: u64) -> Order {
    Order {
        id: id.into(),
        user_id: user.into(),
        reference: format!("ref-{id}"),
        amount,
        placed_at: ts("2026-01-01T00:00:00Z"),
    }
}

/// A composite key with a hash tag, an index over an optional field and a
/// time bucket: the shapes the generated matchers must mirror.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "truth", key = "tenant:{tenant}:note:{id}", colocate = tenant)]
#[kv(index(name = "by_tag", fields(tenant, tag), order_by = at))]
#[kv(index(name = "by_hour", fields(tenant), order_by = hour(at)))]
#[kv(relation(name = "author", belongs_to = Account, by = author))]
pub struct Note {
    pub tenant: String,
    pub id: i64,
    pub tag: Option<String>,
    pub author: String,
    pub at: Timestamp,
}
