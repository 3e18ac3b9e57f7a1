//! Hostile keys on Redis: every key a create, an update or a delete
//! touches is replaced, one at a time, by something kvmodel never writes
//! there (another Redis type, a value that is no counter, a counter at the
//! edge of 64 bits, a claim naming another record); the write is refused
//! and nothing at all is written (a released claim another record holds is
//! left to it instead, and the write goes on), through the shape scripts and, after
//! `SCRIPT FLUSH`, through the commit script loaded again.

use std::collections::BTreeMap;

use kvmodel::conformance::{Harness, RedisHarness};
use kvmodel::{Error, KvEntity, RedisStore};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "tamp", key = "acct:{id}")]
#[kv(index(name = "by_team", fields(team), order_by = n))]
#[kv(counter(name = "total"))]
#[kv(counter(name = "per_team", group_by(team)))]
#[kv(counter(name = "n_per_team", sum = n, group_by(team)))]
pub struct Acct {
    pub id: String,
    #[kv(unique)]
    pub email: String,
    pub team: String,
    pub n: i64,
}

fn acct(id: &str, email: &str, team: &str, n: i64) -> Acct {
    Acct {
        id: id.into(),
        email: email.into(),
        team: team.into(),
        n,
    }
}

type Snapshot = BTreeMap<String, Vec<u8>>;

/// Every key on the server with its `DUMP` (type, value) and whether it
/// expires.
async fn snapshot(conn: &mut MultiplexedConnection) -> Snapshot {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(conn).await.unwrap();
    let mut out = BTreeMap::new();
    for k in keys {
        let dump: Option<Vec<u8>> = redis::cmd("DUMP").arg(&k).query_async(conn).await.unwrap();
        let ttl: i64 = redis::cmd("PTTL").arg(&k).query_async(conn).await.unwrap();
        if let Some(mut d) = dump {
            d.push(u8::from(ttl >= 0));
            out.insert(k, d);
        }
    }
    out
}

async fn cmd(conn: &mut MultiplexedConnection, args: &[&str]) {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    let () = c.query_async(conn).await.unwrap();
}

/// The operations attacked, each after the same baseline.
#[derive(Debug, Clone, Copy)]
enum Op {
    Create,
    /// Moves the record to another team and email.
    Update,
    Delete,
}

async fn baseline(repo: &AcctRepo<RedisStore>, conn: &mut MultiplexedConnection) {
    cmd(conn, &["FLUSHALL"]).await;
    repo.create(&acct("a0", "a0@t.io", "red", 5)).await.unwrap();
    repo.create(&acct("a1", "a1@t.io", "red", 7)).await.unwrap();
    repo.create(&acct("a2", "a2@t.io", "blue", 3))
        .await
        .unwrap();
}

/// Runs `op`: whether it says it wrote (a delete that found no record
/// did not).
async fn run(repo: &AcctRepo<RedisStore>, op: Op) -> kvmodel::Result<bool> {
    match op {
        Op::Create => repo
            .create(&acct("a9", "a9@t.io", "red", 4))
            .await
            .map(|()| true),
        Op::Update => repo
            .update(&acct("a1", "new@t.io", "blue", 11))
            .await
            .map(|_| true),
        Op::Delete => repo.delete("a1").await,
    }
}

/// What to put at a key that holds (or is to hold) `natural`, none of it
/// what kvmodel would write there.
fn tampers(key: &str, natural: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut out: Vec<(&'static str, Vec<String>)> = vec![
        ("list", vec!["RPUSH".into(), key.into(), "x".into()]),
        (
            "hash",
            vec!["HSET".into(), key.into(), "f".into(), "v".into()],
        ),
        ("set", vec!["SADD".into(), key.into(), "x".into()]),
        (
            "stream",
            vec![
                "XADD".into(),
                key.into(),
                "*".into(),
                "f".into(),
                "v".into(),
            ],
        ),
    ];
    if natural == "zset" {
        out.push(("string", vec!["SET".into(), key.into(), "x".into()]));
    } else {
        out.push((
            "zset",
            vec!["ZADD".into(), key.into(), "0".into(), "x".into()],
        ));
    }
    let counter = key.contains("#count:") || key.starts_with('~');
    if counter {
        out.push((
            "not a number",
            vec!["SET".into(), key.into(), "12abc".into()],
        ));
        out.push((
            "i64::MAX",
            vec!["SET".into(), key.into(), i64::MAX.to_string()],
        ));
        out.push((
            "i64::MIN",
            vec!["SET".into(), key.into(), i64::MIN.to_string()],
        ));
    } else if natural == "string" || natural == "none" {
        out.push((
            "another record's key",
            vec!["SET".into(), key.into(), "tamp:acct:zz".into()],
        ));
    }
    out
}

/// Whether tampering with `key` may leave `op` a success: a delete plan
/// is replaced or unused, a counter moved from another value in range is
/// still a counter (its drift is for `verify`), and a counter at one edge
/// may move away from it.
fn may_succeed(key: &str, tamper: &str, op: Op) -> bool {
    // A delete plan is checked where it is used (a plan that does not fit
    // its record is never used): a write replaces it whole, a delete that
    // finds it unfit goes the usual way and removes it.
    if key.contains("#drop:") {
        return true;
    }
    let counter = key.contains("#count:") || key.starts_with('~');
    if !counter {
        return false;
    }
    // A change stamp only goes up, with every write; a delete moves
    // counters down, away from the top, a create up.
    let stamp = key.starts_with('~');
    match tamper {
        "i64::MAX" => !stamp && matches!(op, Op::Delete | Op::Update),
        "i64::MIN" => stamp || matches!(op, Op::Create | Op::Update),
        _ => false,
    }
}

/// Tampers with the keys `op`s touch: the claims an update or a delete
/// releases (`released`), or every other key.
async fn attack(flush_scripts: bool, released: bool) {
    let h = RedisHarness::start().await;
    let repo = AcctRepo::new(h.store());
    let client = redis::Client::open(h.server().url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut attacked = 0;
    for op in [Op::Create, Op::Update, Op::Delete] {
        // The keys the operation touches, and what each holds.
        baseline(&repo, &mut conn).await;
        let before = snapshot(&mut conn).await;
        run(&repo, op).await.unwrap();
        let after = snapshot(&mut conn).await;
        let mut touched = Vec::new();
        for k in before.keys().chain(after.keys()) {
            if before.get(k) != after.get(k) && !touched.contains(k) {
                touched.push(k.clone());
            }
        }
        assert!(touched.len() >= 5, "{op:?} touched {touched:?}");
        let releases =
            |k: &String| k.contains("#uniq:") && before.contains_key(k) && !after.contains_key(k);
        touched.retain(|k| releases(k) == released);
        for key in &touched {
            baseline(&repo, &mut conn).await;
            let natural: String = redis::cmd("TYPE")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            let natural = if natural == "none" {
                // What the operation makes of it.
                if key.contains("#idx:") || key.ends_with("#all") {
                    "zset".to_owned()
                } else {
                    "string".to_owned()
                }
            } else {
                natural
            };
            for (name, args) in tampers(key, &natural) {
                baseline(&repo, &mut conn).await;
                let _: () = redis::cmd("DEL")
                    .arg(key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let mut c = redis::cmd(args[0]);
                for a in &args[1..] {
                    c.arg(*a);
                }
                let _: redis::Value = c.query_async(&mut conn).await.unwrap();
                if flush_scripts {
                    cmd(&mut conn, &["SCRIPT", "FLUSH"]).await;
                }
                let tampered = snapshot(&mut conn).await;
                let result = run(&repo, op).await;
                let now = snapshot(&mut conn).await;
                attacked += 1;
                let changed: std::collections::BTreeSet<&String> = tampered
                    .keys()
                    .chain(now.keys())
                    .filter(|k| tampered.get(*k) != now.get(*k))
                    .collect();
                match result {
                    Err(Error::OutcomeUnknown { .. }) => {
                        panic!("{op:?} with {key} tampered ({name}): outcome unknown")
                    }
                    Err(e) => assert!(
                        changed.is_empty(),
                        "{op:?} with {key} tampered ({name}) failed ({e}) but wrote {changed:?}"
                    ),
                    // A record key that holds no value reads as no record
                    // (`MGET` answers nil): nothing to delete, and nothing
                    // may be written.
                    Ok(false) => assert!(
                        changed.is_empty(),
                        "{op:?} with {key} tampered ({name}) found no record but wrote {changed:?}"
                    ),
                    // A released claim that another record holds is that
                    // record's: the write goes on and leaves it.
                    Ok(true) if released && name == "another record's key" => assert!(
                        !changed.contains(key) && !changed.is_empty(),
                        "{op:?} with {key} held by another record: wrote {changed:?}"
                    ),
                    Ok(true) => assert!(
                        may_succeed(key, name, op),
                        "{op:?} with {key} tampered ({name}) succeeded, writing {changed:?}"
                    ),
                }
            }
        }
    }
    assert!(
        attacked > if released { 10 } else { 60 },
        "only {attacked} attacks"
    );
    eprintln!("{attacked} tampered writes");
}

/// Every touched key tampered with, through the shape scripts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_key_refuses_the_write_and_nothing_is_written() {
    attack(false, false).await;
}

/// The same, each write after `SCRIPT FLUSH` (the scripts sent again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_key_refuses_the_write_after_a_script_flush() {
    attack(true, false).await;
}

/// The unique claim an update (a new value) or a delete gives up, found
/// holding something else: another record's key stays where it is (that
/// record's uniqueness guard) and the write goes on; a collection or any
/// other Redis type refuses the write, which writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_claim_that_holds_something_else_is_left_or_refuses_the_write() {
    attack(false, true).await;
}
