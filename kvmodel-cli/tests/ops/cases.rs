//! The cases, on either backend.

use std::process::Command;
use std::time::Duration;

use kvmodel::{Batch, Date, Error, Store};
use kvmodel_examples::shop::{
    Order, OrderKeys, OrderRepo, Product, ProductRepo, User, UserKeys, UserRepo, UserStatus,
};
use kvmodel_runtime::__private::{
    ModelDef, WalkState, Walker,
    ledger::{self, Acquired, Lease, Outcome},
};
use serde_json::Value;

use super::support::*;

fn user(i: usize) -> User {
    User {
        id: format!("u{i}"),
        email: format!("U{i}@Example.com"),
        name: format!("User {i}"),
        status: UserStatus::Active,
        age: None,
        address: None,
        tags: vec![],
        created_at: ts("2026-03-01T10:00:00Z"),
    }
}

fn order(i: usize, user: usize) -> Order {
    Order {
        id: format!("o{i}"),
        user_id: format!("u{user}"),
        total_cents: 100 * i as i64,
        created_at: ts("2026-03-02T10:00:00Z"),
    }
}

/// Users, orders and products written by generated code.
async fn populate(b: &Backend) {
    let store = b.open().await;
    let users = UserRepo::new(store.clone());
    let orders = OrderRepo::new(store.clone());
    let products = ProductRepo::new(store.clone());
    for i in 0..4 {
        users.create(&user(i)).await.unwrap();
    }
    for i in 0..3 {
        orders.create(&order(i, i)).await.unwrap();
    }
    for (sku, cat, price) in [
        ("p1", "books", 500),
        ("p2", "books", 300),
        ("p3", "toys", 900),
    ] {
        products
            .create(&Product {
                sku: sku.into(),
                category: cat.into(),
                title: format!("{sku} title"),
                price_cents: price,
            })
            .await
            .unwrap();
    }
}

fn day() -> Date {
    "2026-03-01".parse().unwrap()
}

/// Deletes a claim, bumps a counter and leaves an orphaned member.
async fn damage(b: &Backend) {
    let store = b.open().await;
    let mut batch = Batch::new();
    batch
        .delete(UserKeys::by_email("u1@example.com"))
        .incr(UserKeys::counter_signups_per_day(day()), 5)
        .add(
            OrderKeys::relation_user("u2"),
            kvmodel::__private::sort_of(&ts("2026-03-02T10:00:00Z")),
            OrderKeys::record("o404").into_bytes(),
        );
    assert!(store.commit(batch).await.unwrap().is_applied());
}

pub async fn damage_is_found_repaired_and_gone(b: Backend) {
    populate(&b).await;
    damage(&b).await;
    let url = b.url();
    let o = kvmodel(&ops("verify", &url, &["-q"]));
    assert_eq!(code(&o), 1, "drift exits 1: {}{}", out(&o), err(&o));
    let text = out(&o);
    for line in [
        "User (4 records): 2 problem(s)",
        "  missing claim shop:user#uniq:by_email:u1@example.com of shop:user:u1",
        "  counter shop:user#count:signups_per_day:2026-03-01 holds 9, the records add up to 4",
        "Order (3 records): 1 problem(s)",
        "  orphaned member shop:order:o404 in shop:order#rel:user:u2 (its record is gone or does not derive it)",
        "Product (3 records): clean",
        "verify: 3 problem(s) in 3 entities",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in\n{text}"
        );
    }
    let o = kvmodel(&ops("verify", &url, &["-q", "--format", "json"]));
    assert_eq!(code(&o), 1);
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(doc["problems"], 3);
    let kinds: Vec<&str> = doc["entities"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["problems"].as_array().unwrap())
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["missing_claim", "counter", "orphan_member"]);

    let o = kvmodel(&ops("reconcile", &url, &["--dry-run", "-q"]));
    assert_eq!(code(&o), 1, "a dry run reports, as verify does");
    assert!(
        out(&o).contains("  would repair missing claim"),
        "{}",
        out(&o)
    );
    let o = kvmodel(&ops("reconcile", &url, &["-q"]));
    assert_eq!(code(&o), 0, "everything repaired: {}{}", out(&o), err(&o));
    assert!(
        out(&o).contains("  repaired counter shop:user#count:signups_per_day:2026-03-01 holds 9")
    );
    assert!(
        out(&o).ends_with("reconcile: 3 problem(s) in 3 entities, 3 repaired\n"),
        "{}",
        out(&o)
    );
    let o = kvmodel(&ops("verify", &url, &["-q"]));
    assert_eq!(code(&o), 0, "{}", out(&o));
    assert!(
        out(&o).ends_with("verify: 0 problem(s) in 3 entities\n"),
        "{}",
        out(&o)
    );

    let store = b.open().await;
    let users = UserRepo::new(store.clone());
    assert_eq!(
        users
            .find_by_email("u1@example.com")
            .await
            .unwrap()
            .unwrap()
            .id,
        "u1"
    );
    assert_eq!(users.count_signups_per_day(day()).await.unwrap(), 4);
}

pub async fn migrate_backfills_what_reads_refused(b: Backend) {
    let store = b.open().await;
    old_users(&store, 6).await;
    let users = UserRepo::new(store.clone());
    match users.count_by_status(UserStatus::Active).await {
        Err(Error::NotReadable { since: 2, .. }) => {}
        other => panic!("reads of what version 2 added are refused: {other:?}"),
    }
    drop((users, store));
    let url = b.url();
    let counter = ops(
        "inspect",
        &url,
        &["User", "--counter", "by_status", "active"],
    );
    let o = kvmodel(&counter);
    assert_eq!(code(&o), 2, "{}", out(&o));
    assert!(err(&o).contains("was added in version 2"), "{}", err(&o));
    let mut partial = counter.clone();
    partial.push("--partial");
    let o = kvmodel(&partial);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(serde_json::from_str::<Value>(&out(&o)).unwrap()["value"], 0);

    let o = kvmodel(&ops("migrate", &url, &["-q", "--owner", "tester"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(
        out(&o).contains("migrate run 1 by tester: completed"),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains("User (version 2): 6 visited, 6 rewritten"),
        "{}",
        out(&o)
    );
    let o = kvmodel(&counter);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(serde_json::from_str::<Value>(&out(&o)).unwrap()["value"], 6);
    let o = kvmodel(&ops("migrate", &url, &["--status"]));
    assert_eq!(code(&o), 0);
    for line in [
        "lease: free",
        "run 1 by tester (schemas/shop.yaml): completed",
        "  User → version 2: 6 visited, 6 rewritten, 0 duplicate(s)",
    ] {
        assert!(out(&o).contains(line), "no {line:?} in\n{}", out(&o));
    }
    assert!(
        out(&o).contains("User (version 2): complete through version 2 (kvmodel migrate (run 1))"),
        "{}",
        out(&o)
    );
    assert_eq!(code(&kvmodel(&ops("verify", &url, &["-q"]))), 0);

    let store = b.open().await;
    let users = UserRepo::new(store.clone());
    assert_eq!(users.count_by_status(UserStatus::Active).await.unwrap(), 6);
    assert_eq!(users.get("u3").await.unwrap().unwrap().name, "User 3");
}

pub async fn a_held_lease_refuses_and_a_lapsed_one_is_taken_over(b: Backend) {
    let store = b.open().await;
    old_users(&store, 3).await;
    let Acquired::Held { .. } = Lease::acquire(&store, "shop", "elsewhere:1", 7, 60_000)
        .await
        .unwrap()
    else {
        panic!("the lease is free");
    };
    drop(store);
    let url = b.url();
    let o = kvmodel(&ops("migrate", &url, &["-q"]));
    assert_eq!(code(&o), 3, "refused: {}{}", out(&o), err(&o));
    assert!(
        err(&o).contains("refused: `elsewhere:1` holds the migration lease of `shop` (run 7)"),
        "{}",
        err(&o)
    );
    // A run over several schema files takes the lease of every namespace
    // it migrates, whatever the order of the files, and gives back those
    // it took when one is held.
    for files in [
        ["schemas/sessions.yaml", "schemas/shop.yaml"],
        ["schemas/shop.yaml", "schemas/sessions.yaml"],
    ] {
        let o = kvmodel(&[
            "migrate", "--schema", files[0], files[1], "--store", &url, "-q",
        ]);
        assert_eq!(code(&o), 3, "{files:?}: {}{}", out(&o), err(&o));
        assert!(err(&o).contains("lease of `shop`"), "{}", err(&o));
        let store = b.open().await;
        assert!(
            ledger::current(&store, "auth").await.unwrap().is_none(),
            "{files:?}: the lease of `auth` is left held"
        );
    }
    // A lease that lapsed (its runner died) is taken over.
    let store = b.open().await;
    let mut held = match ledger::current(&store, "shop").await.unwrap() {
        Some(l) => l,
        None => panic!("the lease is stored"),
    };
    held.expires_ms = 0;
    put_lease(&store, &held).await;
    drop(store);
    let o = kvmodel(&ops("migrate", &url, &["-q"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(
        err(&o)
            .contains("took over the lapsed migration lease of `shop` from `elsewhere:1` (run 7)"),
        "{}",
        err(&o)
    );
}

/// Stores `lease` as the shop's migration lease, as another runner would.
async fn put_lease<S: Store>(store: &S, lease: &impl serde::Serialize) {
    let mut batch = Batch::new();
    batch.put(
        ledger::key("shop", "lease"),
        serde_json::to_vec(lease).unwrap(),
        None,
    );
    assert!(store.commit(batch).await.unwrap().is_applied());
}

/// `kvmodel migrate` of the shop at `url`, started and left running: a
/// page of one record, then `pause`, page after page.
fn slow_migration(url: &str, pause: &str, more: &[&str]) -> std::process::Child {
    let mut args = vec!["-q", "--page-size", "1", "--pause", pause];
    args.extend_from_slice(more);
    spawn(&ops("migrate", url, &args))
}

pub async fn two_concurrent_migrations_one_refused(b: Backend) {
    assert!(
        b.is_redis(),
        "two processes share a Redis server, not a redb file"
    );
    let store = b.open().await;
    old_users(&store, 12).await;
    let url = b.url();
    let first = slow_migration(&url, "150ms", &["--owner", "first"]);
    let mut held = false;
    for _ in 0..400 {
        held = ledger::current(&store, "shop").await.unwrap().is_some();
        if held {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(held, "the first migration takes the lease");
    let o = kvmodel(&ops("migrate", &url, &["-q", "--owner", "second"]));
    assert_eq!(code(&o), 3, "{}{}", out(&o), err(&o));
    assert!(
        err(&o).contains("refused: `first` holds the migration lease"),
        "{}",
        err(&o)
    );
    let done = first.wait_with_output().unwrap();
    assert_eq!(code(&done), 0, "{}{}", out(&done), err(&done));
    let runs = ledger::runs(&store, "shop", 10).await.unwrap();
    assert_eq!(runs.len(), 1, "the refused run is not in the ledger");
    assert_eq!(
        (runs[0].owner.as_str(), runs[0].outcome),
        ("first", Outcome::Completed)
    );
    let users = UserRepo::new(store);
    assert_eq!(users.count_by_status(UserStatus::Active).await.unwrap(), 12);
}

/// A runner whose lease another took over while it stalled stops at its
/// next page and leaves the ledger's record of the run to the new holder
/// (which resumes the same run): it does not write its own over it.
pub async fn a_runner_that_lost_its_lease_leaves_the_run_to_its_new_holder(b: Backend) {
    let store = b.open().await;
    old_users(&store, 12).await;
    let url = b.url();
    let child = slow_migration(&url, "1500ms", &["--owner", "first"]);
    // After its first page (saved in the ledger), another runner takes the
    // lease over and records the run as its own.
    let mut run = None;
    for _ in 0..400 {
        run = ledger::runs(&store, "shop", 1)
            .await
            .unwrap()
            .pop()
            .filter(|r| r.entities.iter().any(|e| e.visited > 0));
        if run.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut run = run.expect("the first page is recorded");
    let mut held = ledger::current(&store, "shop").await.unwrap().unwrap();
    held.owner = "second".to_owned();
    put_lease(&store, &held).await;
    run.owner = "second".to_owned();
    ledger::save(&store, "shop", &run).await.unwrap();

    let done = child.wait_with_output().unwrap();
    assert_eq!(code(&done), 1, "{}{}", out(&done), err(&done));
    assert!(
        err(&done).contains("lost the migration lease"),
        "{}",
        err(&done)
    );
    let runs = ledger::runs(&store, "shop", 10).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].owner, "second", "{:?}", runs[0]);
    assert_eq!(
        ledger::current(&store, "shop")
            .await
            .unwrap()
            .map(|l| l.owner),
        Some("second".to_owned()),
        "the new holder's lease stays"
    );
}

pub async fn an_interrupted_migration_resumes(b: Backend) {
    let store = b.open().await;
    old_users(&store, 12).await;
    let url = b.url();
    let child = slow_migration(&url, "150ms", &[]);
    let mut progressed = false;
    for _ in 0..400 {
        let runs = ledger::runs(&store, "shop", 1).await.unwrap();
        progressed = runs
            .first()
            .and_then(|r| r.entities.first())
            .is_some_and(|e| e.rewritten >= 3);
        if progressed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(progressed, "the migration rewrites a few records");
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 130, "{}{}", out(&o), err(&o));
    assert!(err(&o).contains("migrate was interrupted; run it again to resume"));
    let run = ledger::runs(&store, "shop", 1).await.unwrap().remove(0);
    assert_eq!(run.outcome, Outcome::Interrupted);
    let (rewritten, cursor) = (run.entities[0].rewritten, run.entities[0].cursor.clone());
    assert!((3..12).contains(&rewritten) && cursor.is_some(), "{run:?}");

    let o = kvmodel(&ops("migrate", &url, &["-q"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(err(&o).contains("resuming run 1"), "{}", err(&o));
    let runs = ledger::runs(&store, "shop", 10).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].outcome, Outcome::Completed);
    assert_eq!(
        runs[0].entities[0].rewritten, 12,
        "each record rewritten once"
    );
    let users = UserRepo::new(store);
    assert_eq!(users.count_by_status(UserStatus::Active).await.unwrap(), 12);
    assert!(users.verify(5).await.unwrap().is_clean());
}

pub async fn a_saved_verify_resumes(b: Backend) {
    populate(&b).await;
    damage(&b).await;
    let url = b.url();
    let full = out(&kvmodel(&ops("verify", &url, &["-q"])));
    // A walk of `User` saved after two steps, as an interrupted run leaves it.
    let model = {
        let schema = kvmodel_build::load_file(&repo().join("schemas/shop.yaml")).unwrap();
        kvmodel_build::runtime_model::lower(&schema.model).unwrap()
    };
    let def = ModelDef::new(model.entity("User").unwrap().clone());
    let store = b.open().await;
    let mut state = WalkState::new(false);
    let walker = Walker::new(&def, &store);
    walker.step(&mut state, 1).await.unwrap();
    walker.step(&mut state, 1).await.unwrap();
    assert!(!state.is_done());
    // The walker reads through a view it holds (on redb, the open file).
    drop(walker);
    drop(store);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("verify.json");
    let path = file.to_str().unwrap();
    let fingerprint = format!(
        "{:016x}",
        kvmodel_runtime::__private::fnv1a(format!("{model:?}").as_bytes())
    );
    let mut checkpoint = serde_json::json!({
        "command": "verify",
        "schema": "schemas/shop.yaml",
        "model": "0000000000000000",
        "store": url,
        "done": [],
        "current": ["User", state],
    });
    // One saved under another schema is refused: it would judge what it
    // measured by other definitions.
    std::fs::write(&file, serde_json::to_vec(&checkpoint).unwrap()).unwrap();
    let o = kvmodel(&ops("verify", &url, &["--checkpoint", path]));
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(err(&o).contains("another schema"), "{}", err(&o));
    checkpoint["model"] = fingerprint.into();
    std::fs::write(&file, serde_json::to_vec(&checkpoint).unwrap()).unwrap();
    let o = kvmodel(&ops("verify", &url, &["--checkpoint", path]));
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(err(&o).contains("resuming from"), "{}", err(&o));
    assert_eq!(
        out(&o),
        full,
        "the resumed walk finds what a whole one does"
    );
    assert!(
        !file.exists(),
        "the checkpoint is removed when the walk is done"
    );
    // Another command's checkpoint is refused.
    std::fs::write(&file, serde_json::to_vec(&checkpoint).unwrap()).unwrap();
    let o = kvmodel(&ops("reconcile", &url, &["--checkpoint", path]));
    assert_eq!(code(&o), 2, "{}", err(&o));
}

pub async fn inspect_reads_through_the_schema(b: Backend) {
    populate(&b).await;
    let url = b.url();
    let json = |more: &[&str]| -> Value {
        let o = kvmodel(&ops("inspect", &url, more));
        assert_eq!(code(&o), 0, "{more:?}: {}", err(&o));
        serde_json::from_str(&out(&o)).unwrap()
    };
    let doc = json(&["User", "u1", "u9"]);
    assert_eq!(doc["records"][0]["key"], "shop:user:u1");
    assert_eq!(doc["records"][0]["version"], 2);
    assert_eq!(doc["records"][0]["record"]["email"], "U1@Example.com");
    assert_eq!(doc["records"][1]["record"], Value::Null);
    let doc = json(&["User", "--index", "by_email", "u2@EXAMPLE.com"]);
    assert_eq!(doc["record"]["record"]["id"], "u2");
    let doc = json(&["Product", "--index", "by_category", "books", "--limit", "1"]);
    assert_eq!(doc["items"][0]["record"]["sku"], "p2", "cheapest first");
    let next = doc["next"].as_str().unwrap().to_owned();
    let doc = json(&[
        "Product",
        "--index",
        "by_category",
        "books",
        "--after",
        &next,
    ]);
    assert_eq!(doc["items"][0]["record"]["sku"], "p1");
    assert_eq!(doc["next"], Value::Null);
    let doc = json(&["Order", "--relation", "user", "u1"]);
    assert_eq!(doc["items"][0]["record"]["id"], "o1");
    let doc = json(&["Order", "--counter", "revenue_by_day", "2026-03-02"]);
    assert_eq!(doc["value"], 300);
    let doc = json(&[
        "Order",
        "--counter",
        "revenue_by_day",
        "2026-03-02T23:59:59Z",
    ]);
    assert_eq!(doc["value"], 300, "a timestamp names its day");
    let o = kvmodel(&ops(
        "inspect",
        &url,
        &["Order", "--counter", "revenue_by_day", "March"],
    ));
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains(
            "`March` names no day of counter `revenue_by_day`, which reads `day(created_at)`; \
             write a date such as 2026-03-01"
        ),
        "{}",
        err(&o)
    );
    let doc = json(&["Product"]);
    assert_eq!(doc["items"].as_array().unwrap().len(), 3);
    let o = kvmodel(&ops("inspect", &url, &["Nobody"]));
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains("declares no entity `Nobody`"),
        "{}",
        err(&o)
    );
}

/// Social posts at or above 1 KiB are stored lz4-compressed: `verify`
/// and `inspect` read them through the schema like any other record, and
/// a compressed value forged behind the store's back is reported with its
/// key.
pub async fn compressed_records_are_verified_and_inspected(b: Backend) {
    use kvmodel_examples::social::{Post, PostKeys, PostRepo};
    let store = b.open().await;
    let posts = PostRepo::new(store.clone());
    for (id, words) in [("short", 3), ("long", 400)] {
        posts
            .create(&Post {
                id: id.into(),
                author_id: "ada".into(),
                title: format!("{id} post"),
                body: "words ".repeat(words),
                created_at: ts("2026-03-01T10:00:00Z"),
            })
            .await
            .unwrap();
    }
    let long = store.get(&PostKeys::record("long")).await.unwrap().unwrap();
    assert_eq!((long[0], long[1]), (0xC1, 1), "stored lz4-compressed");
    drop((posts, store));
    let url = b.url();
    let social = |command: &'static str, more: &[&'static str]| {
        let mut args = vec![command, "--schema", "schemas/social.yaml", "--store", &url];
        args.extend_from_slice(more);
        kvmodel(&args)
    };
    let o = social("verify", &["-q"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("Post (2 records): clean"), "{}", out(&o));
    let o = social("inspect", &["Post", "long", "short"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(doc["records"][0]["record"]["body"], "words ".repeat(400));
    assert_eq!(doc["records"][1]["record"]["title"], "short post");

    // The long post, cut short behind the store's back.
    let store = b.open().await;
    let mut batch = Batch::new();
    batch.put(
        PostKeys::record("long"),
        long[..long.len() / 2].to_vec(),
        None,
    );
    assert!(store.commit(batch).await.unwrap().is_applied());
    drop(store);
    let o = social("inspect", &["Post", "long"]);
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    let error = doc["records"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("social:post:long") && error.contains("truncated"),
        "{}",
        out(&o)
    );
    let o = social("verify", &["-q"]);
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("social:post:long"), "{}", out(&o));
}

/// Overwrites the record at `key` with bytes no schema reads.
async fn damage_record(b: &Backend, key: &str) {
    let store = b.open().await;
    let mut batch = Batch::new();
    batch.put(key, b"\x00not a record".to_vec(), None);
    assert!(store.commit(batch).await.unwrap().is_applied());
}

/// `purge` removes a record that cannot be read with the claim and
/// members found to point to it (a user's claim; an order's relation
/// members, of an order damaged and of one written by hand); a dry run
/// writes nothing; a record that reads is refused (exit 3) and then nothing
/// is purged. What the record
/// added to counters cannot be known without a receipt: `reconcile` puts
/// the counters back in step, and `verify` is clean.
pub async fn purge_removes_what_cannot_be_read(b: Backend) {
    populate(&b).await;
    let key = UserKeys::record("u1");
    let claim = UserKeys::by_email("u1@example.com");
    damage_record(&b, &key).await;
    let url = b.url();
    let o = kvmodel(&ops("verify", &url, &["-q"]));
    assert_eq!(code(&o), 1);
    assert!(out(&o).contains("shop:user:u1"), "{}", out(&o));
    let before = out(&o);

    let o = kvmodel(&ops("purge", &url, &["User", "u1", "--dry-run"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let text = out(&o);
    // Redis and DynamoDB keep a discovery set; redb ranges over its keys
    // instead.
    let listed = if b.keeps_discovery_set() {
        " and its member of shop:user#all"
    } else {
        ""
    };
    for line in [
        format!("  would remove record {key}{listed}"),
        format!("  would remove claim {claim}"),
        "  would leave 1 record(s) of Order in shop:order#rel:user:u1 (relation `user`, \
         on_delete: keep, so they stay)"
            .to_owned(),
        "purge: 1 would be purged, 0 not found; nothing was written".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    assert_eq!(out(&kvmodel(&ops("verify", &url, &["-q"]))), before);

    let o = kvmodel(&ops("purge", &url, &["User", "u1", "u2"]));
    assert_eq!(code(&o), 3, "{}{}", out(&o), err(&o));
    assert!(
        out(&o).contains("refused shop:user:u2: it reads (version 2)"),
        "{}",
        out(&o)
    );
    assert!(
        out(&o)
            .ends_with("purge: 1 would be purged, 0 not found, 1 refused; nothing was written\n"),
        "{}",
        out(&o)
    );
    assert_eq!(out(&kvmodel(&ops("verify", &url, &["-q"]))), before);

    let o = kvmodel(&ops(
        "purge",
        &url,
        &["User", "u1", "u9", "--format", "json"],
    ));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(doc["purged"], 1);
    assert_eq!(doc["not_found"], 1);
    assert_eq!(doc["records"][0]["outcome"], "purged");
    assert_eq!(doc["records"][0]["claims"][0], claim.as_str());
    assert_eq!(doc["records"][0]["counters_known"], false);
    let children = &doc["records"][0]["children"][0];
    assert_eq!(
        (
            &children["entity"],
            &children["relation"],
            &children["records"]
        ),
        (&Value::from("Order"), &Value::from("user"), &Value::from(1)),
        "{doc}"
    );
    assert_eq!(doc["records"][1]["outcome"], "not_found");

    let store = b.open().await;
    assert_eq!(store.get(&key).await.unwrap(), None);
    assert_eq!(store.get(&claim).await.unwrap(), None);
    assert_eq!(UserRepo::new(store.clone()).count_all().await.unwrap(), 3);
    // An order damaged behind the store's back, and one written by hand
    // with its entries: their relation members go with them.
    let mut batch = Batch::new();
    let forged = OrderKeys::record("o7");
    if b.keeps_discovery_set() {
        batch.add(OrderKeys::all(), Vec::new(), forged.clone().into_bytes());
    }
    batch.put(&forged, b"\x00not a record".to_vec(), None).add(
        OrderKeys::relation_user("u2"),
        kvmodel::__private::sort_of(&ts("2026-03-03T10:00:00Z")),
        forged.clone().into_bytes(),
    );
    assert!(store.commit(batch).await.unwrap().is_applied());
    drop(store);
    damage_record(&b, &OrderKeys::record("o1")).await;
    let o = kvmodel(&ops("purge", &url, &["Order", "o1", "o7"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let text = out(&o);
    let listed = if b.keeps_discovery_set() {
        " and its member of shop:order#all"
    } else {
        ""
    };
    for line in [
        format!("  removed record shop:order:o1{listed}"),
        "  removed member of shop:order#rel:user:u1".to_owned(),
        format!("  removed record shop:order:o7{listed}"),
        "  removed member of shop:order#rel:user:u2".to_owned(),
        "purge: 2 purged, 0 not found".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    let store = b.open().await;
    let members = store
        .range(
            &OrderKeys::relation_user("u2"),
            kvmodel::RangeRequest::all(10),
        )
        .await
        .unwrap()
        .members;
    assert_eq!(members.len(), 1, "o2 only");
    assert_eq!(OrderRepo::new(store.clone()).count_all().await.unwrap(), 2);
    assert_eq!(
        store
            .collection_len(&OrderKeys::relation_user("u1"))
            .await
            .unwrap(),
        0
    );
    drop(store);
    let o = kvmodel(&ops("verify", &url, &["-q", "--format", "json"]));
    assert_eq!(code(&o), 1);
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    let kinds: Vec<&str> = doc["entities"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["problems"].as_array().unwrap())
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["counter", "counter", "counter", "counter"],
        "what the user and the order added to counters: {}",
        out(&o)
    );
    assert_eq!(code(&kvmodel(&ops("reconcile", &url, &["-q"]))), 0);
    let o = kvmodel(&ops("verify", &url, &["-q"]));
    assert_eq!(code(&o), 0, "{}", out(&o));
    let o = kvmodel(&ops("purge", &url, &["User", "u1"]));
    assert_eq!(code(&o), 0);
    assert_eq!(
        out(&o),
        "nothing to purge at shop:user:u1: no record\npurge: 0 purged, 1 not found\n"
    );
}

/// An expiring record's receipt lists what it added: `purge` takes back
/// exactly that, counters included, and `verify` is clean at once.
pub async fn purge_takes_back_what_a_receipt_lists(b: Backend) {
    use super::visit::{VisitKeys, VisitRepo, visit};
    let store = b.open().await;
    let repo = VisitRepo::new(store.clone());
    for (id, seconds) in [("a", 10), ("b", 20), ("c", 30)] {
        repo.create(&visit(id, "home", seconds)).await.unwrap();
    }
    drop((repo, store));
    damage_record(&b, &VisitKeys::record("b")).await;
    let url = b.url();
    let visits = |command: &'static str, more: &[&'static str]| {
        let mut args = vec![
            command,
            "--schema",
            "kvmodel-cli/tests/ops/visits.yaml",
            "--store",
            &url,
        ];
        args.extend_from_slice(more);
        kvmodel(&args)
    };
    let o = visits("purge", &["Visit", "b"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let text = out(&o);
    let record = if b.keeps_discovery_set() {
        "  removed record visits:visit:b and its member of visits:visit#all"
    } else {
        "  removed record visits:visit:b"
    };
    for line in [
        record,
        "  removed its expiry receipt and ledger entry",
        "  removed claim visits:visit#uniq:by_token:t-b",
        "  removed member of visits:visit#idx:by_page:home",
        "  removed 1 from counter visits:visit#count:per_page:home",
        "  removed 20 from counter visits:visit#count:seconds_per_page:home",
        "  removed 1 from counter visits:visit#count:total",
        "purge: 1 purged, 0 not found",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    let o = visits("verify", &["-q"]);
    assert_eq!(code(&o), 0, "{}", out(&o));
    let store = b.open().await;
    let repo = VisitRepo::new(store.clone());
    assert_eq!(repo.count_per_page("home").await.unwrap(), 2);
    assert_eq!(repo.sum_seconds_per_page("home").await.unwrap(), 40);
    assert_eq!(repo.count_total().await.unwrap(), 2);
    assert_eq!(repo.find_by_token("t-b").await.unwrap(), None);
}

/// `inspect --counter` reads a sharded counter as the repository does:
/// every shard, summed.
pub async fn inspect_sums_every_shard_of_a_counter(b: Backend) {
    use kvmodel_examples::social::{Like, LikeKeys, LikeRepo};
    let store = b.open().await;
    let likes = LikeRepo::new(store.clone());
    for i in 0..50 {
        likes
            .create(&Like {
                post_id: "p1".into(),
                user_id: format!("u{i}"),
                at: ts("2026-03-01T10:00:00Z"),
            })
            .await
            .unwrap();
    }
    assert_eq!(likes.count_per_post("p1").await.unwrap(), 50);
    let shard0 = store
        .counter(&LikeKeys::counter_per_post("p1"))
        .await
        .unwrap();
    assert!(shard0 < 50, "shard 0 holds a part: {shard0}");
    drop((likes, store));
    let url = b.url();
    let social = |more: &[&'static str]| -> Value {
        let mut args = vec![
            "inspect",
            "--schema",
            "schemas/social.yaml",
            "--store",
            &url,
        ];
        args.extend_from_slice(more);
        let o = kvmodel(&args);
        assert_eq!(code(&o), 0, "{}", err(&o));
        serde_json::from_str(&out(&o)).unwrap()
    };
    let doc = social(&["Like", "--counter", "per_post", "p1"]);
    assert_eq!(doc["value"], 50, "{doc}");
    let shards = doc["shards"].as_array().unwrap();
    let sum: i64 = shards.iter().map(|s| s["value"].as_i64().unwrap()).sum();
    assert_eq!(sum, 50, "{doc}");
    assert_eq!(social(&["Like", "--counter", "total"])["value"], 50);
}

/// `migrate --dry-run` says what it would rewrite, on standard output and
/// in its progress, and writes nothing.
pub async fn a_dry_run_migration_says_what_it_would_do(b: Backend) {
    let store = b.open().await;
    old_users(&store, 10).await;
    drop(store);
    let url = b.url();
    let o = kvmodel(&ops("migrate", &url, &["--dry-run"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    assert_eq!(
        out(&o),
        "migrate --dry-run: nothing was written\n\
         User (version 2): 10 visited, would rewrite 10\n\
         Product (version 1): 0 visited, would rewrite 0\n\
         Order (version 1): 0 visited, would rewrite 0\n"
    );
    assert!(
        err(&o)
            .lines()
            .any(|l| l == "migrate --dry-run User: 10 visited, would rewrite 10"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("rewritten"), "{}", err(&o));
    let o = kvmodel(&ops("migrate", &url, &["--dry-run", "--format", "json"]));
    assert_eq!(code(&o), 0);
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(doc["dry_run"], true);

    let store = b.open().await;
    assert!(ledger::runs(&store, "shop", 10).await.unwrap().is_empty());
    let users = UserRepo::new(store.clone());
    assert!(matches!(
        users.count_by_status(UserStatus::Active).await,
        Err(Error::NotReadable { since: 2, .. })
    ));
}

/// `inspect --link` pages a record's link collection from either side, as
/// the repository's `list_*` lists it, with the link count; an entry of a
/// record deleted since is shown under `skipped`.
pub async fn inspect_pages_a_records_links(b: Backend) {
    use kvmodel_examples::social::{Post, PostRepo, Tag, TagRepo};
    let store = b.open().await;
    let (posts, tags) = (PostRepo::new(store.clone()), TagRepo::new(store.clone()));
    for id in ["p1", "p2"] {
        posts
            .create(&Post {
                id: id.into(),
                author_id: "ada".into(),
                title: format!("{id} post"),
                body: "words".into(),
                created_at: ts("2026-03-01T10:00:00Z"),
            })
            .await
            .unwrap();
    }
    for name in ["redis", "rust", "yaml"] {
        tags.create(&Tag {
            name: name.into(),
            title: name.to_uppercase(),
        })
        .await
        .unwrap();
    }
    for (post, tag) in [
        ("p1", "redis"),
        ("p1", "rust"),
        ("p1", "yaml"),
        ("p2", "rust"),
    ] {
        assert!(posts.link_tags(post, tag).await.unwrap());
    }
    tags.delete("yaml").await.unwrap();
    drop((posts, tags, store));
    let url = b.url();
    let social = |more: &[&'static str]| -> Value {
        let mut args = vec![
            "inspect",
            "--schema",
            "schemas/social.yaml",
            "--store",
            &url,
        ];
        args.extend_from_slice(more);
        let o = kvmodel(&args);
        assert_eq!(code(&o), 0, "{}", err(&o));
        serde_json::from_str(&out(&o)).unwrap()
    };
    let names = |doc: &Value| -> Vec<String> {
        doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["record"]["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let doc = social(&["Post", "--link", "tags", "p1"]);
    assert_eq!(names(&doc), ["redis", "rust"], "{doc}");
    assert_eq!(
        doc["count"], 3,
        "the deleted tag's entry is still counted: {doc}"
    );
    assert_eq!(doc["skipped"][0]["key"], "social:tag:yaml", "{doc}");
    let first = social(&["Post", "--link", "tags", "--limit", "1", "p1"]);
    assert_eq!(names(&first), ["redis"], "{first}");
    let next = first["next"].as_str().unwrap().to_owned();
    let next: &'static str = Box::leak(next.into_boxed_str());
    let second = social(&[
        "Post", "--link", "tags", "--limit", "1", "--after", next, "p1",
    ]);
    assert_eq!(names(&second), ["rust"], "{second}");
    let doc = social(&["Tag", "--link", "posts", "rust"]);
    let ids: Vec<&str> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["record"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["p1", "p2"], "{doc}");
    let o = kvmodel(&[
        "inspect",
        "--schema",
        "schemas/social.yaml",
        "--store",
        &url,
        "Post",
        "--link",
        "likes",
        "p1",
    ]);
    assert_eq!(code(&o), 2, "{}", err(&o));
    assert!(err(&o).contains("its links: `tags`"), "{}", err(&o));
}

/// `--store rediss://…` verifies a store over TLS: the server's
/// certificate is checked against `SSL_CERT_FILE` (here the test CA), an
/// unknown CA is refused, and `#insecure` skips the check.
pub async fn verify_over_tls(b: Backend) {
    let Backend::Tls(server) = &b else {
        panic!("a TLS backend")
    };
    populate(&b).await;
    damage(&b).await;
    let url = server.url();
    let ca = server.ca_file();
    let o = kvmodel_with(&ops("verify", &url, &["-q"]), "SSL_CERT_FILE", Some(&ca));
    assert_eq!(code(&o), 1, "drift exits 1: {}{}", out(&o), err(&o));
    assert!(
        out(&o)
            .lines()
            .any(|l| l == "verify: 3 problem(s) in 3 entities"),
        "{}",
        out(&o)
    );
    let stranger = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let o = kvmodel_with(
        &ops("verify", &url, &["-q"]),
        "SSL_CERT_FILE",
        Some(&stranger),
    );
    assert_ne!(code(&o), 0, "an unknown CA is refused: {}", out(&o));
    assert!(err(&o).contains(&url[9..]), "{}", err(&o));
    let insecure = b.url();
    let o = kvmodel(&ops("verify", &insecure, &["-q"]));
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
}

/// A counter with `keep`: the command checks it against its live records
/// as a lower bound, says so, reports it below that bound and raises it,
/// and never lowers it (while it repairs a counter that follows them).
pub async fn a_kept_counter_is_checked_from_below_and_never_lowered(b: Backend) {
    use super::click::{ClickKeys, ClickRepo, click};
    let store = b.open().await;
    let repo = ClickRepo::new(store.clone());
    for (id, link) in [("1", "a"), ("2", "a"), ("3", "a"), ("4", "b")] {
        repo.create(&click(id, link)).await.unwrap();
    }
    assert!(repo.delete("1").await.unwrap());
    assert!(repo.delete("2").await.unwrap());
    drop((repo, store));
    let url = b.url();
    let clicks = |command: &'static str, more: &[&'static str]| {
        let mut args = vec![
            command,
            "--schema",
            "kvmodel-cli/tests/ops/clicks.yaml",
            "--store",
            &url,
        ];
        args.extend_from_slice(more);
        kvmodel(&args)
    };
    // `kvmodel keys` says which counters keep their count.
    let o = kvmodel(&["keys", "kvmodel-cli/tests/ops/clicks.yaml"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let keys = out(&o);
    assert_eq!(
        keys.matches("keep: on_expiry: keeps its count when records expire (the expiry sweep takes nothing back; a delete does)")
            .count(),
        1,
        "{keys}"
    );
    assert_eq!(
        keys.matches("keep: always: keeps its count when records expire or are deleted")
            .count(),
        1,
        "{keys}"
    );

    let o = clicks("verify", &[]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let kept = "  kept: 4 counter key(s) keep what records that are gone added (`keep:`), so the records cannot recount them: each was checked to be at least what its live records add up to, and is never lowered";
    assert!(out(&o).lines().any(|l| l == kept), "{}", out(&o));

    // Below its live records, and a counter that follows them set too high.
    let store = b.open().await;
    let mut batch = Batch::new();
    batch
        .incr(ClickKeys::counter_ever("b"), -1)
        .incr(ClickKeys::counter_live("a"), 5);
    assert!(store.commit(batch).await.unwrap().is_applied());
    drop(store);
    let o = clicks("verify", &["-q"]);
    assert_eq!(code(&o), 1, "{}{}", out(&o), err(&o));
    let text = out(&o);
    for line in [
        "  counter clicks:click#count:ever:b holds 0, less than the 1 its live records add up to (it keeps what records that are gone added, so it is never lowered; a repair raises it to that)",
        "  counter clicks:click#count:live:a holds 6, the records add up to 1",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    let o = clicks("verify", &["-q", "--format", "json"]);
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    let kinds: Vec<&str> = doc["entities"][0]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["kept_counter", "counter"]);
    assert_eq!(doc["entities"][0]["kept"].as_array().unwrap().len(), 3);

    let o = clicks("reconcile", &["-q"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let o = clicks("verify", &["-q"]);
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let store = b.open().await;
    let repo = ClickRepo::new(store.clone());
    assert_eq!(repo.count_live("a").await.unwrap(), 1);
    assert_eq!(repo.count_per_link("a").await.unwrap(), 1);
    assert_eq!(repo.count_ever("a").await.unwrap(), 3, "never lowered");
    assert_eq!(repo.count_ever("b").await.unwrap(), 1, "raised");
}

/// A writer of version 1 still running after the migration made what
/// version 2 added readable: its record lacks those entries, so `verify`
/// reports it behind (exit 1, in text and JSON), `reconcile` leaves it to
/// `migrate`, and `migrate` rewrites it, after which `verify` is clean.
pub async fn an_older_writer_after_migrate_is_reported_behind(b: Backend) {
    let store = b.open().await;
    old_users(&store, 2).await;
    drop(store);
    let url = b.url();
    let o = kvmodel(&ops("migrate", &url, &["-q", "--owner", "tester"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));

    let store = b.open().await;
    OldUserRepo::new(store.clone())
        .create(&OldUser {
            id: "u7".into(),
            email: "U7@Example.com".into(),
            full_name: "User 7".into(),
            legacy_flag: false,
            created_at: ts("2026-03-01T10:00:00Z"),
        })
        .await
        .unwrap();
    let users = UserRepo::new(store.clone());
    assert_eq!(users.count_by_status(UserStatus::Active).await.unwrap(), 2);
    drop((users, store));

    let o = kvmodel(&ops("verify", &url, &["-q"]));
    assert_eq!(code(&o), 1, "{}", out(&o));
    let text = out(&o);
    assert!(
        text.contains("user:u7 is older than an index, relation or counter already readable")
            && text.contains("run `kvmodel migrate`")
            && text.contains("behind: 1 record(s)"),
        "{text}"
    );
    let o = kvmodel(&ops("verify", &url, &["-q", "--format", "json"]));
    assert_eq!(code(&o), 1, "{}", out(&o));
    let doc: Value = serde_json::from_str(&out(&o)).unwrap();
    let user = doc["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["entity"] == "User")
        .unwrap();
    assert_eq!(user["behind"], 1, "{user}");
    assert!(
        user["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "behind" && p["repairable"] == false),
        "{user}"
    );

    let o = kvmodel(&ops("reconcile", &url, &["-q"]));
    assert_eq!(code(&o), 1, "reconcile leaves it to migrate: {}", out(&o));
    let o = kvmodel(&ops("migrate", &url, &["-q", "--owner", "tester"]));
    assert_eq!(code(&o), 0, "{}{}", out(&o), err(&o));
    let o = kvmodel(&ops("verify", &url, &["-q"]));
    assert_eq!(code(&o), 0, "{}", out(&o));
    let store = b.open().await;
    let users = UserRepo::new(store.clone());
    assert_eq!(users.count_by_status(UserStatus::Active).await.unwrap(), 3);
}
