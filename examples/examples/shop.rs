//! A tour of the shop model (`schemas/shop.yaml`), on the embedded store by
//! default:
//!
//! ```sh
//! cargo run -p kvmodel-examples --example shop                          # redb in a temp file
//! cargo run -p kvmodel-examples --example shop -- memory:
//! cargo run -p kvmodel-examples --example shop -- redb:shop.redb
//! cargo run -p kvmodel-examples --example shop -- redis://127.0.0.1:6379
//! ```
//!
//! The URL goes to `AnyStore::open` (`--store URL` works too).

use kvmodel::{AnyStore, Batch, Date, PageRequest, Store, Timestamp};
use kvmodel_examples::shop::{
    Order, OrderRepo, Product, ProductRepo, User, UserKeys, UserRepo, UserStatus,
};

fn ts(s: &str) -> Timestamp {
    s.parse().expect("valid timestamp literal")
}

async fn tour<S: Store>(store: S) -> kvmodel::Result<()> {
    let users = UserRepo::new(store.clone());
    let products = ProductRepo::new(store.clone());
    let orders = OrderRepo::new(store.clone());

    // Start from a clean slate (the store may hold an earlier run's data):
    // delete removes records with their index entries and counter contributions.
    for id in ["ada", "grace", "old-timer"] {
        users.delete(id).await?;
    }
    for sku in ["b1", "b2", "b3", "b4", "b5"] {
        products.delete(sku).await?;
    }
    for id in ["o1", "o2", "o3"] {
        orders.delete(id).await?;
    }

    println!("== users, with a unique e-mail compared in lowercase");
    let ada = User {
        id: "ada".into(),
        email: "Ada@Example.com".into(),
        name: "Ada Lovelace".into(),
        status: UserStatus::Active,
        age: Some(36),
        address: None,
        tags: vec!["founder".into()],
        created_at: ts("2026-03-01T09:00:00Z"),
    };
    users.create(&ada).await?;
    let grace = User {
        id: "grace".into(),
        email: "grace@example.com".into(),
        name: "Grace Hopper".into(),
        ..ada.clone()
    };
    users.create(&grace).await?;
    let found = users.find_by_email("ADA@example.COM").await?;
    println!(
        "find_by_email(\"ADA@example.COM\") -> {:?}",
        found.map(|u| u.name)
    );

    println!("\n== the same e-mail again is a unique violation, and nothing is written");
    let imposter = User {
        id: "imposter".into(),
        email: "ada@EXAMPLE.com".into(),
        ..ada.clone()
    };
    match users.create(&imposter).await {
        Err(e) => println!("error: {e}"),
        Ok(()) => println!("unexpected: the duplicate was stored"),
    }
    println!(
        "get(\"imposter\") -> {:?}",
        users.get("imposter").await?.map(|u| u.id)
    );

    println!("\n== products by category, cheapest first, two per page");
    for (sku, title, price) in [
        ("b1", "Dune", 1299),
        ("b2", "Emma", 499),
        ("b3", "Ulysses", 899),
        ("b4", "Beloved", 1099),
        ("b5", "Hamlet", 399),
    ] {
        products
            .create(&Product {
                sku: sku.into(),
                category: "books".into(),
                title: title.into(),
                price_cents: price,
            })
            .await?;
    }
    let mut page = PageRequest::new(2);
    let mut n = 1;
    loop {
        let p = products.list_by_category("books", page).await?;
        let titles: Vec<String> = p
            .items
            .iter()
            .map(|p| format!("{} ({})", p.title, p.price_cents))
            .collect();
        println!("page {n}: {}", titles.join(", "));
        match p.next {
            Some(cursor) => page = PageRequest::new(2).after(cursor),
            None => break,
        }
        n += 1;
    }

    println!("\n== orders of a user (a relation), newest first, and counters");
    for (id, cents, at) in [
        ("o1", 2598, "2026-03-01T10:00:00Z"),
        ("o2", 399, "2026-03-01T15:30:00Z"),
        ("o3", 1099, "2026-03-02T08:00:00Z"),
    ] {
        orders
            .create(&Order {
                id: id.into(),
                user_id: "ada".into(),
                total_cents: cents,
                created_at: ts(at),
            })
            .await?;
    }
    let mine = orders
        .list_by_user("ada", PageRequest::new(10).descending())
        .await?;
    for o in &mine.items {
        println!("{} at {}: {} cents", o.id, o.created_at, o.total_cents);
    }
    let day = Date::from_ymd(2026, 3, 1).expect("valid date");
    println!("orders of ada: {}", orders.count_per_user("ada").await?);
    println!(
        "revenue on {day}: {} cents",
        orders.sum_revenue_by_day(day).await?
    );
    println!(
        "active users: {}",
        users.count_by_status(UserStatus::Active).await?
    );
    println!(
        "signups on {day}: {}",
        users.count_signups_per_day(day).await?
    );

    println!("\n== a record written by version 1 of the schema, read through its migration");
    let key = UserKeys::record("old-timer");
    let v1 = r#"{"v":1,"d":{"id":"old-timer","email":"old@example.com","full_name":"Old Timer","legacy_flag":true,"created_at":"2019-05-01T00:00:00.000Z"}}"#;
    println!("stored bytes: {v1}");
    let mut batch = Batch::new();
    batch.put(&key, v1.as_bytes().to_vec(), None);
    let _ = store.commit(batch).await?;
    let old = users.get("old-timer").await?.expect("just written");
    println!(
        "read as version 2: name = {:?}, status = {:?}, tags = {:?}",
        old.name, old.status, old.tags
    );
    users
        .modify("old-timer", |u| u.tags.push("migrated".into()))
        .await?;
    let raw = store.get(&key).await?.unwrap_or_default();
    println!(
        "after modify it is stored at version 2: {}",
        String::from_utf8_lossy(&raw)
    );
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--store" => url = args.next(),
            other if url.is_none() && !other.starts_with('-') => url = Some(other.to_owned()),
            other => {
                eprintln!(
                    "unknown argument `{other}`; usage: shop [[--store] memory:|redb:PATH|redis://HOST:PORT]"
                );
                return std::process::ExitCode::from(2);
            }
        }
    }
    let temp = std::env::temp_dir().join(format!("kvmodel-shop-{}.redb", std::process::id()));
    let url = url.unwrap_or_else(|| format!("redb:{}", temp.display()));
    println!("store: {url}\n");
    // The store is chosen at run time: `AnyStore` is one type for all of them.
    let result = match AnyStore::open(&url).await {
        Ok(store) => tour(store).await,
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&temp);
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
