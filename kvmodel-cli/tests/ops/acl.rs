//! `kvmodel acl` on a redis-server of the test's own: users made from the
//! lines it prints (with a password added) can do what their role needs —
//! every repository operation for a writer, every read for a reader, the
//! maintenance commands for an operator — and nothing else: a reader's
//! writes, other namespaces' keys and other commands are refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kvmodel::{AnyStore, PageRequest, Timestamp};
use kvmodel_examples::{sessions, shop};
use kvmodel_runtime::conformance::{RedisCluster, RedisServer};

const PASSWORD: &str = "s3cret-acl";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn kvmodel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvmodel"))
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The words of a line as `redis-cli` splits it: by spaces, a
/// double-quoted word kept whole.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Runs `kvmodel acl ARGS`, then every line it prints with a password
/// added, as the default user; the users' names.
async fn create_users(server: &RedisServer, args: &[&str]) -> Vec<String> {
    create_users_at(&[server.url()], args).await
}

/// [`create_users`] on every server at `urls` (the nodes of a cluster).
async fn create_users_at(urls: &[String], args: &[&str]) -> Vec<String> {
    let mut users = Vec::new();
    for url in urls {
        let conn = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        users = create_users_on(conn, args).await;
    }
    users
}

async fn create_users_on(
    mut conn: redis::aio::MultiplexedConnection,
    args: &[&str],
) -> Vec<String> {
    let mut full = vec!["acl"];
    full.extend_from_slice(args);
    let o = kvmodel(&full);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    assert!(
        text.contains("# Each user is created without a password"),
        "{text}"
    );
    let mut users = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut w = words(line);
        assert_eq!(&w[..2], ["ACL", "SETUSER"], "{line}");
        users.push(w[2].clone());
        w.insert(3, format!(">{PASSWORD}"));
        let mut cmd = redis::cmd(&w[0]);
        for a in &w[1..] {
            cmd.arg(a);
        }
        let reply: redis::RedisResult<String> = cmd.query_async(&mut conn).await;
        assert_eq!(reply.as_deref(), Ok("OK"), "{line}");
    }
    users
}

async fn admin(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

fn url(server: &RedisServer, user: &str) -> String {
    format!("redis://{user}:{PASSWORD}@127.0.0.1:{}", server.port())
}

/// `ACL DRYRUN user ARGS…`: `None` when allowed, the reason otherwise.
async fn dry_run(server: &RedisServer, user: &str, args: &[&str]) -> Option<String> {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("DRYRUN").arg(user).arg(args);
    let reply: String = cmd.query_async(&mut admin(server).await).await.unwrap();
    (reply != "OK").then_some(reply)
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn user(i: usize) -> shop::User {
    shop::User {
        id: format!("u{i}"),
        email: format!("U{i}@Example.com"),
        name: format!("User {i}"),
        status: shop::UserStatus::Active,
        age: None,
        address: None,
        tags: vec![],
        created_at: ts("2026-03-01T10:00:00Z"),
    }
}

fn session(id: &str) -> sessions::Session {
    sessions::Session {
        id: id.into(),
        token: format!("t-{id}"),
        user_id: "u1".into(),
        role: sessions::Role::Member,
        started_at: ts("2026-03-01T10:00:00Z"),
    }
}

/// Every repository operation of the shop (a unique index, an ordered
/// index, a relation, counters and sums) and of the sessions (expiring
/// records: receipts and the expiry ledger).
async fn write_everything(store: &AnyStore) {
    let users = shop::UserRepo::new(store.clone());
    for i in 0..4 {
        users.create(&user(i)).await.unwrap();
    }
    assert!(matches!(
        users.create(&user(1)).await,
        Err(kvmodel::Error::AlreadyExists { .. })
    ));
    let mut changed = user(2);
    changed.email = "two@example.com".into();
    changed.status = shop::UserStatus::Suspended;
    users.update(&changed).await.unwrap();
    users.modify("u3", |u| u.age = Some(30)).await.unwrap();
    assert!(users.upsert(&user(4)).await.unwrap());
    assert!(users.delete("u0").await.unwrap());
    users.create_many(&[user(5), user(6)]).await.unwrap();
    assert_eq!(users.get("u3").await.unwrap().unwrap().age, Some(30));
    assert_eq!(
        users
            .find_by_email("TWO@example.com")
            .await
            .unwrap()
            .unwrap()
            .id,
        "u2"
    );

    let products = shop::ProductRepo::new(store.clone());
    for (sku, price) in [("a", 500), ("b", 100), ("c", 300)] {
        products
            .create(&shop::Product {
                sku: sku.into(),
                category: "books".into(),
                title: sku.to_uppercase(),
                price_cents: price,
            })
            .await
            .unwrap();
    }
    assert!(products.delete("c").await.unwrap());

    let orders = shop::OrderRepo::new(store.clone());
    for (id, cents) in [("o1", 1000), ("o2", 250)] {
        orders
            .create(&shop::Order {
                id: id.into(),
                user_id: "u1".into(),
                total_cents: cents,
                created_at: ts("2026-03-01T12:00:00Z"),
            })
            .await
            .unwrap();
    }

    let sessions = sessions::SessionRepo::new(store.clone());
    sessions.create(&session("s1")).await.unwrap();
    sessions.create(&session("s2")).await.unwrap();
    assert!(sessions.delete("s2").await.unwrap());
    sessions.sweep_expired(100).await.unwrap();
    let windows = sessions::RateWindowRepo::new(store.clone());
    windows
        .create(&sessions::RateWindow {
            client: "c".into(),
            window: 7,
            hits: 0,
        })
        .await
        .unwrap();
    windows.modify("c", 7, |w| w.hits += 1).await.unwrap();
}

/// Every read of what [`write_everything`] wrote.
async fn read_everything(store: &AnyStore) {
    let users = shop::UserRepo::new(store.clone());
    assert_eq!(users.get("u1").await.unwrap(), Some(user(1)));
    assert_eq!(users.get("u0").await.unwrap(), None);
    assert!(users.exists("u5").await.unwrap());
    let many = users.get_many(&["u1", "u0", "u6"]).await.unwrap();
    assert_eq!(many.iter().filter(|u| u.is_some()).count(), 2);
    assert_eq!(
        users
            .find_by_email("u1@example.com")
            .await
            .unwrap()
            .map(|u| u.id),
        Some("u1".to_owned())
    );
    assert_eq!(users.find_by_email("u0@example.com").await.unwrap(), None);
    let first = users.list_all(PageRequest::new(3)).await.unwrap();
    let rest = users
        .list_all(PageRequest::new(10).after(first.next.clone().unwrap()))
        .await
        .unwrap();
    assert_eq!(first.items.len() + rest.items.len(), 6);
    assert_eq!(users.count_all().await.unwrap(), 6);
    assert_eq!(
        users
            .count_by_status(shop::UserStatus::Active)
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        users
            .count_signups_per_day("2026-03-01".parse().unwrap())
            .await
            .unwrap(),
        6
    );

    let products = shop::ProductRepo::new(store.clone());
    let books = products
        .list_by_category("books", PageRequest::new(1))
        .await
        .unwrap();
    assert_eq!(books.items[0].sku, "b");
    let more = products
        .list_by_category(
            "books",
            PageRequest::new(10).after(books.next.clone().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(
        more.items
            .iter()
            .map(|p| p.sku.as_str())
            .collect::<Vec<_>>(),
        ["a"]
    );
    let down = products
        .list_by_category("books", PageRequest::new(10).descending())
        .await
        .unwrap();
    assert_eq!(down.items.len(), 2);

    let orders = shop::OrderRepo::new(store.clone());
    let mine = orders
        .list_by_user("u1", PageRequest::new(10).descending())
        .await
        .unwrap();
    assert_eq!(
        mine.items.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(),
        ["o2", "o1"]
    );
    assert_eq!(orders.count_per_user("u1").await.unwrap(), 2);
    assert_eq!(
        orders
            .sum_revenue_by_day("2026-03-01".parse().unwrap())
            .await
            .unwrap(),
        1250
    );

    let sessions = sessions::SessionRepo::new(store.clone());
    assert_eq!(
        sessions.find_by_token("t-s1").await.unwrap(),
        Some(session("s1"))
    );
    assert_eq!(
        sessions
            .list_by_user("u1", PageRequest::new(5))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let windows = sessions::RateWindowRepo::new(store.clone());
    assert_eq!(windows.get("c", 7).await.unwrap().unwrap().hits, 1);
}

/// Whether `e` is Redis refusing a command or a key to the user: `NOPERM`
/// for a command sent, the script error Redis gives for one a script runs.
fn refused(e: &kvmodel::Error) -> bool {
    let text = format!("{e} {e:?}");
    text.contains("NOPERM")
        || text.contains("no permissions")
        || text.contains("can't run this command")
        || text.contains("can't access at least one of the keys")
}

/// The writer does everything the repositories do, the reader reads it
/// all and writes nothing, the operator verifies, repairs, migrates,
/// inspects and purges through the CLI; each is refused what its role
/// does not need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_from_the_rules_can_do_their_role_and_nothing_else() {
    let server = RedisServer::start();
    let users = create_users(
        &server,
        &[
            "--schema",
            "schemas/shop.yaml",
            "schemas/sessions.yaml",
            "--user",
            "app",
        ],
    )
    .await;
    assert_eq!(users, ["app-reader", "app-writer", "app-operator"]);

    // The writer: every operation of both namespaces.
    let writer = AnyStore::open(&url(&server, "app-writer")).await.unwrap();
    write_everything(&writer).await;
    read_everything(&writer).await;

    // The reader: every read; no write goes through, and none lands.
    let reader = AnyStore::open(&url(&server, "app-reader")).await.unwrap();
    read_everything(&reader).await;
    let r_users = shop::UserRepo::new(reader.clone());
    let e = r_users.create(&user(9)).await.unwrap_err();
    assert!(refused(&e), "{e}");
    let e = r_users.delete("u1").await.unwrap_err();
    assert!(refused(&e), "{e}");
    let e = sessions::SessionRepo::new(reader.clone())
        .create(&session("s9"))
        .await
        .unwrap_err();
    assert!(refused(&e), "{e}");
    read_everything(&reader).await;
    assert_eq!(r_users.get("u9").await.unwrap(), None);
    let mut as_reader = redis::Client::open(url(&server, "app-reader"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let e = redis::cmd("SET")
        .arg("shop:user:u1")
        .arg("x")
        .query_async::<()>(&mut as_reader)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("NOPERM"), "{e}");
    let e = redis::cmd("EVAL")
        .arg("return redis.call('SET', KEYS[1], 'x')")
        .arg(1)
        .arg("shop:user:u1")
        .query_async::<()>(&mut as_reader)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("can't run this command"), "{e}");

    // Refused to everyone: other namespaces' keys, keys outside any
    // namespace, and commands kvmodel never sends.
    for user in &users {
        for args in [
            &["get", "forum:user:1"][..],
            &["get", "shopping:user:1"],
            &["get", "~{forum:x#count:total}"],
            &["mget", "shop:user:u1", "forum:user:1"],
            &[
                "evalsha",
                "0000000000000000000000000000000000000000",
                "1",
                "forum:x",
            ],
            &["flushall"],
            &["flushdb"],
            &["config", "get", "*"],
            &["keys", "*"],
            &["del", "shop:user:u1"],
            &["acl", "list"],
            &["debug", "sleep", "0"],
            &["shutdown"],
            &["select", "1"],
            &["publish", "shop:x", "hello"],
            &["hset", "shop:user:u1", "a", "b"],
        ] {
            assert!(
                dry_run(&server, user, args).await.is_some(),
                "{user} may run {args:?}"
            );
        }
        for args in [
            &["get", "shop:user:u1"][..],
            &["get", "auth:session:s1"],
            &["mget", "~{shop:user#count:total}", "~shop:order:{u1}#x"],
            &[
                "zrangebylex",
                "shop:product#idx:by_category:books",
                "-",
                "+",
            ],
            &["zcard", "shop:user#all"],
            &["pttl", "auth:session:s1"],
            &[
                "evalsha",
                "0000000000000000000000000000000000000000",
                "1",
                "shop:x",
            ],
            &["eval", "return 1", "1", "auth:x"],
        ] {
            assert_eq!(
                dry_run(&server, user, args).await,
                None,
                "{user} may not run {args:?}"
            );
        }
    }
    let writes: [&[&str]; 4] = [
        &["set", "shop:user:u1", "x"],
        &["unlink", "auth:session:s1"],
        &["incrby", "~{shop:user#count:total}", "1"],
        &["zadd", "shop:user#all", "0", "x"],
    ];
    for args in writes {
        assert!(dry_run(&server, "app-reader", args).await.is_some());
        assert_eq!(dry_run(&server, "app-writer", args).await, None, "{args:?}");
        assert_eq!(dry_run(&server, "app-operator", args).await, None);
    }
    assert!(
        dry_run(&server, "app-reader", &["scan", "0"])
            .await
            .is_some()
    );
    assert!(
        dry_run(&server, "app-writer", &["scan", "0"])
            .await
            .is_some()
    );
    assert_eq!(dry_run(&server, "app-operator", &["scan", "0"]).await, None);

    // The operator: every maintenance command through the CLI.
    let op = url(&server, "app-operator");
    let run = |args: &[&str]| kvmodel(args);
    for schema in ["schemas/shop.yaml", "schemas/sessions.yaml"] {
        let o = run(&["verify", "--schema", schema, "--store", &op, "-q"]);
        assert_eq!(code(&o), 0, "{schema}: {}{}", out(&o), err(&o));
    }
    // Damage: a claim deleted, a counter moved, a record that does not read.
    let mut conn = admin(&server).await;
    let _: () = redis::cmd("DEL")
        .arg("shop:user#uniq:by_email:u1@example.com")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("shop:user:bad")
        .arg("not a record")
        .query_async(&mut conn)
        .await
        .unwrap();
    let shop_ops = |command: &'static str, more: &[&'static str]| {
        let mut args = vec![
            command,
            "--schema",
            "schemas/shop.yaml",
            "--store",
            op.as_str(),
        ];
        args.extend_from_slice(more);
        run(&args)
    };
    let o = shop_ops("verify", &["-q"]);
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
    let o = shop_ops("purge", &["User", "bad"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let o = shop_ops("reconcile", &["-q"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let o = shop_ops("verify", &["-q", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("app-operator:***@"), "{}", out(&o));
    assert!(!out(&o).contains(PASSWORD), "the report shows the password");
    let o = shop_ops("migrate", &["-q"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let o = shop_ops("migrate", &["--status"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let o = shop_ops("inspect", &["User", "u1"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("U1@Example.com"), "{}", out(&o));
    read_everything(&reader).await;

    // The reader and the writer cannot walk a store.
    for user in ["app-reader", "app-writer"] {
        let o = shop_ops_as(&server, user, "verify");
        assert_eq!(code(&o), 2, "{user}: {}{}", out(&o), err(&o));
        assert!(
            err(&o).contains("no permissions to run the 'scan' command"),
            "{user}: {}",
            err(&o)
        );
    }
}

fn shop_ops_as(server: &RedisServer, user: &str, command: &str) -> Output {
    kvmodel(&[
        command,
        "--schema",
        "schemas/shop.yaml",
        "--store",
        &url(server, user),
        "-q",
    ])
}

/// On a Redis Cluster, with `--cluster` and the lines run on every node:
/// the writer does everything the repositories do (cross-slot writes
/// included), the reader reads it all and writes nothing, the operator
/// verifies and repairs through the CLI; without `--cluster`, the writer
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_users_from_the_rules_can_do_their_role() {
    let cluster = tokio::task::spawn_blocking(RedisCluster::start)
        .await
        .unwrap();
    let nodes = cluster.seeds();
    let at = |user: &str| {
        let hosts: Vec<String> = cluster
            .ports()
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis+cluster://{user}:{PASSWORD}@{}", hosts.join(","))
    };
    let schemas = ["--schema", "schemas/shop.yaml", "schemas/sessions.yaml"];
    let plain = create_users_at(
        &nodes,
        &[&schemas[..], &["--role", "writer", "--user", "plain"]].concat(),
    )
    .await;
    assert_eq!(plain, ["plain"]);
    let plain = AnyStore::open(&at("plain")).await;
    assert!(
        plain.is_err() || {
            let e = shop::UserRepo::new(plain.unwrap())
                .create(&user(1))
                .await
                .unwrap_err();
            refused(&e)
        },
        "a writer made without --cluster can write on a cluster"
    );

    let users = create_users_at(
        &nodes,
        &[&schemas[..], &["--cluster", "--user", "app"]].concat(),
    )
    .await;
    assert_eq!(users, ["app-reader", "app-writer", "app-operator"]);
    let writer = AnyStore::open(&at("app-writer")).await.unwrap();
    write_everything(&writer).await;
    read_everything(&writer).await;

    let reader = AnyStore::open(&at("app-reader")).await.unwrap();
    read_everything(&reader).await;
    let r_users = shop::UserRepo::new(reader.clone());
    let e = r_users.create(&user(9)).await.unwrap_err();
    assert!(refused(&e), "{e}");
    assert_eq!(r_users.get("u9").await.unwrap(), None);

    let op = at("app-operator");
    for schema in ["schemas/shop.yaml", "schemas/sessions.yaml"] {
        let o = kvmodel(&["verify", "--schema", schema, "--store", &op, "-q"]);
        assert_eq!(code(&o), 0, "{schema}: {}{}", out(&o), err(&o));
        let o = kvmodel(&["reconcile", "--schema", schema, "--store", &op, "-q"]);
        assert_eq!(code(&o), 0, "{schema}: {}{}", out(&o), err(&o));
    }
    let o = kvmodel(&[
        "verify",
        "--schema",
        "schemas/shop.yaml",
        "--store",
        &at("app-writer"),
        "-q",
    ]);
    assert_eq!(code(&o), 2, "a writer cannot walk: {}{}", out(&o), err(&o));
    read_everything(&reader).await;
}

/// A user of one namespace is refused another's keys by the repositories
/// themselves; the default names are `<namespace>-<role>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_user_cannot_touch_another_namespace() {
    let server = RedisServer::start();
    let users = create_users(
        &server,
        &["--schema", "schemas/shop.yaml", "--role", "writer"],
    )
    .await;
    assert_eq!(users, ["shop-writer"]);
    let store = AnyStore::open(&url(&server, "shop-writer")).await.unwrap();
    shop::UserRepo::new(store.clone())
        .create(&user(1))
        .await
        .unwrap();
    let sessions = sessions::SessionRepo::new(store.clone());
    let e = sessions.create(&session("s1")).await.unwrap_err();
    assert!(refused(&e), "{e}");
    let e = sessions.get("s1").await.unwrap_err();
    assert!(refused(&e), "{e}");
}

/// The lines name exactly the roles asked for, and a bad user name or a
/// schema with errors is refused.
#[test]
fn roles_names_and_errors() {
    let o = kvmodel(&[
        "acl",
        "--schema",
        "schemas/shop.yaml",
        "--role",
        "reader",
        "--role",
        "operator",
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let lines: Vec<String> = out(&o)
        .lines()
        .filter(|l| l.starts_with("ACL SETUSER"))
        .map(|l| words(l)[2].clone())
        .collect();
    assert_eq!(lines, ["shop-reader", "shop-operator"]);
    let o = kvmodel(&["acl", "--schema", "schemas/shop.yaml", "--user", "a b"]);
    assert_eq!(code(&o), 2);
    let o = kvmodel(&[
        "acl",
        "--schema",
        "kvmodel-build/tests/errors/index_errors/schema.yaml",
    ]);
    assert_eq!(code(&o), 1);
    assert_eq!(code(&kvmodel(&["acl"])), 2);
}

/// An entity with a change feed: the writer's commits append to the feed
/// (its scripts run the Stream commands), the reader tails it, and a
/// schema without a feed grants none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_is_appended_by_the_writer_and_tailed_by_the_reader() {
    use super::tail::Order;
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("shop.yaml");
    std::fs::write(&schema, super::tail::SCHEMA).unwrap();
    let schema = schema.display().to_string();
    let users = create_users(&server, &["--schema", &schema, "--user", "feed"]).await;
    assert_eq!(users, ["feed-reader", "feed-writer", "feed-operator"]);

    let writer = AnyStore::open(&url(&server, "feed-writer")).await.unwrap();
    super::tail::create_pay_delete(writer).await;

    let reader = url(&server, "feed-reader");
    let lines = super::tail::tail_of(&schema, &reader, "Order", "start", "3");
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["created", "updated", "deleted"]);
    // The reader appends nothing.
    let feed = <Order as kvmodel_runtime::__private::Entity>::space().feed_key();
    let refused = dry_run(&server, "feed-reader", &["XADD", &feed, "*", "e", "x"]).await;
    assert!(refused.is_some(), "a reader may append to the feed");

    // Without a feed, no Stream command.
    let o = kvmodel(&["acl", "--schema", "schemas/shop.yaml", "--role", "writer"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(!out(&o).contains("+xadd"), "{}", out(&o));
}
