//! The committed generated code of every schema: up to date, and working on
//! the in-memory, embedded and Redis stores.

use std::path::Path;
use std::time::Duration;

use kvmodel::{Batch, Date, PageRequest, Store, Timestamp};
use kvmodel_examples::{activity, forum, sessions, shop, social};
use kvmodel_runtime::conformance::Harness;

#[test]
fn committed_files_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["shop", "sessions", "activity", "social", "links"] {
        let schema =
            kvmodel_build::load_file(&root.join(format!("../schemas/{name}.yaml"))).unwrap();
        let files = kvmodel_build::generate(&[schema]).unwrap();
        let committed =
            std::fs::read_to_string(root.join(format!("src/generated/{name}.rs"))).unwrap();
        assert!(
            committed == files[0].contents,
            "examples/src/generated/{name}.rs is out of date; run `kvmodel generate schemas/{name}.yaml -o examples/src/generated/{name}.rs`"
        );
    }
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn user(id: &str, email: &str, at: &str) -> shop::User {
    shop::User {
        id: id.into(),
        email: email.into(),
        name: format!("User {id}"),
        status: shop::UserStatus::Active,
        age: None,
        address: None,
        tags: vec![],
        created_at: ts(at),
    }
}

async fn shop_works<H: Harness>(h: &H) {
    let users = shop::UserRepo::new(h.store());
    users
        .create(&user("u1", "Ada@Example.com", "2026-03-01T10:00:00Z"))
        .await
        .unwrap();
    assert_eq!(
        users
            .find_by_email("ada@example.COM")
            .await
            .unwrap()
            .unwrap()
            .id,
        "u1"
    );
    let day = Date::from_ymd(2026, 3, 1).unwrap();
    assert_eq!(users.count_signups_per_day(day).await.unwrap(), 1);
    assert_eq!(
        users
            .count_by_status(shop::UserStatus::Active)
            .await
            .unwrap(),
        1
    );

    // A version-1 record (full_name, legacy_flag, no status or tags) reads
    // through the declared migration; the schema's defaults fill the gaps.
    let key = shop::UserKeys::record("old");
    let v1 = br#"{"v":1,"d":{"id":"old","email":"old@x.io","full_name":"Old Timer","legacy_flag":true,"created_at":"2020-01-01T00:00:00.000Z","address":{"street":"1 Main St","city":"Springfield","postal_code":"12345"}}}"#;
    let mut b = Batch::new();
    b.put(&key, v1.to_vec(), None);
    assert!(h.store().commit(b).await.unwrap().is_applied());
    let old = users.get("old").await.unwrap().unwrap();
    assert_eq!(
        (old.name.as_str(), old.status, old.tags.len()),
        ("Old Timer", shop::UserStatus::Active, 0)
    );
    assert_eq!(old.address.unwrap().country, "USA", "nested default");
    assert_eq!(
        users
            .count_by_status(shop::UserStatus::Active)
            .await
            .unwrap(),
        1,
        "the v1 record was never counted by status"
    );
    users
        .modify("old", |u| u.status = shop::UserStatus::Suspended)
        .await
        .unwrap();
    assert_eq!(
        users
            .count_by_status(shop::UserStatus::Suspended)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        users
            .count_by_status(shop::UserStatus::Active)
            .await
            .unwrap(),
        1,
        "nothing was taken from a group it never joined"
    );

    let products = shop::ProductRepo::new(h.store());
    for (sku, price) in [("a", 500), ("b", 100), ("c", 300), ("d", 200)] {
        let p = shop::Product {
            sku: sku.into(),
            category: "books".into(),
            title: sku.to_uppercase(),
            price_cents: price,
        };
        products.create(&p).await.unwrap();
    }
    let first = products
        .list_by_category("books", PageRequest::new(3))
        .await
        .unwrap();
    assert_eq!(
        first
            .items
            .iter()
            .map(|p| p.price_cents)
            .collect::<Vec<_>>(),
        vec![100, 200, 300]
    );
    let rest = products
        .list_by_category("books", PageRequest::new(3).after(first.next.unwrap()))
        .await
        .unwrap();
    assert_eq!(
        rest.items.iter().map(|p| p.price_cents).collect::<Vec<_>>(),
        vec![500]
    );
    assert!(rest.next.is_none());
    let cheap = products
        .list_by_category("books", PageRequest::new(10).end_before(300i64))
        .await
        .unwrap();
    assert_eq!(cheap.items.len(), 2);

    let orders = shop::OrderRepo::new(h.store());
    for (id, cents, at) in [
        ("o1", 1000, "2026-03-01T09:00:00Z"),
        ("o2", 250, "2026-03-01T18:00:00Z"),
        ("o3", 99, "2026-03-02T01:00:00Z"),
    ] {
        orders
            .create(&shop::Order {
                id: id.into(),
                user_id: "u1".into(),
                total_cents: cents,
                created_at: ts(at),
            })
            .await
            .unwrap();
    }
    let mine = orders
        .list_by_user("u1", PageRequest::new(10).descending())
        .await
        .unwrap();
    assert_eq!(
        mine.items.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(),
        vec!["o3", "o2", "o1"]
    );
    assert_eq!(orders.sum_revenue_by_day(day).await.unwrap(), 1250);
    assert_eq!(orders.count_per_user("u1").await.unwrap(), 3);
}

async fn sessions_work<H: Harness>(h: &H) {
    let repo = sessions::SessionRepo::new(h.store());
    let s = sessions::Session {
        id: "s1".into(),
        token: "t1".into(),
        user_id: "u1".into(),
        role: sessions::Role::Admin,
        started_at: ts("2026-03-01T10:00:00Z"),
    };
    repo.create(&s).await.unwrap();
    assert_eq!(repo.find_by_token("t1").await.unwrap(), Some(s.clone()));
    let windows = sessions::RateWindowRepo::new(h.store());
    windows
        .create(&sessions::RateWindow {
            client: "c".into(),
            window: 7,
            hits: 0,
        })
        .await
        .unwrap();
    for _ in 0..3 {
        windows.modify("c", 7, |w| w.hits += 1).await.unwrap();
    }
    assert_eq!(windows.get("c", 7).await.unwrap().unwrap().hits, 3);
    // 30 minutes plus at most 10% jitter.
    h.pass(Duration::from_secs(34 * 60)).await;
    assert_eq!(repo.get("s1").await.unwrap(), None);
    assert_eq!(repo.find_by_token("t1").await.unwrap(), None);
    assert_eq!(windows.get("c", 7).await.unwrap(), None);
    assert!(
        repo.list_by_user("u1", PageRequest::new(5))
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

async fn activity_works<H: Harness>(h: &H) {
    let events = activity::EventRepo::new(h.store());
    let actors = activity::ActorRepo::new(h.store());
    actors
        .create(&activity::Actor {
            id: "a1".into(),
            name: "Ada".into(),
        })
        .await
        .unwrap();
    for i in 0..30u32 {
        let e = activity::Event {
            id: kvmodel::Uuid::from_u128(u128::from(i) + 1),
            actor_id: "a1".into(),
            subject: if i % 2 == 0 {
                "order:1".into()
            } else {
                "order:2".into()
            },
            kind: if i % 3 == 0 {
                activity::EventKind::Commented
            } else {
                activity::EventKind::Updated
            },
            at: Timestamp::from_unix_millis(1_772_359_200_000 + i64::from(i) * 600_000).unwrap(),
            attributes: Default::default(),
        };
        events.create(&e).await.unwrap();
    }
    // A time range of one subject, read in pages of 4.
    let from = Timestamp::from_unix_millis(1_772_359_200_000 + 6 * 600_000).unwrap();
    let to = Timestamp::from_unix_millis(1_772_359_200_000 + 20 * 600_000).unwrap();
    let mut page = PageRequest::new(4).start_at(from).end_before(to);
    let mut seen = Vec::new();
    loop {
        let p = events
            .list_by_subject("order:1", page.clone())
            .await
            .unwrap();
        seen.extend(p.items.iter().map(|e| e.at));
        match p.next {
            Some(c) => page = PageRequest::new(4).start_at(from).end_before(to).after(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7, "events 6, 8, …, 18");
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(
        events
            .list_by_actor("a1", PageRequest::new(100))
            .await
            .unwrap()
            .items
            .len(),
        30
    );
    let hour = Timestamp::from_unix_millis(1_772_359_200_000).unwrap();
    assert_eq!(events.count_per_hour(hour).await.unwrap(), 6);
    assert_eq!(
        events
            .count_per_kind_per_hour(activity::EventKind::Commented, hour)
            .await
            .unwrap(),
        2
    );
}

/// The social schema, from YAML: likes of one hot post written by 16
/// tasks at once are counted exactly on sharded counters, and `verify`
/// sees the shards as one counter.
async fn social_works<H: Harness>(h: &H) {
    let store = h.store();
    let mut tasks = Vec::new();
    for t in 0..16 {
        let likes = social::LikeRepo::new(store.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                likes
                    .create(&social::Like {
                        post_id: "p1".into(),
                        user_id: format!("u{t}-{i}"),
                        at: ts("2026-03-01T10:00:00Z"),
                    })
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let likes = social::LikeRepo::new(store.clone());
    assert_eq!(likes.count_per_post("p1").await.unwrap(), 160);
    assert_eq!(likes.count_total().await.unwrap(), 160);
    assert_eq!(likes.count_per_post("p2").await.unwrap(), 0);
    let shard_keys: Vec<String> = (0..16)
        .map(|i| {
            kvmodel_runtime::__private::key::shard_key(&social::LikeKeys::counter_per_post("p1"), i)
        })
        .collect();
    let written = store.get_many(&shard_keys).await.unwrap();
    assert!(written.iter().filter(|v| v.is_some()).count() > 1);
    assert!(likes.delete("p1", "u0-0").await.unwrap());
    assert_eq!(likes.count_per_post("p1").await.unwrap(), 159);
    assert!(likes.verify(25).await.unwrap().is_clean());

    // An author's posts are capped at the newest 1000: the oldest of 1002
    // leave the listing, the records stay.
    let posts = social::PostRepo::new(store.clone());
    let base = ts("2026-03-01T00:00:00Z").as_unix_millis();
    for i in (0..1002).rev() {
        let created_at = kvmodel::Timestamp::from_unix_millis(base + i * 1000).unwrap();
        posts
            .create(&social::Post {
                id: format!("p{i}"),
                author_id: "ada".into(),
                title: format!("Post {i}"),
                body: String::new(),
                created_at,
            })
            .await
            .unwrap();
    }
    let page = posts
        .list_by_author("ada", PageRequest::new(5))
        .await
        .unwrap();
    let first: Vec<&str> = page.items.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(first, vec!["p2", "p3", "p4", "p5", "p6"]);
    assert_eq!(
        store
            .collection_len(&social::PostKeys::relation_author("ada"))
            .await
            .unwrap(),
        1000
    );
    assert!(posts.get("p0").await.unwrap().is_some());
    assert_eq!(posts.count_all().await.unwrap(), 1002);

    // Posts and tags, linked many-to-many from YAML: both directions and
    // both counts; a deleted tag leaves its posts' listings.
    let tags = social::TagRepo::new(store.clone());
    for name in ["rust", "kv"] {
        tags.create(&social::Tag {
            name: name.into(),
            title: name.to_uppercase(),
        })
        .await
        .unwrap();
    }
    assert!(posts.link_tags("p1", "rust").await.unwrap());
    assert!(posts.link_tags("p1", "kv").await.unwrap());
    assert!(posts.link_tags("p2", "rust").await.unwrap());
    assert!(!posts.link_tags("p2", "rust").await.unwrap());
    let of_p1 = posts.list_tags("p1", PageRequest::new(10)).await.unwrap();
    let names: Vec<&str> = of_p1.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["kv", "rust"]);
    let of_rust = tags.list_posts("rust", PageRequest::new(10)).await.unwrap();
    let ids: Vec<&str> = of_rust.items.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["p1", "p2"]);
    assert_eq!(tags.count_posts("rust").await.unwrap(), 2);
    assert!(tags.delete("kv").await.unwrap());
    let of_p1 = posts.list_tags("p1", PageRequest::new(10)).await.unwrap();
    assert_eq!(of_p1.items.len(), 1);
    assert_eq!(posts.count_tags("p1").await.unwrap(), 1);
    assert!(posts.unlink_tags("p2", "rust").await.unwrap());
    assert_eq!(tags.count_posts("rust").await.unwrap(), 1);
    assert!(posts.verify(100).await.unwrap().is_clean());
    assert!(tags.verify(100).await.unwrap().is_clean());
}

async fn forum_works<H: Harness>(h: &H) {
    let store = h.store();
    let boards = forum::BoardRepo::new(store.clone());
    let threads = forum::ThreadRepo::new(store.clone());
    let replies = forum::ReplyRepo::new(store.clone());
    let at = ts("2026-04-01T00:00:00Z");
    let thread = |id: &str, board: &str| forum::Thread {
        id: id.into(),
        board_id: board.into(),
        title: format!("Thread {id}"),
        created_at: at,
    };
    // A thread may only name a board that exists.
    assert!(matches!(
        threads.create(&thread("t1", "rust")).await,
        Err(kvmodel::Error::MissingParent {
            relation: "board",
            ..
        })
    ));
    boards
        .create(&forum::Board {
            id: "rust".into(),
            title: "Rust".into(),
        })
        .await
        .unwrap();
    threads.create(&thread("t1", "rust")).await.unwrap();
    threads.create(&thread("t2", "rust")).await.unwrap();
    for i in 0..70 {
        replies
            .create(&forum::Reply {
                id: format!("r{i}"),
                thread_id: if i < 65 { "t1" } else { "t2" }.into(),
                body: String::new(),
                at,
            })
            .await
            .unwrap();
    }
    // A board with threads stays.
    assert!(matches!(
        boards.delete("rust").await,
        Err(kvmodel::Error::Restricted {
            relation: "board",
            child: "Thread",
            ..
        })
    ));
    // Deleting a thread deletes its replies, more than one page of them,
    // with their counter.
    assert!(threads.delete("t1").await.unwrap());
    assert_eq!(replies.count_all().await.unwrap(), 5);
    assert_eq!(replies.count_per_thread("t1").await.unwrap(), 0);
    assert_eq!(replies.count_per_thread("t2").await.unwrap(), 5);
    assert!(
        replies
            .list_by_thread("t1", PageRequest::new(10))
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(threads.delete("t2").await.unwrap());
    assert!(boards.delete("rust").await.unwrap());
    assert_eq!(replies.count_all().await.unwrap(), 0);
    for clean in [
        boards.verify(50).await.unwrap().is_clean(),
        threads.verify(50).await.unwrap().is_clean(),
        replies.verify(50).await.unwrap().is_clean(),
    ] {
        assert!(clean);
    }
}

macro_rules! on_every_store {
    ($($case:ident),*) => {
        mod memory {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(&kvmodel_runtime::conformance::MemoryHarness::new()).await;
            }
        )*}
        mod redb {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(&kvmodel_runtime::conformance::RedbHarness::new()).await;
            }
        )*}
    };
}

on_every_store!(
    shop_works,
    sessions_work,
    activity_works,
    social_works,
    forum_works
);

mod redis {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shop_works() {
        super::shop_works(&kvmodel_runtime::conformance::RedisHarness::start().await).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn activity_works() {
        super::activity_works(&kvmodel_runtime::conformance::RedisHarness::start().await).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn social_works() {
        super::social_works(&kvmodel_runtime::conformance::RedisHarness::start().await).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn forum_works() {
        super::forum_works(&kvmodel_runtime::conformance::RedisHarness::start().await).await;
    }
}
