//! Change feeds: every applied commit of a record of an entity with `feed`
//! has its event, in each record's commit order; refused commits have none;
//! a reader resumes after a saved position, replays from the start, and is
//! told when retention has passed it. The same checks on every store that
//! keeps feeds (Redis Cluster: `cluster`); `Expired` events: `expiry`.

mod cluster;
mod expiry;

use std::collections::BTreeMap;
use std::time::Duration;

use kvmodel::conformance::RedisServer;
use kvmodel::feed::{Change, Event, FeedPosition, Position};
use kvmodel::{Error, KvEntity, MemoryStore, RedbStore, RedisStore, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "f", key = "acct:{id}", feed(retain = "1h"))]
struct Acct {
    id: String,
    #[kv(unique)]
    email: String,
    n: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "f", key = "note:{id}", feed(retain = "1s"))]
struct Note {
    id: String,
    text: String,
}

/// Records, writers per record, and updates per writer of the burst.
const RECORDS: usize = 6;
const WRITERS: usize = 3;
const UPDATES: usize = 8;

/// Writes the burst: each record created once (a second create and a create
/// that takes another's email are refused), then bumped by concurrent
/// writers, then one in three deleted. Returns how many writes were applied.
async fn burst<S: Store>(repo: &AcctRepo<S>) -> usize {
    let mut applied = 0;
    for i in 0..RECORDS {
        let a = Acct {
            id: format!("a{i}"),
            email: format!("a{i}@x"),
            n: 0,
        };
        repo.create(&a).await.unwrap();
        applied += 1;
        assert!(matches!(
            repo.create(&a).await,
            Err(Error::AlreadyExists { .. })
        ));
        let thief = Acct {
            id: format!("t{i}"),
            email: format!("a{i}@x"),
            n: 0,
        };
        assert!(matches!(
            repo.create(&thief).await,
            Err(Error::UniqueViolation { .. })
        ));
    }
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        for i in 0..RECORDS {
            let repo = repo.clone();
            tasks.push(tokio::spawn(async move {
                for u in 0..UPDATES {
                    repo.modify(&format!("a{i}"), |a| a.n += 1).await.unwrap();
                    if u % 4 == w % 4 {
                        // Refused while others write the record: its key
                        // is taken, or its email is.
                        let taken = Acct {
                            id: format!("a{i}"),
                            email: format!("new{w}{u}@x"),
                            n: 0,
                        };
                        assert!(matches!(
                            repo.create(&taken).await,
                            Err(Error::AlreadyExists { .. })
                        ));
                        let thief = Acct {
                            id: format!("t{i}w{w}u{u}"),
                            email: format!("a{i}@x"),
                            n: 0,
                        };
                        assert!(matches!(
                            repo.create(&thief).await,
                            Err(Error::UniqueViolation { .. })
                        ));
                    }
                }
                w
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    applied += WRITERS * RECORDS * UPDATES;
    for i in (0..RECORDS).step_by(3) {
        assert!(repo.delete(&format!("a{i}")).await.unwrap());
        applied += 1;
    }
    applied
}

/// Reads `n` changes from `stream`, failing after a generous wait.
async fn take<S: Store>(
    stream: &mut kvmodel::feed::FeedStream<Acct, S>,
    n: usize,
) -> Vec<Change<Acct>> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let next = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("the feed delivers every applied change");
        out.push(next.expect("the stream goes on").unwrap());
    }
    out
}

/// Checks the changes against the burst: per record, a create, then
/// updates each starting from the image the one before left, `n` rising by
/// one each time, then a delete of the last image for every third record;
/// positions strictly increase; the final images are what the store holds.
async fn check_changes<S: Store>(repo: &AcctRepo<S>, changes: &[Change<Acct>]) {
    let mut last: BTreeMap<String, Option<Acct>> = BTreeMap::new();
    let mut position: Option<FeedPosition> = None;
    for c in changes {
        assert!(
            position.is_none_or(|p| p < c.position),
            "positions increase"
        );
        position = Some(c.position);
        assert!(c.commit != 0);
        assert!(c.at_ms > 0);
        let slot = last.entry(c.key.clone()).or_insert(None);
        match &c.event {
            Event::Created(a) => {
                assert!(slot.is_none(), "created once: {c:?}");
                assert_eq!(a.n, 0);
                *slot = Some(a.clone());
            }
            Event::Updated { before, after } => {
                assert_eq!(slot.as_ref(), Some(before), "updates chain in commit order");
                assert_eq!(after.n, before.n + 1);
                *slot = Some(after.clone());
            }
            Event::Deleted(a) => {
                assert_eq!(slot.as_ref(), Some(a));
                assert_eq!(a.n, (WRITERS * UPDATES) as u64);
                *slot = None;
            }
            Event::Expired(a) => panic!("no account expires: {a:?}"),
            other => panic!("an unknown kind of change: {other:?}"),
        }
        assert!(!c.key.contains(":t"), "a refused create has no event");
    }
    assert_eq!(last.len(), RECORDS);
    for (key, image) in last {
        let id = key.rsplit(':').next().unwrap().to_owned();
        assert_eq!(
            repo.get(&id).await.unwrap(),
            image,
            "the feed ends at the stored image"
        );
    }
}

async fn feed_follows_a_burst<S: Store>(store: S) {
    let repo = AcctRepo::new(store);
    // Started before the burst, from now on.
    let mut live = repo.feed().from(Position::Now);
    // Nothing yet: it is waiting.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), live.next())
            .await
            .is_err()
    );
    let applied = burst(&repo).await;
    let seen = take(&mut live, applied).await;
    check_changes(&repo, &seen).await;
    // Exactly the applied writes: nothing more arrives.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), live.next())
            .await
            .is_err()
    );

    // Started after the burst, from the start: the same changes.
    let mut replay = repo.feed().buffer(7).from(Position::Start);
    let again = take(&mut replay, applied).await;
    assert_eq!(again, seen);

    // A consumer that saved a position and restarts sees the rest, once.
    let half = applied / 2;
    let mut first = repo.feed().from(Position::Start);
    let got = take(&mut first, half).await;
    let saved = first.position().unwrap();
    assert_eq!(saved, got[half - 1].position);
    let text = serde_json::to_string(&saved).unwrap();
    drop(first);
    let restored: FeedPosition = serde_json::from_str(&text).unwrap();
    let mut resumed = repo.feed().from(Position::After(restored));
    let rest = take(&mut resumed, applied - half).await;
    assert_eq!(rest, seen[half..]);

    // A change made while a reader waits wakes it.
    let waiter = tokio::spawn(async move {
        let c = resumed.next().await.unwrap().unwrap();
        (c.key, matches!(c.event, Event::Created(_)))
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    repo.create(&Acct {
        id: "late".into(),
        email: "late@x".into(),
        n: 0,
    })
    .await
    .unwrap();
    let (key, created) = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(key, AcctKeys::record("late"));
    assert!(created);
}

/// Writes three notes, the first two before the retention of one second
/// has passed for them, the third after: a reader after the first is behind.
async fn behind_retention<S: Store>(store: S, advance: impl AsyncFnOnce()) {
    let notes = NoteRepo::new(store);
    for id in ["n1", "n2"] {
        notes
            .create(&Note {
                id: id.into(),
                text: "t".into(),
            })
            .await
            .unwrap();
    }
    let mut start = notes.feed().from(Position::Start);
    let first = start.next().await.unwrap().unwrap();
    advance().await;
    notes
        .create(&Note {
            id: "n3".into(),
            text: "t".into(),
        })
        .await
        .unwrap();
    let mut late = notes.feed().from(Position::After(first.position));
    match late.next().await {
        Some(Err(Error::FeedBehind { .. })) => {}
        other => panic!("expected FeedBehind, got {other:?}"),
    }
    assert!(
        late.next().await.is_none(),
        "the stream ends after the error"
    );
    // From the start, the reader gets what is retained: the third note.
    let mut fresh = notes.feed().from(Position::Start);
    let c = fresh.next().await.unwrap().unwrap();
    assert_eq!(c.key, NoteKeys::record("n3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_feed_follows_a_burst() {
    feed_follows_a_burst(MemoryStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_feed_follows_a_burst() {
    let dir = tempfile::tempdir().unwrap();
    feed_follows_a_burst(RedbStore::open(dir.path().join("f.redb")).unwrap()).await;
}

#[tokio::test]
async fn memory_reader_behind_retention_gets_an_error() {
    let clock = kvmodel::clock::ManualClock::new(1_000_000);
    let store = MemoryStore::with_clock(clock.clone());
    behind_retention(store, async || clock.advance(Duration::from_secs(2))).await;
}

#[tokio::test]
async fn redb_reader_behind_retention_gets_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let clock = kvmodel::clock::ManualClock::new(1_000_000);
    let store = RedbStore::open_with_clock(dir.path().join("r.redb"), clock.clone()).unwrap();
    behind_retention(store, async || clock.advance(Duration::from_secs(2))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_feed_follows_a_burst() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    feed_follows_a_burst(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_reader_behind_retention_gets_an_error() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    behind_retention(store, async || {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    })
    .await;
}

/// A store with only the required methods: it keeps no feed.
#[derive(Clone, Debug, Default)]
struct Plain(MemoryStore);

impl Store for Plain {
    fn backend(&self) -> &'static str {
        "plain"
    }
    async fn commit(&self, batch: kvmodel::Batch) -> kvmodel::Result<kvmodel::Outcome> {
        self.0.commit(batch).await
    }
    async fn get(&self, key: &str) -> kvmodel::Result<Option<Vec<u8>>> {
        self.0.get(key).await
    }
    async fn get_many(&self, keys: &[String]) -> kvmodel::Result<Vec<Option<Vec<u8>>>> {
        self.0.get_many(keys).await
    }
    async fn range(
        &self,
        key: &str,
        req: kvmodel::RangeRequest,
    ) -> kvmodel::Result<kvmodel::RangeResult> {
        self.0.range(key, req).await
    }
}

#[tokio::test]
async fn a_store_without_feeds_refuses_the_write_and_the_reader() {
    let repo = AcctRepo::new(Plain::default());
    let a = Acct {
        id: "1".into(),
        email: "e".into(),
        n: 0,
    };
    let err = repo.create(&a).await.unwrap_err();
    assert!(err.to_string().contains("no change feed"), "{err}");
    assert_eq!(repo.get("1").await.unwrap(), None, "nothing was written");
    let err = repo
        .feed()
        .from(Position::Start)
        .next()
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("no change feed"), "{err}");
}

#[tokio::test]
async fn a_reader_can_follow_one_record() {
    let repo = AcctRepo::new(MemoryStore::new());
    for id in ["x", "y"] {
        repo.create(&Acct {
            id: id.into(),
            email: format!("{id}@x"),
            n: 0,
        })
        .await
        .unwrap();
    }
    repo.modify("y", |a| a.n = 5).await.unwrap();
    repo.modify("x", |a| a.n = 7).await.unwrap();
    let mut only_x = repo
        .feed()
        .only(AcctKeys::record("x"))
        .from(Position::Start);
    let first = only_x.next().await.unwrap().unwrap();
    assert!(matches!(first.event, Event::Created(ref a) if a.id == "x"));
    let second = only_x.next().await.unwrap().unwrap();
    assert!(matches!(second.event, Event::Updated { ref after, .. } if after.n == 7));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), only_x.next())
            .await
            .is_err(),
        "nothing of `y`"
    );
}

/// A reader filtered by a value (as by an index value) sees a record enter
/// the set and leave it: each change whose record matches before or after.
#[tokio::test]
async fn a_reader_filtered_by_a_value_sees_records_enter_and_leave() {
    let repo = AcctRepo::new(MemoryStore::new());
    for id in ["x", "y"] {
        repo.create(&Acct {
            id: id.into(),
            email: format!("{id}@x"),
            n: 0,
        })
        .await
        .unwrap();
    }
    repo.modify("x", |a| a.n = 5).await.unwrap(); // enters
    repo.modify("y", |a| a.n = 1).await.unwrap(); // never in
    repo.modify("x", |a| a.n = 6).await.unwrap(); // stays
    repo.modify("x", |a| a.n = 2).await.unwrap(); // leaves
    repo.modify("x", |a| a.n = 3).await.unwrap(); // stays out
    repo.modify("y", |a| a.n = 9).await.unwrap(); // enters
    repo.delete("y").await.unwrap(); // leaves
    let mut high = repo
        .feed()
        .matching(|a: &Acct| a.n >= 5)
        .matching(|a: &Acct| a.id != "z")
        .from(Position::Start);
    let mut seen = Vec::new();
    while let Ok(Some(change)) = tokio::time::timeout(Duration::from_millis(50), high.next()).await
    {
        let change = change.unwrap();
        seen.push(match change.event {
            Event::Created(a) => format!("+{}{}", a.id, a.n),
            Event::Updated { before, after } => format!("{}{}>{}", after.id, before.n, after.n),
            Event::Deleted(a) => format!("-{}{}", a.id, a.n),
            Event::Expired(a) => format!("~{}{}", a.id, a.n),
            other => panic!("an unknown kind of change: {other:?}"),
        });
    }
    assert_eq!(seen, ["x0>5", "x5>6", "x6>2", "y1>9", "-y9"]);
}

/// A transaction's writes have their events, sharing one commit; a
/// transaction that is refused appends none.
async fn transactions_have_their_events<S: Store>(store: S) {
    let accts = AcctRepo::new(store.clone());
    let notes = NoteRepo::new(store.clone());
    accts
        .create(&Acct {
            id: "old".into(),
            email: "old@x".into(),
            n: 0,
        })
        .await
        .unwrap();
    let (accts2, notes2) = (accts.clone(), notes.clone());
    kvmodel::transaction(&store, move |tx| {
        let (accts, notes) = (accts2.clone(), notes2.clone());
        async move {
            accts
                .in_tx(&tx)
                .create(&Acct {
                    id: "new".into(),
                    email: "new@x".into(),
                    n: 1,
                })
                .await?;
            accts.in_tx(&tx).delete(&AcctKeys::record("old")).await?;
            notes
                .in_tx(&tx)
                .create(&Note {
                    id: "n".into(),
                    text: "t".into(),
                })
                .await?;
            Ok(())
        }
    })
    .await
    .unwrap();
    // Refused: the email is taken, so neither write is applied.
    let refused = kvmodel::transaction(&store, |tx| {
        let accts = accts.clone();
        async move {
            accts
                .in_tx(&tx)
                .create(&Acct {
                    id: "thief".into(),
                    email: "new@x".into(),
                    n: 0,
                })
                .await?;
            accts
                .in_tx(&tx)
                .create(&Acct {
                    id: "other".into(),
                    email: "other@x".into(),
                    n: 0,
                })
                .await?;
            Ok(())
        }
    })
    .await;
    assert!(
        matches!(refused, Err(Error::UniqueViolation { .. })),
        "{refused:?}"
    );
    accts.modify("new", |a| a.n = 2).await.unwrap();
    let mut stream = accts.feed().from(Position::Start);
    let changes = take(&mut stream, 4).await;
    assert!(matches!(changes[0].event, Event::Created(ref a) if a.id == "old"));
    let changes = &changes[1..];
    assert!(
        matches!(changes[0].event, Event::Created(ref a) if a.id == "new"),
        "{changes:?}"
    );
    assert!(
        matches!(changes[1].event, Event::Deleted(ref a) if a.id == "old"),
        "{changes:?}"
    );
    assert_eq!(changes[0].commit, changes[1].commit, "one commit");
    assert!(
        matches!(changes[2].event, Event::Updated { ref after, .. } if after.n == 2),
        "nothing of the refused transaction: {changes:?}"
    );
    assert_ne!(changes[2].commit, changes[0].commit);
    let note = notes
        .feed()
        .from(Position::Start)
        .next()
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(note.event, Event::Created(ref n) if n.id == "n"));
    assert_eq!(note.commit, changes[0].commit, "one commit across entities");
}

#[tokio::test]
async fn memory_transactions_have_their_events() {
    transactions_have_their_events(MemoryStore::new()).await;
}

#[tokio::test]
async fn redb_transactions_have_their_events() {
    let dir = tempfile::tempdir().unwrap();
    transactions_have_their_events(RedbStore::open(dir.path().join("db.redb")).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_transactions_have_their_events() {
    let server = RedisServer::start();
    transactions_have_their_events(RedisStore::connect(&server.url()).await.unwrap()).await;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "f", key = "shelf:{id}", feed(retain = "1h"))]
#[kv(dependent(entity = Book, relation = shelf))]
struct Shelf {
    id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "f", key = "book:{id}", feed(retain = "1h"))]
#[kv(relation(name = shelf, belongs_to = Shelf, by = shelf, on_delete = "cascade"))]
struct Book {
    id: String,
    shelf: String,
}

/// A `cascade` delete removes each child in a commit of its own, which
/// appends the child's `Deleted` event; the parent's comes after them.
async fn cascade_deletes_have_their_events<S: Store>(store: S) {
    let shelves = ShelfRepo::new(store.clone());
    let books = BookRepo::new(store);
    shelves.create(&Shelf { id: "s".into() }).await.unwrap();
    shelves.create(&Shelf { id: "t".into() }).await.unwrap();
    for (id, shelf) in [("b1", "s"), ("b2", "s"), ("b3", "t")] {
        books
            .create(&Book {
                id: id.into(),
                shelf: shelf.into(),
            })
            .await
            .unwrap();
    }
    let mut book_feed = books.feed().from(Position::Start);
    let mut shelf_feed = shelves.feed().from(Position::Start);
    let mut read = async |n: usize| {
        let mut out = Vec::new();
        for _ in 0..n {
            let next = tokio::time::timeout(Duration::from_secs(10), book_feed.next()).await;
            out.push(next.expect("an event").unwrap().unwrap());
        }
        out
    };
    let created = read(3).await;
    assert!(created.iter().all(|c| matches!(c.event, Event::Created(_))));
    assert!(shelves.delete("s").await.unwrap());
    let deleted = read(2).await;
    let mut ids: Vec<&str> = deleted
        .iter()
        .map(|c| match &c.event {
            Event::Deleted(b) => b.id.as_str(),
            other => panic!("a cascade delete's event: {other:?}"),
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["b1", "b2"]);
    assert_ne!(deleted[0].commit, deleted[1].commit, "one commit per child");
    let mut last = None;
    for _ in 0..3 {
        let c = tokio::time::timeout(Duration::from_secs(10), shelf_feed.next())
            .await
            .expect("an event")
            .unwrap()
            .unwrap();
        last = Some(c);
    }
    let last = last.unwrap();
    assert!(matches!(last.event, Event::Deleted(ref s) if s.id == "s"));
    assert!(
        last.at_ms >= deleted[1].at_ms,
        "the parent goes after its children"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(100), book_feed.next())
            .await
            .is_err(),
        "nothing of the other shelf's book"
    );
}

#[tokio::test]
async fn memory_cascade_deletes_have_their_events() {
    cascade_deletes_have_their_events(MemoryStore::new()).await;
}

#[tokio::test]
async fn redb_cascade_deletes_have_their_events() {
    let dir = tempfile::tempdir().unwrap();
    cascade_deletes_have_their_events(RedbStore::open(dir.path().join("c.redb")).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cascade_deletes_have_their_events() {
    let server = RedisServer::start();
    cascade_deletes_have_their_events(RedisStore::connect(&server.url()).await.unwrap()).await;
}

/// The changes `stream` hands out until none comes for a moment.
async fn drain<S: Store>(stream: &mut kvmodel::feed::FeedStream<Acct, S>) -> Vec<Change<Acct>> {
    let mut out = Vec::new();
    while let Ok(Some(change)) =
        tokio::time::timeout(Duration::from_millis(300), stream.next()).await
    {
        out.push(change.unwrap());
    }
    out
}

fn positions(changes: &[Change<Acct>]) -> Vec<FeedPosition> {
    changes.iter().map(|c| c.position).collect()
}

/// Consumers of one group on Redis share the feed, each change given to
/// one of them; a consumer that stops before acknowledging is given its
/// changes again when it comes back under its name (at least once), and
/// acknowledged ones never; a group's position is its own, whatever
/// `from` says once it exists; changes a filter skips are acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_consumer_groups_share_the_feed_at_least_once() {
    let server = RedisServer::start();
    consumer_groups_share_the_feed_at_least_once(RedisStore::connect(&server.url()).await.unwrap())
        .await;
}

async fn consumer_groups_share_the_feed_at_least_once<S: Store>(store: S) {
    let repo = AcctRepo::new(store);
    for i in 0..10 {
        repo.create(&Acct {
            id: format!("a{i}"),
            email: format!("a{i}@x"),
            n: 0,
        })
        .await
        .unwrap();
    }
    let all = positions(&drain(&mut repo.feed().from(Position::Start)).await);
    assert_eq!(all.len(), 10);

    // `a` takes 4 (its reads fetch 3 at a time, so 6 are given to it) and
    // acknowledges 3, then stops; `b` takes the rest.
    let mut a = repo.feed().group("g", "a").buffer(3).from(Position::Start);
    let mut first = Vec::new();
    for _ in 0..4 {
        first.push(a.next().await.unwrap().unwrap());
    }
    for c in &first[..3] {
        a.ack(c).await.unwrap();
    }
    drop(a);
    let mut b = repo.feed().group("g", "b").from(Position::Now);
    let taken = drain(&mut b).await;
    for c in &taken {
        b.ack(c).await.unwrap();
    }
    assert_eq!(positions(&first), all[..4]);
    assert_eq!(positions(&taken), all[6..], "each change to one consumer");

    // `a` again: its unacknowledged changes first, then nothing new.
    let mut a = repo.feed().group("g", "a").from(Position::Now);
    let again = drain(&mut a).await;
    assert_eq!(
        positions(&again),
        all[3..6],
        "at least once, from where it stood"
    );
    for c in &again {
        a.ack(c).await.unwrap();
    }
    drop(a);
    let mut a = repo.feed().group("g", "a").from(Position::Start);
    assert!(
        drain(&mut a).await.is_empty(),
        "nothing acknowledged comes back"
    );

    drop((a, b));

    // A new change goes to one consumer of the group, even though readers
    // were dropped while the server held their blocking reads: what such a
    // read is given stays pending for its consumer, given again when the
    // consumer comes back.
    repo.modify("a1", |x| x.n = 1).await.unwrap();
    let mut got = Vec::new();
    for name in ["a", "b", "a"] {
        let mut c = repo.feed().group("g", name).from(Position::Start);
        for change in drain(&mut c).await {
            c.ack(&change).await.unwrap();
            got.push(change);
        }
    }
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(matches!(got[0].event, Event::Updated { ref after, .. } if after.n == 1));

    // A filter's skipped changes are acknowledged by the reader.
    let mut picky = repo
        .feed()
        .group("h", "c")
        .matching(|x: &Acct| x.n > 100)
        .from(Position::Start);
    assert!(drain(&mut picky).await.is_empty());
    drop(picky);
    let mut plain = repo.feed().group("h", "c").from(Position::Start);
    assert!(drain(&mut plain).await.is_empty(), "skipped means handled");

    // A plain reader acknowledges nothing.
    let mut reader = repo.feed().from(Position::Start);
    let change = reader.next().await.unwrap().unwrap();
    let err = reader.ack(&change).await.unwrap_err();
    assert!(err.to_string().contains("consumer group"), "{err}");
}

#[tokio::test]
async fn a_store_without_consumer_groups_says_so() {
    let repo = AcctRepo::new(MemoryStore::new());
    let mut group = repo.feed().group("g", "a").from(Position::Start);
    let err = group.next().await.unwrap().unwrap_err();
    assert!(
        err.to_string().contains("keeps no consumer groups"),
        "{err}"
    );
}
