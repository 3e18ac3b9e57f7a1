//! Crash tests: a writer killed with SIGKILL in the middle of its workload
//! (redb), and a Redis server killed with SIGKILL under a writer and started
//! again on its append-only file. Afterwards every acknowledged write is
//! there, and `verify` finds no drift: no claim, member or counter that
//! disagrees with the records.

use std::collections::HashMap;
use std::time::Duration;

use kvmodel::{AnyStore, RedisStore, Store};
use kvmodel_examples::shop::{OrderRepo, UserRepo, UserStatus};
use kvmodel_runtime::conformance::RedisServer;

mod common;
use common::writer::Writer;

/// Starts the shop workload on the store at `url` from user `first` on.
fn start_writer(url: &str, first: u64) -> Writer {
    Writer::start(
        env!("CARGO_BIN_EXE_crash_writer"),
        &[url, &first.to_string()],
    )
}

/// What the log says each record must be after the crash: `Some(true)`
/// present, `Some(false)` absent; records whose last write was in flight
/// are left out (their outcome is unknown). Also which users were last
/// acknowledged as modified, and the next free user number.
#[derive(Debug, Default)]
struct Expected {
    users: HashMap<String, bool>,
    orders: HashMap<String, bool>,
    inactive: Vec<String>,
    next_user: u64,
}

/// Leaves the record that the write `op` touched out of `out`: its outcome
/// is unknown.
fn forget(out: &mut Expected, op: &str) {
    let (what, n) = op.split_once(' ').unwrap();
    let n: u64 = n.parse().unwrap();
    out.next_user = out.next_user.max(n + 1);
    let key = if what.ends_with("-user") {
        format!("u{n}")
    } else {
        format!("o{n}")
    };
    out.users.remove(&key);
    out.orders.remove(&key);
    out.inactive.retain(|k| *k != key);
}

fn expected(log: &[String]) -> Expected {
    let mut out = Expected::default();
    let mut last_begin: Option<&str> = None;
    for line in log {
        let (word, op) = line.split_once(' ').unwrap_or((line, ""));
        let op = op.split(':').next().unwrap_or(op);
        match word {
            "begin" => {
                // A write begun and never acknowledged before the next one
                // began was in flight when an earlier process died: it may
                // or may not have landed.
                if let Some(prev) = last_begin.replace(op) {
                    forget(&mut out, prev);
                }
            }
            "ack" => {
                last_begin = None;
                let (what, n) = op.split_once(' ').unwrap();
                let n: u64 = n.parse().unwrap();
                out.next_user = out.next_user.max(n + 1);
                match what {
                    "create-user" => {
                        out.users.insert(format!("u{n}"), true);
                    }
                    "create-order" => {
                        out.orders.insert(format!("o{n}"), true);
                    }
                    "modify-user" => out.inactive.push(format!("u{n}")),
                    "delete-order" => {
                        out.orders.insert(format!("o{n}"), false);
                    }
                    "delete-user" => {
                        out.users.insert(format!("u{n}"), false);
                    }
                    other => panic!("unknown operation {other}"),
                }
            }
            _ => {}
        }
    }
    // The write in flight when the last process died may or may not have
    // landed.
    if let Some(op) = last_begin {
        forget(&mut out, op);
    }
    out
}

/// Every acknowledged write is there, and no derived data disagrees with
/// the records.
async fn check<S: Store>(store: S, want: &Expected) {
    assert!(
        want.users.len() >= 5 && want.orders.len() >= 5,
        "the writer got far enough to test something: {want:?}"
    );
    let users = UserRepo::new(store.clone());
    let orders = OrderRepo::new(store);
    for (id, present) in &want.users {
        let got = users.get(id).await.unwrap();
        assert_eq!(got.is_some(), *present, "user {id}");
        if let Some(u) = got {
            let email = format!("u{}@example.com", &id[1..]);
            let found = users.find_by_email(&email).await.unwrap();
            assert_eq!(found.map(|f| f.id), Some(id.clone()), "claim of {id}");
            if want.inactive.contains(id) {
                assert_eq!(u.status, UserStatus::Inactive, "modify of {id}");
            }
        }
    }
    for (id, present) in &want.orders {
        assert_eq!(
            orders.get(id).await.unwrap().is_some(),
            *present,
            "order {id}"
        );
    }
    let drift = users.verify(100).await.unwrap();
    assert!(drift.is_clean(), "users drift after the crash: {drift:?}");
    let drift = orders.verify(100).await.unwrap();
    assert!(drift.is_clean(), "orders drift after the crash: {drift:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn redb_survives_a_killed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("shop.redb").display());
    let mut log = Vec::new();
    for round in 0..4u64 {
        let first = expected(&log).next_user;
        let mut writer = start_writer(&url, first);
        writer.wait_for_acks(20 + 7 * round as usize);
        // Kill it a little later, at no particular step.
        std::thread::sleep(Duration::from_millis(fastrand::u64(0..40)));
        log.extend(writer.kill());
        let store = AnyStore::open(&url).await.unwrap();
        check(store, &expected(&log)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_survives_a_killed_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Vec::new();
    let mut port = 0;
    for round in 0..3u64 {
        let server = RedisServer::start_durable(port, dir.path());
        port = server.port();
        let first = expected(&log).next_user;
        let mut writer = start_writer(&server.url(), first);
        writer.wait_for_acks(20 + 7 * round as usize);
        std::thread::sleep(Duration::from_millis(fastrand::u64(0..40)));
        drop(server); // SIGKILL, in the middle of the writer's work
        let lines = writer.finish();
        assert!(
            lines.iter().any(|l| l.starts_with("fail ")),
            "the writer noticed the server die"
        );
        log.extend(lines);
        let server = RedisServer::start_durable(port, dir.path());
        let store = connect(&server.url()).await;
        check(store, &expected(&log)).await;
    }
}

/// Connects once the restarted server has loaded its append-only file.
async fn connect(url: &str) -> RedisStore {
    for _ in 0..300 {
        if let Ok(store) = RedisStore::connect(url).await {
            if store.get("probe").await.is_ok() {
                return store;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the restarted server does not answer");
}
