//! The Redis commit script against Redis itself: its counter rule is the one
//! `INCRBY` applies, and arguments it could not pass on to a command
//! unchanged are refused before the first write.

use kvmodel_runtime::conformance::{COUNTER_TEXTS, RedisServer};
use kvmodel_runtime::{Batch, RedisStore, Store};
use redis::Value;
use redis::aio::MultiplexedConnection;

async fn connect(server: &RedisServer) -> MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The table the conformance suite checks every backend against is what
/// `INCRBY` itself accepts.
#[tokio::test]
async fn counter_table_is_what_incrby_accepts() {
    let server = RedisServer::start();
    let mut conn = connect(&server).await;
    for (text, want) in COUNTER_TEXTS {
        for delta in [0i64, 1, -1] {
            let () = redis::cmd("SET")
                .arg("k")
                .arg(text.as_bytes())
                .query_async(&mut conn)
                .await
                .unwrap();
            let got: redis::RedisResult<i64> = redis::cmd("INCRBY")
                .arg("k")
                .arg(delta)
                .query_async(&mut conn)
                .await;
            assert_eq!(
                got.ok(),
                want.and_then(|v| v.checked_add(delta)),
                "INCRBY {delta} on {text:?}"
            );
        }
    }
}

/// Runs the commit script (or `script`) with `argv` patched by `forge`;
/// returns the reply.
async fn run_forged(
    conn: &mut MultiplexedConnection,
    batch: &Batch,
    script: Option<&str>,
    forge: impl FnOnce(&mut Vec<Vec<u8>>),
) -> Value {
    let (_, keys, mut argv) = RedisStore::script_invocation(batch).unwrap();
    forge(&mut argv);
    redis::cmd("EVAL")
        .arg(script.unwrap_or(RedisStore::COMMIT_SCRIPT))
        .arg(keys.len())
        .arg(keys)
        .arg(argv)
        .query_async(conn)
        .await
        .unwrap()
}

/// Time-to-live and increment arguments the following command would reject
/// (`SET … PX 0`, `PEXPIRE` out of range, `INCRBY 007`) and unknown
/// operations are refused by the script before it writes anything.
#[tokio::test]
async fn forged_arguments_are_refused_before_any_write() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut warm = Batch::new();
    warm.put("warm", b"1".to_vec(), None);
    assert!(
        store.commit(warm).await.unwrap().is_applied(),
        "the key the expire batch names"
    );
    let mut conn = connect(&server).await;
    // ARGV: the plan (a kind byte and a key number per operation), then
    // the values its kinds take: the marker's, then the second
    // operation's.
    let mut put = Batch::new();
    put.put("marker", b"m".to_vec(), None).put(
        "target",
        b"v".to_vec(),
        Some(std::time::Duration::from_secs(1)),
    );
    let mut expire = Batch::new();
    expire
        .put("marker", b"m".to_vec(), None)
        .expire("warm", std::time::Duration::from_secs(1));
    let mut incr = Batch::new();
    incr.put("marker", b"m".to_vec(), None).incr("count", 2);
    let forged: Vec<(&str, &Batch, usize, &[u8])> = vec![
        ("PX 0", &put, 3, b"0"),
        ("PX -5", &put, 3, b"-5"),
        ("PX 1.5", &put, 3, b"1.5"),
        ("PX 007", &put, 3, b"007"),
        ("PX of 10^14 ms", &put, 3, b"100000000000000"),
        ("PEXPIRE 0", &expire, 2, b"0"),
        ("PEXPIRE abc", &expire, 2, b"abc"),
        ("INCRBY 007", &incr, 2, b"007"),
        ("INCRBY 2^63", &incr, 2, b"9223372036854775808"),
        ("INCRBY +1", &incr, 2, b"+1"),
        ("unknown operation", &incr, 0, b"p\x01w\x02"),
    ];
    for (what, batch, at, text) in forged {
        // The commit script refuses it, naming why; the script written for
        // the batch's shape (if any) hands it on to the commit script.
        let shape = RedisStore::shape_script(batch).unwrap();
        for (script, status) in [(None, -1), (shape.as_deref(), -9)] {
            if status == -9 && (script.is_none() || at == 0) {
                continue;
            }
            let reply = run_forged(&mut conn, batch, script, |argv| argv[at] = text.to_vec()).await;
            match &reply {
                Value::Array(items) => {
                    assert_eq!(items.first(), Some(&Value::Int(status)), "{what}");
                }
                other => panic!("{what}: unexpected reply {other:?}"),
            }
            assert_eq!(store.get("marker").await.unwrap(), None, "{what}");
            assert_eq!(store.get("target").await.unwrap(), None, "{what}");
            assert_eq!(store.get("count").await.unwrap(), None, "{what}");
        }
    }
    // The put and the increment have shape scripts.
    assert!(RedisStore::shape_script(&put).unwrap().is_some());
    assert!(RedisStore::shape_script(&incr).unwrap().is_some());
    // The same batches unforged apply.
    for batch in [put, expire, incr] {
        assert!(store.commit(batch).await.unwrap().is_applied());
    }
}

/// A value near an edge of the 64-bit range, or an ordinary one.
fn edgy() -> i64 {
    let near = |base: i64| base.saturating_add(fastrand::i64(-2000..=2000));
    match fastrand::u8(0..6) {
        0 => near(i64::MAX),
        1 => near(i64::MIN),
        2 => near(1 << 53),
        3 => near(0),
        4 => fastrand::i64(i64::MIN / 2..=i64::MAX / 2),
        _ => fastrand::i64(..),
    }
}

/// The script's exact two-part arithmetic refuses exactly the sums that
/// overflow, over random increments near the edges (where doubles cannot
/// tell neighbouring values apart).
#[tokio::test]
async fn script_overflow_matches_checked_add() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    fastrand::seed(7);
    for round in 0..1500 {
        let start = edgy();
        let deltas: Vec<i64> = (0..fastrand::usize(1..=3)).map(|_| edgy()).collect();
        let mut seed = Batch::new();
        seed.put("k", start.to_string().into_bytes(), None);
        assert!(store.commit(seed).await.unwrap().is_applied());
        let mut b = Batch::new();
        for d in &deltas {
            b.incr("k", *d);
        }
        let want = deltas.iter().try_fold(start, |acc, d| acc.checked_add(*d));
        let got = store.commit(b).await;
        let now = store.counter("k").await.unwrap();
        match want {
            Some(end) => {
                assert!(got.is_ok(), "round {round}: {start} + {deltas:?}: {got:?}");
                assert_eq!(now, end, "round {round}: {start} + {deltas:?}");
            }
            None => {
                assert!(
                    got.is_err(),
                    "round {round}: {start} + {deltas:?} overflows"
                );
                assert_eq!(now, start, "round {round}: nothing written");
            }
        }
    }
}

/// What a key holds, as `TYPE` and the value of a string say.
async fn held(conn: &mut MultiplexedConnection, key: &str) -> (String, Option<Vec<u8>>) {
    let t: String = redis::cmd("TYPE").arg(key).query_async(conn).await.unwrap();
    let v = if t == "string" {
        redis::cmd("GET").arg(key).query_async(conn).await.unwrap()
    } else {
        None
    };
    (t, v)
}

/// Keys of every Redis type, and values that are not counters, met by
/// every kind of operation and by a condition (and an operation that needs
/// to know what a key holds after a conditional delete of it): refused before the first
/// write, whether the operation is checked the plain way (each key once,
/// counters moved by one) or the general way (a key touched twice, a
/// larger increment), with or without a condition that read the key
/// first. Nothing is written, and the keys keep what they held.
#[tokio::test]
async fn keys_of_another_kind_are_refused_before_any_write() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut conn = connect(&server).await;
    let setup: [(&str, &[&str]); 8] = [
        ("hash", &["HSET", "hash", "f", "v"]),
        ("list", &["RPUSH", "list", "a"]),
        ("set", &["SADD", "set", "a"]),
        ("stream", &["XADD", "stream", "*", "f", "v"]),
        ("zset", &["ZADD", "zset", "0", "a"]),
        ("text", &["SET", "text", "abc"]),
        ("max", &["SET", "max", "9223372036854775807"]),
        ("padded", &["SET", "padded", "007"]),
    ];
    for (_, args) in setup {
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let _: Value = cmd.query_async(&mut conn).await.unwrap();
    }
    let mut before = Vec::new();
    for (k, _) in setup {
        before.push(held(&mut conn, k).await);
    }
    let collections = ["hash", "list", "set", "stream"];
    let mut cases: Vec<(String, Batch)> = Vec::new();
    for k in collections.iter().chain(["zset"].iter()) {
        let mut b = Batch::new();
        b.put(*k, b"x".to_vec(), None);
        cases.push((format!("put over {k}"), b));
        let mut b = Batch::new();
        b.incr(*k, 1);
        cases.push((format!("increment {k}"), b));
        let mut b = Batch::new();
        b.incr(*k, 5).incr("fresh", 1);
        cases.push((format!("increment {k} by 5"), b));
        let mut b = Batch::new();
        b.absent(*k);
        cases.push((format!("a condition on {k}"), b));
        let mut b = Batch::new();
        b.delete_if_equals(*k, b"a".to_vec());
        cases.push((format!("a conditional delete of {k}"), b));
        let mut b = Batch::new();
        b.delete_if_equals(*k, b"a".to_vec())
            .put(*k, b"x".to_vec(), None);
        cases.push((format!("a conditional delete of {k}, then a put"), b));
    }
    for k in collections.iter().chain(["text"].iter()) {
        let mut b = Batch::new();
        b.add(*k, b"s".to_vec(), b"m".to_vec());
        cases.push((format!("add to {k}"), b));
        let mut b = Batch::new();
        b.remove(*k, b"s".to_vec(), b"m".to_vec());
        cases.push((format!("remove from {k}"), b));
        let mut b = Batch::new();
        b.add("fresh", b"s".to_vec(), b"m".to_vec())
            .add(*k, b"s".to_vec(), b"m".to_vec())
            .put("fresh", b"x".to_vec(), None);
        cases.push((format!("add to {k}, a key touched twice"), b));
    }
    for (k, v) in [
        ("text", "abc"),
        ("max", "9223372036854775807"),
        ("padded", "007"),
    ] {
        let mut b = Batch::new();
        b.incr(k, 1);
        cases.push((format!("increment {k}"), b));
        let mut b = Batch::new();
        b.equals(k, v.as_bytes().to_vec()).incr(k, 1);
        cases.push((format!("increment {k} a condition read"), b));
    }
    let mut b = Batch::new();
    b.equals("text", b"abc".to_vec())
        .add("text", b"s".to_vec(), b"m".to_vec());
    cases.push(("add to a value a condition read".to_owned(), b));
    for then in ["increment", "add"] {
        for (k, v) in [
            ("text", "abc"),
            ("text", "zz"),
            ("max", "9223372036854775807"),
        ] {
            let mut b = Batch::new();
            b.delete_if_equals(k, v.as_bytes().to_vec());
            if then == "increment" {
                b.incr(k, 1);
            } else {
                b.add(k, b"s".to_vec(), b"m".to_vec());
            }
            cases.push((format!("{then} {k} after a conditional delete of {v}"), b));
        }
    }
    for (what, b) in cases {
        let mut with_marker = Batch::new();
        with_marker.put("marker", b"m".to_vec(), None);
        let (conditions, ops) = b.into_parts();
        for c in conditions {
            with_marker.condition(c);
        }
        for op in ops {
            with_marker.op(op);
        }
        let got = store.commit(with_marker).await;
        assert!(
            matches!(got, Err(kvmodel_runtime::Error::InvalidBatch { .. })),
            "{what}: {got:?}"
        );
        assert_eq!(store.get("marker").await.unwrap(), None, "{what}");
        assert_eq!(held(&mut conn, "fresh").await.0, "none", "{what}");
        for ((k, _), was) in setup.iter().zip(&before) {
            assert_eq!(&held(&mut conn, k).await, was, "{what}: {k}");
        }
    }
}

/// Counters near the edge of what the plain check takes (15 digits) move
/// by one on either side of it, and a batch that moves a counter twice is
/// checked exactly.
#[tokio::test]
async fn counters_move_by_one_on_both_sides_of_the_plain_check() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let starts = [
        999_999_999_999_999_i64,
        -999_999_999_999_999,
        1_000_000_000_000_000,
        i64::MAX - 1,
        i64::MIN + 1,
        0,
    ];
    for start in starts {
        let mut seed = Batch::new();
        seed.put("k", start.to_string().into_bytes(), None);
        assert!(store.commit(seed).await.unwrap().is_applied());
        let mut up = Batch::new();
        up.incr("k", 1);
        assert!(store.commit(up).await.unwrap().is_applied(), "{start} + 1");
        assert_eq!(store.counter("k").await.unwrap(), start + 1);
        let mut down = Batch::new();
        down.incr("k", -1).incr("k", -1);
        let got = store.commit(down).await;
        assert!(got.is_ok(), "{start} - 1 - 1: {got:?}");
        assert_eq!(store.counter("k").await.unwrap(), start - 1);
    }
    let mut seed = Batch::new();
    seed.put("k", i64::MAX.to_string().into_bytes(), None);
    assert!(store.commit(seed).await.unwrap().is_applied());
    let mut up = Batch::new();
    up.put("marker", b"m".to_vec(), None).incr("k", 1);
    assert!(store.commit(up).await.is_err(), "i64::MAX + 1");
    assert_eq!(store.counter("k").await.unwrap(), i64::MAX);
    assert_eq!(store.get("marker").await.unwrap(), None);
}

/// What a key holds, for comparing a whole database before and after: its
/// type and, for a string, its value; for a sorted set, its members.
async fn snapshot(conn: &mut MultiplexedConnection, keys: &[&str]) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    for k in keys {
        let (t, v) = held(conn, k).await;
        let items = if t == "zset" {
            redis::cmd("ZRANGE")
                .arg(*k)
                .arg(0)
                .arg(-1)
                .query_async(conn)
                .await
                .unwrap()
        } else {
            v.into_iter().collect()
        };
        out.push((t, items));
    }
    out
}

/// Members and counters are moved before the values are written, unchecked:
/// when a later one is refused (here an increment of a hash), every one
/// that moved is moved back — a removed member returns, an added one goes,
/// counters return to what they held (a created counter goes, and one
/// moved by the most negative 64-bit amount comes back in two steps) — on
/// both the script written for the batch's shape and the commit script.
#[tokio::test]
async fn moves_before_a_refusal_are_moved_back() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut conn = connect(&server).await;
    let mut seed = Batch::new();
    seed.add("z", b"s".to_vec(), b"x".to_vec())
        .put("c", b"41".to_vec(), None)
        .put("m", b"10".to_vec(), None);
    assert!(store.commit(seed).await.unwrap().is_applied());
    let () = redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query_async(&mut conn)
        .await
        .unwrap();
    let keys = ["z", "z2", "c", "m", "fresh", "h", "marker"];
    let before = snapshot(&mut conn, &keys).await;
    let mut b = Batch::new();
    b.put("marker", b"m".to_vec(), None)
        .remove("z", b"s".to_vec(), b"x".to_vec())
        .add("z2", b"s".to_vec(), b"y".to_vec())
        .incr("c", 7)
        .incr("c", -3)
        .incr("m", i64::MIN)
        .incr("fresh", 1)
        .incr("h", 1);
    assert!(
        RedisStore::shape_script(&b).unwrap().is_some(),
        "an ordinary batch"
    );
    let got = store.commit(b.clone()).await;
    assert!(
        matches!(&got, Err(kvmodel_runtime::Error::InvalidBatch { key, .. }) if key == "h"),
        "{got:?}"
    );
    assert_eq!(snapshot(&mut conn, &keys).await, before, "shape script");
    let reply = run_forged(&mut conn, &b, None, |_| {}).await;
    match &reply {
        Value::Array(items) => assert_eq!(items.first(), Some(&Value::Int(-1))),
        other => panic!("unexpected reply {other:?}"),
    }
    assert_eq!(snapshot(&mut conn, &keys).await, before, "commit script");
}

/// An append to a change feed whose key holds something other than a
/// Stream is refused before any write, by the script written for the
/// batch's shape and by the commit script, and the key is left as it was.
#[tokio::test]
async fn an_append_to_a_key_that_is_no_stream_is_refused() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut conn = connect(&server).await;
    let () = redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query_async(&mut conn)
        .await
        .unwrap();
    let () = redis::cmd("SET")
        .arg("text")
        .arg("abc")
        .query_async(&mut conn)
        .await
        .unwrap();
    let keys = ["h", "text", "marker", "c"];
    let before = snapshot(&mut conn, &keys).await;
    for feed in ["h", "text"] {
        let mut b = Batch::new();
        b.put("marker", b"m".to_vec(), None).incr("c", 1).append(
            feed,
            b"e".to_vec(),
            std::time::Duration::from_secs(60),
        );
        assert!(RedisStore::shape_script(&b).unwrap().is_some());
        let got = store.commit(b.clone()).await;
        assert!(
            matches!(&got, Err(kvmodel_runtime::Error::InvalidBatch { key, .. }) if key == feed),
            "{feed}: {got:?}"
        );
        assert_eq!(
            snapshot(&mut conn, &keys).await,
            before,
            "{feed}: shape script"
        );
        let reply = run_forged(&mut conn, &b, None, |_| {}).await;
        match &reply {
            Value::Array(items) => assert_eq!(items.first(), Some(&Value::Int(-1)), "{feed}"),
            other => panic!("{feed}: unexpected reply {other:?}"),
        }
        assert_eq!(
            snapshot(&mut conn, &keys).await,
            before,
            "{feed}: commit script"
        );
    }
    // Onto a Stream, or nothing yet, the same batch applies.
    let mut b = Batch::new();
    b.put("marker", b"m".to_vec(), None).incr("c", 1).append(
        "feed",
        b"e".to_vec(),
        std::time::Duration::from_secs(60),
    );
    assert!(store.commit(b).await.unwrap().is_applied());
    let len: i64 = redis::cmd("XLEN")
        .arg("feed")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(len, 1);
}

/// The time to live of `key`, in ms (`PTTL`).
async fn pttl(conn: &mut MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query_async(conn).await.unwrap()
}

/// A collection that loses its last member in a batch that is refused
/// keeps its time to live: a removal is never made and then undone.
#[tokio::test]
async fn a_refused_batch_leaves_an_emptied_collection_and_its_time_to_live() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut conn = connect(&server).await;
    let mut seed = Batch::new();
    seed.add("z", b"s".to_vec(), b"m".to_vec())
        .expire("z", std::time::Duration::from_secs(100))
        .put("text", b"abc".to_vec(), None);
    assert!(store.commit(seed).await.unwrap().is_applied());
    let mut b = Batch::new();
    b.remove("z", b"s".to_vec(), b"m".to_vec()).incr("text", 1);
    assert!(RedisStore::shape_script(&b).unwrap().is_some());
    let got = store.commit(b.clone()).await;
    assert!(
        matches!(got, Err(kvmodel_runtime::Error::InvalidBatch { .. })),
        "{got:?}"
    );
    assert!(pttl(&mut conn, "z").await > 90_000, "shape script");
    let reply = run_forged(&mut conn, &b, None, |_| {}).await;
    assert_eq!(
        reply,
        Value::Array(vec![
            Value::Int(-1),
            Value::BulkString(b"text".to_vec()),
            Value::BulkString(
                b"it holds a value that is not a 64-bit decimal integer counter".to_vec()
            )
        ])
    );
    assert!(pttl(&mut conn, "z").await > 90_000, "commit script");
}

/// Plans the store never sends: a condition after an operation is still
/// checked, and an empty time to live is refused, not taken as none.
#[tokio::test]
async fn forged_plans_are_checked_whole() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut conn = connect(&server).await;
    let mut seed = Batch::new();
    seed.put("k", b"old".to_vec(), None);
    assert!(store.commit(seed).await.unwrap().is_applied());
    let mut b = Batch::new();
    b.put("k", b"new".to_vec(), None);
    // `p k`, then a forged `A k` (absent) after it: fails, condition 0.
    let reply = run_forged(&mut conn, &b, None, |argv| argv[0] = b"p\x01A\x01".to_vec()).await;
    assert_eq!(reply, Value::Array(vec![Value::Int(0), Value::Int(0)]));
    // A put with an empty time to live.
    let reply = run_forged(&mut conn, &b, None, |argv| {
        argv[0] = b"q\x01".to_vec();
        argv.push(Vec::new());
    })
    .await;
    match &reply {
        Value::Array(items) => assert_eq!(items.first(), Some(&Value::Int(-1))),
        other => panic!("unexpected reply {other:?}"),
    }
    assert_eq!(store.get("k").await.unwrap(), Some(b"old".to_vec()));
}
