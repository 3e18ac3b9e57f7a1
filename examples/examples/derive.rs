//! The shop's users and orders written as `#[derive(KvEntity)]` attributes
//! instead of a schema file; runs on the in-memory store.
//!
//! ```sh
//! cargo run -p kvmodel-examples --example derive
//! ```

use kvmodel::{Date, KvEntity, KvEnum, MemoryStore, PageRequest, Timestamp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
pub enum UserStatus {
    Active,
    Inactive,
    Suspended,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 2)]
#[kv(counter(name = "by_status", group_by(status), since = 2))]
#[kv(counter(name = "signups_per_day", group_by(day(created_at))))]
#[kv(migration(from = 1, rename(full_name = name), add(status = "active"), remove(legacy_flag)))]
pub struct User {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub email: String,
    pub name: String,
    pub status: UserStatus,
    pub created_at: Timestamp,
}

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

#[tokio::main(flavor = "current_thread")]
async fn main() -> kvmodel::Result<()> {
    let store = MemoryStore::new();
    let users = UserRepo::new(store.clone());
    let orders = OrderRepo::new(store);

    let at: Timestamp = "2026-03-01T09:00:00Z"
        .parse()
        .expect("valid timestamp literal");
    users
        .create(&User {
            id: "ada".into(),
            email: "Ada@Example.com".into(),
            name: "Ada".into(),
            status: UserStatus::Active,
            created_at: at,
        })
        .await?;
    for (i, cents) in [1200, 300, 4500].into_iter().enumerate() {
        let created_at = at.plus_millis(i as i64 * 3_600_000);
        orders
            .create(&Order {
                id: format!("o{i}"),
                user_id: "ada".into(),
                total_cents: cents,
                created_at,
            })
            .await?;
    }
    println!("key of ada: {}", UserKeys::record("ada"));
    println!(
        "find_by_email: {:?}",
        users
            .find_by_email("ada@example.com")
            .await?
            .map(|u| u.name)
    );
    let page = orders.list_by_user("ada", PageRequest::new(2)).await?;
    println!(
        "first page of ada's orders: {:?}",
        page.items.iter().map(|o| &o.id).collect::<Vec<_>>()
    );
    let day = Date::from_ymd(2026, 3, 1).expect("valid date");
    println!(
        "revenue on {day}: {}",
        orders.sum_revenue_by_day(day).await?
    );
    users
        .modify("ada", |u| u.status = UserStatus::Suspended)
        .await?;
    println!(
        "active: {}, suspended: {}",
        users.count_by_status(UserStatus::Active).await?,
        users.count_by_status(UserStatus::Suspended).await?
    );
    Ok(())
}
