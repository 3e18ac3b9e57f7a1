//! A slot moves from one master to another while writers use it: every
//! record already there and every acknowledged write is there afterwards, counters equal the acknowledged
//! increments (give or take writes whose outcome was reported unknown), and
//! a write that failed left nothing behind.
//!
//! Batches of one slot run as one script, batches across slots run the
//! cross-slot protocol; both kinds write into the moving slot. The
//! migration is done as `redis-cli --cluster reshard` does it (`SETSLOT
//! IMPORTING`/`MIGRATING`, `MIGRATE` a few keys at a time, `SETSLOT NODE`),
//! slowly enough that the writes meet every phase.
//!
//! And a master fails over to its replica in the middle of a scan: the scan
//! still returns every key.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kvmodel_runtime::__private::hash_slot;
use kvmodel_runtime::conformance::{RedisCluster, scan_all};
use kvmodel_runtime::{Batch, Error, RedisClusterStore, Store};

const TASKS: usize = 4;
const WRITES: usize = 15;

fn conn(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .unwrap()
}

fn id(port: u16) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut conn(port))
        .unwrap()
}

/// The port of the master that serves `slot`.
fn owner(ports: &[u16], slot: u16) -> u16 {
    let shards: Vec<(i64, i64, i64)> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query::<Vec<redis::Value>>(&mut conn(ports[0]))
        .unwrap()
        .into_iter()
        .map(|v| {
            let redis::Value::Array(parts) = v else {
                panic!("CLUSTER SLOTS: {v:?}")
            };
            let int = |v: &redis::Value| match v {
                redis::Value::Int(i) => *i,
                other => panic!("CLUSTER SLOTS: {other:?}"),
            };
            let redis::Value::Array(node) = &parts[2] else {
                panic!("CLUSTER SLOTS: {parts:?}")
            };
            (int(&parts[0]), int(&parts[1]), int(&node[1]))
        })
        .collect();
    let (_, _, port) = shards
        .into_iter()
        .find(|(lo, hi, _)| (*lo..=*hi).contains(&i64::from(slot)))
        .expect("every slot is served");
    u16::try_from(port).unwrap()
}

/// Moves `slot` from `from` to `to`, a few keys at a time, while `busy`.
fn reshard(slot: u16, from: u16, to: u16, busy: &AtomicBool) -> (usize, Instant, Instant) {
    let (from_id, to_id) = (id(from), id(to));
    let (mut src, mut dst) = (conn(from), conn(to));
    let set = |c: &mut redis::Connection, state: &str, node: &str| {
        let () = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(state)
            .arg(node)
            .query(c)
            .unwrap();
    };
    // Let the writers start first.
    std::thread::sleep(Duration::from_millis(30));
    set(&mut dst, "IMPORTING", &from_id);
    let started = Instant::now();
    set(&mut src, "MIGRATING", &to_id);
    let mut moved = 0;
    loop {
        let keys: Vec<Vec<u8>> = redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(3)
            .query(&mut src)
            .unwrap();
        if keys.is_empty() {
            // Writers may still add keys on the source until the slot is
            // handed over; finish once they have stopped.
            if !busy.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        moved += keys.len();
        let () = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(to)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys)
            .query(&mut src)
            .unwrap();
        std::thread::sleep(Duration::from_millis(15));
    }
    let ended = Instant::now();
    set(&mut dst, "NODE", &to_id);
    set(&mut src, "NODE", &to_id);
    (moved, started, ended)
}

#[derive(Default, Debug)]
struct Tally {
    applied: Vec<String>,
    /// When each applied write was acknowledged.
    applied_at: Vec<Instant>,
    failed: Vec<String>,
    unknown: Vec<String>,
    errors: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_survive_a_slot_moving_under_them() {
    let cluster = RedisCluster::start();
    // A short response timeout: writes that meet the migration may wait
    // for it (their outcome is then reported unknown).
    let seeds = cluster.seeds();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let store = RedisClusterStore::builder(&seeds)
        .key_prefix("mv/")
        .lease(Duration::from_millis(300))
        .response_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let prefix_probe = "{mv}";
    // The store prefixes keys, but a hash tag decides the slot.
    let slot = hash_slot(prefix_probe);
    let ports = cluster.ports();
    let from = owner(&ports, slot);
    let to = *ports.iter().find(|p| **p != from).unwrap();

    // Records already in the slot, for the migration to carry over.
    const SEEDED: usize = 40;
    for i in 0..SEEDED {
        let mut b = Batch::new();
        let record = format!("{{mv}}:seed:{i}");
        b.put(&record, b"s".to_vec(), None)
            .incr("{mv}:count:one", 1);
        assert!(store.commit(b).await.unwrap().is_applied());
    }

    let busy = Arc::new(AtomicBool::new(true));
    let mover = {
        let busy = busy.clone();
        std::thread::spawn(move || reshard(slot, from, to, &busy))
    };
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            for i in 0..WRITES {
                let record = format!("{{mv}}:rec:{t}:{i}");
                let mut b = Batch::new();
                b.absent(&record).put(&record, b"x".to_vec(), None);
                if t % 2 == 0 {
                    // One slot: one script.
                    b.incr("{mv}:count:one", 1);
                } else {
                    // Across slots: the protocol, with a counter elsewhere.
                    b.incr("{elsewhere}:count:cross", 1);
                }
                match store.commit(b).await {
                    Ok(o) if o.is_applied() => {
                        tally.applied.push(record);
                        tally.applied_at.push(Instant::now());
                    }
                    Ok(_) => tally.failed.push(record),
                    Err(Error::OutcomeUnknown { .. }) => tally.unknown.push(record),
                    Err(e) => {
                        tally.errors.push(e.to_string());
                        tally.failed.push(record);
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            (t, tally)
        }));
    }
    let mut tallies = Vec::new();
    for task in tasks {
        tallies.push(task.await.unwrap());
    }
    busy.store(false, Ordering::SeqCst);
    let (moved, started, ended) = tokio::task::spawn_blocking(move || mover.join().unwrap())
        .await
        .unwrap();
    assert!(moved > SEEDED, "the migration moved {moved} keys");
    for i in 0..SEEDED {
        let record = format!("{{mv}}:seed:{i}");
        assert!(
            store.get(&record).await.unwrap().is_some(),
            "{record} is lost"
        );
    }
    let during = tallies
        .iter()
        .flat_map(|(_, t)| &t.applied_at)
        .filter(|at: &&std::time::Instant| (started..ended).contains(*at))
        .count();
    assert_eq!(owner(&ports, slot), to, "the slot moved");

    // Unfinished cross-slot writes (a step refused mid-migration) are
    // settled by recovery, as after a crash.
    tokio::time::sleep(Duration::from_millis(900)).await;
    store.recover_now().await.unwrap();

    let (mut one, mut cross) = ((0, 0), (0, 0));
    for (t, tally) in &tallies {
        for r in &tally.applied {
            assert!(
                store.get(r).await.unwrap().is_some(),
                "acknowledged {r} is lost"
            );
        }
        for r in &tally.failed {
            assert!(
                store.get(r).await.unwrap().is_none(),
                "failed {r} was written"
            );
        }
        let n = (tally.applied.len(), tally.unknown.len());
        let c = if t % 2 == 0 { &mut one } else { &mut cross };
        c.0 += n.0;
        c.1 += n.1;
    }
    let counter = |key: &'static str| {
        let store = store.clone();
        async move {
            match store.get(key).await.unwrap() {
                Some(b) => kvmodel_runtime::store::counter::read_counter(key, &b).unwrap(),
                None => 0,
            }
        }
    };
    let (one_count, cross_count) = (
        counter("{mv}:count:one").await,
        counter("{elsewhere}:count:cross").await,
    );
    for (name, count, (applied, unknown)) in
        [("one", one_count, one), ("cross", cross_count, cross)]
    {
        let seeded = if name == "one" { SEEDED } else { 0 };
        let (lo, hi) = (
            (seeded + applied) as i64,
            (seeded + applied + unknown) as i64,
        );
        assert!(
            (lo..=hi).contains(&count),
            "{name}-slot counter {count}, acknowledged {applied}, unknown {unknown}"
        );
    }
    let failed: usize = tallies.iter().map(|(_, t)| t.failed.len()).sum();
    let unknown: usize = tallies.iter().map(|(_, t)| t.unknown.len()).sum();
    let errors: Vec<&String> = tallies.iter().flat_map(|(_, t)| &t.errors).collect();
    eprintln!(
        "resharding: {moved} keys moved, {during} writes acknowledged meanwhile; one slot {one:?}, across slots {cross:?} \
         (applied, unknown); {failed} failed, {unknown} unknown; errors: {:?}",
        errors.iter().take(3).collect::<Vec<_>>()
    );
}

/// A scan whose cursor points into a master's keys goes on after that
/// master failed over to its replica: a `SCAN` cursor means nothing to
/// another server, so that shard is scanned again rather than resumed (a
/// key may be returned twice; none is missed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_goes_on_across_a_failover() {
    let mut cluster = RedisCluster::start();
    let ports = cluster.ports();
    // The second shard by its lowest slot: shards are scanned in that order.
    let master = owner(&ports, 5461);
    let store = cluster.store(Duration::from_secs(3)).await;
    let keys: Vec<String> = (0..600).map(|i| format!("k:{i}")).collect();
    for key in &keys {
        let mut b = Batch::new();
        b.put(key, b"v".to_vec(), None);
        assert!(store.commit(b).await.unwrap().is_applied());
    }
    let (cluster, replica) = tokio::task::spawn_blocking(move || {
        let replica = cluster.add_replica(master);
        (cluster, replica)
    })
    .await
    .unwrap();

    let mut seen = std::collections::BTreeSet::new();
    let (mut cursor, mut pages, mut failed_over) = (None, 0, false);
    loop {
        let page = store.scan("", cursor, 20).await.unwrap();
        seen.extend(page.keys);
        pages += 1;
        assert!(pages < 1000, "the scan does not end");
        let Some(next) = page.next else { break };
        // Mid-way through the shard of slot 5461 (a cursor reads
        // `covered:slot:run_id:cursor`): fail it over.
        let text = String::from_utf8(next.clone()).unwrap();
        if !failed_over && text.split(':').nth(1) == Some("5461") && !text.ends_with(":0") {
            let cluster = &cluster;
            tokio::task::block_in_place(|| cluster.fail_over(replica));
            failed_over = true;
        }
        cursor = Some(next);
    }
    assert!(failed_over, "the scan never stopped inside the shard");
    assert_eq!(
        owner(&ports, 5461),
        replica,
        "the replica serves the shard now"
    );
    let missed: Vec<&String> = keys.iter().filter(|k| !seen.contains(*k)).collect();
    assert!(
        missed.is_empty(),
        "{} keys missed: {missed:?}",
        missed.len()
    );

    // A user refused `INFO` (an operator made by an older `kvmodel acl`)
    // still scans, as `SCAN` alone would.
    for port in cluster.ports() {
        let () = redis::cmd("ACL")
            .arg(&[
                "SETUSER",
                "old-operator",
                "on",
                ">pw",
                "~*",
                "+scan",
                "+get",
            ])
            .arg(&["+cluster|nodes", "+cluster|slots", "+cluster|myid"])
            .query(&mut conn(port))
            .unwrap();
    }
    let seeds: Vec<String> = cluster
        .ports()
        .iter()
        .map(|p| format!("redis://old-operator:pw@127.0.0.1:{p}"))
        .collect();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let old = RedisClusterStore::builder(&seeds)
        .key_prefix(store.key_prefix())
        .connect()
        .await
        .unwrap();
    assert_eq!(scan_all(&old, "", 100).await.len(), keys.len());
}
