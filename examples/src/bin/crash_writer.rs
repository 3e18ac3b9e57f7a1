//! A write workload for crash tests: creates, modifies and deletes users and
//! orders of the shop model on the store at a URL, one after another, until
//! it is killed or a write fails. Before each write it prints `begin OP` and
//! after it succeeds `ack OP`, flushing each line, so whoever kills it knows
//! which writes were acknowledged and which one was in flight.
//!
//! ```sh
//! crash_writer redb:/tmp/shop.redb 0        # from user 0 on, until killed
//! ```

use kvmodel::Timestamp;
use kvmodel_examples::shop::{Order, OrderRepo, User, UserRepo, UserStatus};
use kvmodel_examples::workload::{self, step};

fn user(i: u64) -> User {
    User {
        id: format!("u{i}"),
        email: format!("U{i}@Example.com"),
        name: format!("user {i}"),
        status: UserStatus::Active,
        age: None,
        address: None,
        tags: Vec::new(),
        created_at: Timestamp::from_unix_millis(1_767_225_600_000 + i as i64 * 3_600_000)
            .expect("a timestamp in range"),
    }
}

fn order(i: u64) -> Order {
    Order {
        id: format!("o{i}"),
        user_id: format!("u{i}"),
        total_cents: 100 + i as i64,
        created_at: Timestamp::from_unix_millis(1_767_225_600_000 + i as i64 * 60_000)
            .expect("a timestamp in range"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let [url, start] = workload::args("crash_writer STORE_URL FIRST_USER");
    let start = workload::number("FIRST_USER", &start);
    let store = workload::open(&url).await;
    let users = UserRepo::new(store.clone());
    let orders = OrderRepo::new(store);
    for i in start.. {
        step(format!("create-user {i}"), users.create(&user(i))).await;
        step(format!("create-order {i}"), orders.create(&order(i))).await;
        if i > start {
            let j = i - 1;
            step(format!("modify-user {j}"), async {
                users
                    .modify(&format!("u{j}"), |u| u.status = UserStatus::Inactive)
                    .await
                    .map(drop)
            })
            .await;
        }
        if i >= start + 2 {
            let j = i - 2;
            step(format!("delete-order {j}"), async {
                orders.delete(&format!("o{j}")).await.map(drop)
            })
            .await;
        }
        if i >= start + 3 && i % 3 == 0 {
            let j = i - 3;
            step(format!("delete-user {j}"), async {
                users.delete(&format!("u{j}")).await.map(drop)
            })
            .await;
        }
    }
}
