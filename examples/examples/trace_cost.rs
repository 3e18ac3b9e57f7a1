//! A fixed workload on the in-memory store (creates, gets, modifies,
//! deletes), for measuring what tracing costs without a subscriber: build
//! it with and without the `tracing` feature and compare instruction counts
//! (BENCHMARKS.md has the commands).

use kvmodel::{KvEntity, MemoryStore};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "t", key = "user:{id}")]
#[kv(index(name = "by_plan", fields(plan), order_by = credits))]
#[kv(counter(name = "per_plan", group_by(plan)))]
struct User {
    id: String,
    #[kv(unique, normalize = "lowercase")]
    email: String,
    plan: String,
    credits: i64,
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("a number of records"))
        .unwrap_or(10_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let users = UserRepo::new(MemoryStore::new());
        for i in 0..n {
            let u = User {
                id: format!("u{i}"),
                email: format!("U{i}@x.io"),
                plan: ["free", "pro"][i as usize % 2].into(),
                credits: i64::from(i),
            };
            users.create(&u).await.expect("create");
            users.get(&u.id).await.expect("get");
            users
                .modify(&u.id, |u| u.plan = "team".into())
                .await
                .expect("modify");
        }
        for i in 0..n {
            users.delete(&format!("u{i}")).await.expect("delete");
        }
    });
}
