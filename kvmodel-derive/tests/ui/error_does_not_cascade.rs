use serde::{Deserialize, Serialize};

// One mistake (an unknown field in an index) and code that uses every part
// of the repository: the compiler reports the mistake and nothing else.
#[derive(Clone, Serialize, Deserialize, kvmodel::KvEntity)]
#[kv(namespace = "shop", key = "user:{tenant}:{id}")]
#[kv(index(name = "by_plan", fields(plna)))]
#[kv(counter(name = "per_plan", group_by(plan)))]
pub struct User {
    pub tenant: String,
    pub id: String,
    #[kv(unique)]
    pub email: String,
    pub plan: String,
}

async fn uses(store: kvmodel::MemoryStore) -> kvmodel::Result<()> {
    let users = UserRepo::new(store);
    let _key: String = UserKeys::record("t", "1");
    let _claim: String = UserKeys::by_email("a@x.io");
    let _found: Option<User> = users.find_by_email("a@x.io").await?;
    let _page = users.list_by_plan("pro", kvmodel::PageRequest::new(10)).await?;
    let _n: i64 = users.count_per_plan("pro").await?;
    let _c: String = UserKeys::counter_per_plan("pro");
    let _u: User = users.modify("t", "1", |u| u.plan = "free".into()).await?;
    let _gone: bool = users.delete("t", "1").await?;
    let _there: bool = users.exists("t", "1").await?;
    let _all: i64 = users.count_all().await?;
    let _new: bool = users.upsert(&_u).await?;
    users.create_many(&[_u.clone()]).await?;
    let _t: User = users
        .try_modify("t", "1", |u| {
            u.plan = "pro".into();
            Ok::<(), kvmodel::Error>(())
        })
        .await?;
    Ok(())
}

fn main() {
    let _ = uses;
}
