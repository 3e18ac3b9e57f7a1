//! Redis connection edges: an unreachable server fails fast, a slow commit
//! within the response timeout succeeds, and a commit whose reply is lost
//! says its outcome is unknown (and may indeed have been applied).

use std::time::{Duration, Instant};

use kvmodel_runtime::conformance::{RedisServer, scan_all};
use kvmodel_runtime::{Batch, Error, RedisStore, Store};
use redis::aio::MultiplexedConnection;

/// Generous: a failure that waits for backoff or a timeout takes seconds.
const FAST: Duration = Duration::from_secs(2);

/// A loopback port nobody listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// A connection of the test's own, to pause the server and look behind the
/// store's back.
async fn admin(server: &RedisServer) -> MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn pause(admin: &mut MultiplexedConnection, ms: u64, mode: &str) {
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(ms)
        .arg(mode)
        .query_async(admin)
        .await
        .unwrap();
}

async fn admin_get(admin: &mut MultiplexedConnection, key: &str) -> Option<Vec<u8>> {
    redis::cmd("GET").arg(key).query_async(admin).await.unwrap()
}

fn put(key: &str) -> Batch {
    let mut b = Batch::new();
    b.put(key, b"v".to_vec(), None);
    b
}

#[tokio::test]
async fn unreachable_server_fails_fast() {
    let url = format!("redis://127.0.0.1:{}", closed_port());
    let started = Instant::now();
    let err = RedisStore::connect(&url).await.unwrap_err();
    let took = started.elapsed();
    assert!(took < FAST, "took {took:?}: {err}");
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(err.to_string().contains("connect to `127.0.0.1:"), "{err}");
}

#[tokio::test]
async fn calls_after_the_server_went_away_fail_fast() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    drop(server);
    // The first call may still find the old connection; every later one
    // tries once to connect and fails at once.
    let _ = store.get("k").await;
    for _ in 0..3 {
        let started = Instant::now();
        let err = store.get("k").await.unwrap_err();
        assert!(started.elapsed() < FAST, "{:?}: {err}", started.elapsed());
        let started = Instant::now();
        let err = store.commit(put("k")).await.unwrap_err();
        assert!(started.elapsed() < FAST, "{:?}: {err}", started.elapsed());
        assert!(matches!(err, Error::Backend { .. }), "{err}");
        assert!(err.to_string().contains("it was not sent"), "{err}");
    }
}

#[tokio::test]
async fn a_store_comes_back_when_its_server_does() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let port = server.port();
    drop(server);
    let _ = store.get("k").await;
    assert!(store.get("k").await.is_err());
    let again = RedisServer::start_on(port);
    assert!(store.commit(put("k")).await.unwrap().is_applied());
    assert_eq!(store.get("k").await.unwrap(), Some(b"v".to_vec()));
    drop(again);
}

/// A scan goes on after its server restarted (loading its keys from its
/// append-only file): a `SCAN` cursor means nothing to the new process,
/// whose hash table is seeded differently, so the scan starts again there:
/// keys may come twice, none is missed.
#[tokio::test]
async fn a_scan_goes_on_across_a_server_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = RedisServer::start_durable(0, dir.path());
    let port = server.port();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let keys: Vec<String> = (0..600).map(|i| format!("k:{i}")).collect();
    for chunk in keys.chunks(100) {
        let mut b = Batch::new();
        for key in chunk {
            b.put(key, b"v".to_vec(), None);
        }
        assert!(store.commit(b).await.unwrap().is_applied());
    }
    let mut seen = std::collections::BTreeSet::new();
    let (mut cursor, mut pages, mut server) = (None, 0, Some(server));
    loop {
        let page = store.scan("k:", cursor, 20).await.unwrap();
        seen.extend(page.keys);
        pages += 1;
        assert!(pages < 1000, "the scan does not end");
        let Some(next) = page.next else { break };
        if pages == 5 {
            drop(server.take());
            server = Some(RedisServer::start_durable(port, dir.path()));
            // The store's connection to the old process fails once.
            let _ = store.get("k:0").await;
        }
        cursor = Some(next);
    }
    assert!(
        server.is_some() && pages > 5,
        "the scan ended before the restart"
    );
    let missed: Vec<&String> = keys.iter().filter(|k| !seen.contains(*k)).collect();
    assert!(
        missed.is_empty(),
        "{} keys missed: {missed:?}",
        missed.len()
    );
    // A cursor of the older form (a bare `SCAN` cursor) is read, from the
    // start.
    let page = store.scan("k:", Some(b"77".to_vec()), 20).await.unwrap();
    assert!(page.next.is_some());

    // A user refused `INFO` (an operator made by an older `kvmodel acl`)
    // still scans, as `SCAN` alone would.
    let mut admin = admin(server.as_ref().unwrap()).await;
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("old-operator")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("+scan")
        .arg("+get")
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://old-operator:pw@127.0.0.1:{port}");
    let old = RedisStore::connect(&url).await.unwrap();
    assert_eq!(scan_all(&old, "k:", 100).await.len(), keys.len());
}

/// A commit the server holds for longer than the redis crate's 500 ms
/// default, but within the store's default response timeout, succeeds.
#[tokio::test]
async fn a_slow_commit_within_the_response_timeout_succeeds() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    pause(&mut admin(&server).await, 1500, "WRITE").await;
    assert!(store.commit(put("k")).await.unwrap().is_applied());
}

#[tokio::test]
async fn a_lost_commit_reply_says_the_outcome_is_unknown() {
    let server = RedisServer::start();
    let store = RedisStore::builder(&server.url())
        .response_timeout(Duration::from_millis(100))
        .connect()
        .await
        .unwrap();
    // A first commit loads the script (on a fresh server, the paused one
    // would only learn that the script is missing).
    assert!(store.commit(put("warm")).await.unwrap().is_applied());
    let mut admin = admin(&server).await;
    pause(&mut admin, 1000, "WRITE").await;
    let err = store.commit(put("k")).await.unwrap_err();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    assert!(err.to_string().contains("may have been applied"), "{err}");
    // Not yet applied when the error came back …
    assert_eq!(admin_get(&mut admin, "k").await, None);
    // … and applied once the server resumed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while admin_get(&mut admin, "k").await.is_none() {
        assert!(Instant::now() < deadline, "the commit was never applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_read_that_times_out_is_a_backend_error() {
    let server = RedisServer::start();
    let store = RedisStore::builder(&server.url())
        .response_timeout(Duration::from_millis(100))
        .connect()
        .await
        .unwrap();
    pause(&mut admin(&server).await, 1000, "ALL").await;
    let err = store.get("k").await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
}

/// The store's connection is killed while its commit waits in the server:
/// the reply is lost, so the outcome is unknown (here it was not applied).
#[tokio::test]
async fn a_connection_dropped_after_sending_says_the_outcome_is_unknown() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut admin = admin(&server).await;
    pause(&mut admin, 2000, "WRITE").await;
    let commit = tokio::spawn({
        let store = store.clone();
        async move { store.commit(put("k")).await }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let id = loop {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query_async(&mut admin)
            .await
            .unwrap();
        let waiting = list
            .lines()
            .find(|l| l.contains("cmd=eval"))
            .and_then(|l| l.strip_prefix("id="))
            .and_then(|l| l.split(' ').next())
            .map(str::to_owned);
        if let Some(id) = waiting {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "the commit never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(&id)
        .query_async::<i64>(&mut admin)
        .await
        .map(|_| ())
        .unwrap();
    let err = commit.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    // The next call opens a new connection.
    let after = store.commit(put("after")).await;
    assert!(after.expect("a commit after the drop").is_applied());
}

#[tokio::test]
async fn a_store_can_be_built_from_a_client() {
    let server = RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let store = RedisStore::builder_from_client(client)
        .connect_timeout(Duration::from_millis(500))
        .no_response_timeout()
        .connect()
        .await
        .unwrap();
    assert!(store.commit(put("k")).await.unwrap().is_applied());
    assert!(format!("{store:?}").contains(&server.port().to_string()));
}

#[tokio::test]
async fn a_bad_url_says_how_to_write_one() {
    let err = RedisStore::connect("redis://[::1").await.unwrap_err();
    assert!(matches!(err, Error::InvalidUrl { .. }), "{err}");
    assert!(err.to_string().contains("redis://HOST:PORT"), "{err}");
}

/// A test server whose port another test's server took first is never
/// mistaken for it (tests running in parallel would share data).
#[test]
fn a_test_server_is_never_another_tests_server() {
    let first = RedisServer::start();
    let port = first.port();
    let second = std::panic::catch_unwind(|| RedisServer::start_on(port));
    assert!(second.is_err(), "a second server claimed port {port}");
}

/// How many times the server ran `command` (`INFO commandstats`, which
/// counts the commands scripts run too).
async fn calls(admin: &mut MultiplexedConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(admin)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

/// Removing a big collection never blocks the server on a `DEL`: deletes
/// are `UNLINK`s, which free a large value in the background.
#[tokio::test]
async fn big_collections_are_unlinked_not_deleted() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut admin = admin(&server).await;
    for chunk in 0..10u32 {
        let mut b = Batch::new();
        for i in 0..2_000u32 {
            let n = chunk * 2_000 + i;
            b.add(
                "big",
                n.to_be_bytes().to_vec(),
                format!("m{n}").into_bytes(),
            );
        }
        assert!(store.commit(b).await.unwrap().is_applied());
    }
    assert_eq!(store.collection_len("big").await.unwrap(), 20_000);
    let (del, unlink) = (
        calls(&mut admin, "del").await,
        calls(&mut admin, "unlink").await,
    );
    let mut b = Batch::new();
    b.delete("big").delete("small");
    b.put("kept", b"v".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.collection_len("big").await.unwrap(), 0);
    assert_eq!(calls(&mut admin, "del").await, del, "no DEL ran");
    assert_eq!(calls(&mut admin, "unlink").await, unlink + 2);
}

/// A change-feed append to a key that holds something other than a Stream
/// is refused before anything is written, on a server and on a cluster
/// (within one slot, and across slots, where the append is late).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_append_to_a_key_that_is_not_a_stream_writes_nothing() {
    async fn check<S: Store>(store: S, record: &str, feed: &str) {
        let mut b = Batch::new();
        b.put(feed, b"not a stream".to_vec(), None);
        assert!(store.commit(b).await.unwrap().is_applied());
        let mut b = Batch::new();
        b.absent(record).put(record, b"1".to_vec(), None).append(
            feed,
            b"event".to_vec(),
            Duration::from_secs(60),
        );
        let err = store.commit(b).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidBatch { reason, .. } if reason.contains("change-feed append")),
            "{err}"
        );
        assert_eq!(store.get(record).await.unwrap(), None, "nothing written");
    }
    let server = RedisServer::start();
    check(
        RedisStore::connect(&server.url()).await.unwrap(),
        "r:1",
        "r#feed",
    )
    .await;
    use kvmodel_runtime::conformance::{ClusterHarness, Harness};
    let h = ClusterHarness::spread().await;
    check(h.store(), "r:1", "r#feed").await;
    check(h.store(), "{t}r:2", "{t}r#feed").await;
}

/// The change stamp of a counter a commit removes (`Store::change_stamps`)
/// reads as removed and goes by a TTL of one afterlife, so that counters
/// made and removed again and again leave no stamp behind; a counter made
/// again within it keeps that TTL on its stamp, and one only moved keeps a
/// stamp without one.
#[tokio::test]
async fn a_removed_counters_stamp_goes_by_its_ttl() {
    use kvmodel_runtime::store::counter::{REMOVED_STAMP, STAMP_AFTERLIFE};
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let mut admin = admin(&server).await;
    let (gone, kept) = ("s:e#count:gone", "s:e#count:kept");
    let stamp = |k: &str| format!("~{{{k}}}");
    let pttl = async |admin: &mut MultiplexedConnection, key: &str| -> i64 {
        redis::cmd("PTTL")
            .arg(key)
            .query_async(admin)
            .await
            .unwrap()
    };
    let mut b = Batch::new();
    b.incr(gone, 2).incr(kept, 1);
    assert!(store.commit(b).await.unwrap().is_applied());
    let mut b = Batch::new();
    b.delete(gone).incr(kept, 1);
    assert!(store.commit(b).await.unwrap().is_applied());
    let keys = [gone.to_owned(), kept.to_owned()];
    let stamps = store.change_stamps(&keys).await.unwrap().unwrap();
    assert!(stamps[0] >= REMOVED_STAMP && stamps[1] == 2, "{stamps:?}");
    let afterlife = i64::try_from(STAMP_AFTERLIFE.as_millis()).unwrap();
    let ttl = pttl(&mut admin, &stamp(gone)).await;
    assert!(ttl > afterlife - 60_000 && ttl <= afterlife, "{ttl}");
    assert_eq!(pttl(&mut admin, &stamp(kept)).await, -1);
    // Made again: the stamp moves on from the removed one's, TTL kept.
    let mut b = Batch::new();
    b.incr(gone, 1);
    assert!(store.commit(b).await.unwrap().is_applied());
    let again = store.change_stamps(&keys).await.unwrap().unwrap();
    assert_eq!(again[0], stamps[0] + 1);
    assert!(pttl(&mut admin, &stamp(gone)).await > afterlife - 60_000);
}
