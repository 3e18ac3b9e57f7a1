//! The change feed under a killed writer: a burst of concurrent writers
//! (`feed_writer`) is killed with SIGKILL at no particular step, on redb
//! and on Redis. Afterwards every acknowledged write has its event, each
//! tick's events chain in its commit order and end at the stored tick, and
//! the only events beyond the acknowledged writes are those of writes in
//! flight at the kill (which may or may not have committed).

use std::collections::BTreeMap;
use std::time::Duration;

use kvmodel::feed::{Change, Event, Position};
use kvmodel::{AnyStore, Store};
use kvmodel_examples::ticks::{Tick, TickRepo};
use kvmodel_runtime::conformance::RedisServer;

mod common;
use common::writer::Writer;

/// Concurrent writers in the writer process.
const WRITERS: u64 = 4;

/// Starts the burst on the store at `url` from tick `first` on.
fn start_writer(url: &str, first: u64) -> Writer {
    let (first, writers) = (first.to_string(), WRITERS.to_string());
    Writer::start(env!("CARGO_BIN_EXE_feed_writer"), &[url, &first, &writers])
}

/// What the writers' log says of one tick: the writes acknowledged, in
/// order, and the one in flight at a kill, if any.
#[derive(Debug, Default, Clone)]
struct Writes {
    acked: Vec<&'static str>,
    in_flight: Option<&'static str>,
}

/// The operation word as the event kind it must leave.
fn kind(op: &str) -> &'static str {
    match op {
        "create" => "created",
        "bump" => "updated",
        "delete" => "deleted",
        other => panic!("unknown operation {other}"),
    }
}

/// Reads the log: per tick, its acknowledged writes and the one in flight;
/// and the next free tick number. A writer's writes run one after another,
/// so a write begun and not acknowledged was in flight when its process
/// was killed; later rounds never touch the ticks of earlier ones.
fn expected(log: &[String]) -> (BTreeMap<String, Writes>, u64) {
    let mut ticks: BTreeMap<String, Writes> = BTreeMap::new();
    let mut next = 0;
    for line in log {
        let mut words = line.split(' ');
        let (Some(word), Some(_writer), Some(op), Some(id)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            panic!("an unexpected line: {line}");
        };
        let n: u64 = id.rsplit('-').next().unwrap().parse().unwrap();
        next = next.max(n + 1);
        let t = ticks.entry(id.to_owned()).or_default();
        match word {
            "begin" => {
                assert!(t.in_flight.is_none(), "one write of a tick at a time");
                t.in_flight = Some(kind(op));
            }
            "ack" => {
                assert_eq!(t.in_flight.take(), Some(kind(op)), "{line}");
                t.acked.push(kind(op));
            }
            _ => panic!("an unexpected line: {line}"),
        }
    }
    (ticks, next)
}

/// Every change of the feed, from the start until it has nothing more (no
/// one writes any longer).
async fn all_changes<S: Store>(repo: &TickRepo<S>) -> Vec<Change<Tick>> {
    let mut stream = repo.feed().from(Position::Start);
    let mut out = Vec::new();
    while let Ok(next) = tokio::time::timeout(Duration::from_millis(500), stream.next()).await {
        out.push(next.expect("the stream goes on").unwrap());
    }
    out
}

/// The feed against the log and the stored ticks.
async fn check<S: Store>(store: S, log: &[String]) {
    let (want, _) = expected(log);
    assert!(
        want.values().filter(|w| !w.acked.is_empty()).count() >= 10,
        "the writers got far enough to test something"
    );
    let repo = TickRepo::new(store.clone());
    let mut events: BTreeMap<String, Vec<&Event<Tick>>> = BTreeMap::new();
    let changes = all_changes(&repo).await;
    for c in &changes {
        events.entry(c.key.clone()).or_default().push(&c.event);
    }
    for key in events.keys() {
        let id = key.rsplit(':').next().unwrap();
        assert!(
            want.contains_key(id),
            "an event of a tick never written: {key}"
        );
    }
    for (id, w) in &want {
        let key = kvmodel_examples::ticks::TickKeys::record(id);
        let seen = events.get(&key).cloned().unwrap_or_default();
        // The events chain: each starts from the image the one before left.
        let mut image: Option<Tick> = None;
        let mut kinds = Vec::new();
        for e in &seen {
            match e {
                Event::Created(t) => {
                    assert!(image.is_none(), "{id}: created twice");
                    assert_eq!(t.n, 0);
                    image = Some(t.clone());
                    kinds.push("created");
                }
                Event::Updated { before, after } => {
                    assert_eq!(image.as_ref(), Some(before), "{id}: chain");
                    assert_eq!(after.n, before.n + 1);
                    image = Some(after.clone());
                    kinds.push("updated");
                }
                Event::Deleted(t) => {
                    assert_eq!(image.as_ref(), Some(t), "{id}: chain");
                    image = None;
                    kinds.push("deleted");
                }
                Event::Expired(t) => panic!("{id}: no tick expires, yet {t:?} did"),
                other => panic!("{id}: an unknown kind of change: {other:?}"),
            }
        }
        // Every acknowledged write has its event; beyond them, at most the
        // write in flight, and only if it committed.
        let mut with_flight = w.acked.clone();
        with_flight.extend(w.in_flight);
        assert!(
            kinds == w.acked || kinds == with_flight,
            "{id}: events {kinds:?}, acknowledged {:?}, in flight {:?}",
            w.acked,
            w.in_flight
        );
        // No event of a write that did not commit: the events end at the
        // stored tick.
        assert_eq!(repo.get(id).await.unwrap(), image, "{id}: stored tick");
    }
}

/// Runs rounds of a writer killed mid-burst on the store at `url`, each
/// starting after the ticks of the rounds before, checking after each.
async fn killed_writer_rounds(url: &str) {
    let mut log = Vec::new();
    for round in 0..3usize {
        let (_, first) = expected(&log);
        let mut writer = start_writer(url, first);
        writer.wait_for_acks(40 + 13 * round);
        // Kill it a little later, at no particular step.
        std::thread::sleep(Duration::from_millis(fastrand::u64(0..30)));
        log.extend(writer.kill());
        let store = AnyStore::open(url).await.unwrap();
        check(store, &log).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn redb_feed_survives_a_killed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("ticks.redb").display());
    killed_writer_rounds(&url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_feed_survives_a_killed_writer() {
    let server = RedisServer::start();
    killed_writer_rounds(&server.url()).await;
}
