//! Shared holds: writes that only add to a counter go on together, and so
//! do writes that only read a key in a condition; a write that replaces
//! the key, or reads what others add to, does not go on beside them. Each
//! test leaves one write stuck after step 1 (its process "died" holding its
//! keys) and sees who goes on beside it.

use std::time::{Duration, Instant};

use kvmodel_runtime::conformance::{ClusterHarness, Harness};
use kvmodel_runtime::store::CrashPoint;
use kvmodel_runtime::{Batch, Outcome, RedisClusterStore, Result, Store};

/// Long enough that a write which does not wait finishes well within it.
const LEASE: Duration = Duration::from_millis(1500);

/// Far longer than a commit that does not wait takes.
const WAITING: Duration = Duration::from_millis(300);

/// Commits `batch` on `s` while a stuck write holds one of its keys: the
/// commit is still waiting after [`WAITING`]; then the store's lease clock
/// moves past the stuck write's lease (as if that much time had passed),
/// and the commit's result is returned.
async fn held_back(s: &RedisClusterStore, batch: Batch) -> Result<Outcome> {
    let commit = tokio::spawn({
        let s = s.clone();
        async move { s.commit(batch).await }
    });
    tokio::time::sleep(WAITING).await;
    assert!(!commit.is_finished(), "it waits for the stuck write");
    s.outlive_leases();
    commit.await.unwrap()
}

/// A create of record `{tag}holds:rec` that also runs `more` on the batch.
fn create(tag: &str, more: impl FnOnce(&mut Batch)) -> Batch {
    let record = format!("{{{tag}}}holds:rec");
    let mut b = Batch::new();
    b.absent(&record).put(&record, b"r".to_vec(), None);
    more(&mut b);
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adders_go_on_together_and_a_reader_is_kept_out() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let s = h.store();
    let counter = "{c}holds:count";
    let stuck = create("a1", |b| {
        b.incr(counter, 5);
    });
    let _ = s.crashing_at(CrashPoint::Prepared).commit(stuck).await;

    // Another write across slots and a batch within the counter's slot add
    // to it at once, without waiting for the stuck one.
    let started = Instant::now();
    let across = create("a2", |b| {
        b.incr(counter, 7);
    });
    assert!(s.commit(across).await.unwrap().is_applied());
    let mut within = Batch::new();
    within.incr(counter, 1);
    assert!(s.commit(within).await.unwrap().is_applied());
    assert!(
        started.elapsed() < LEASE,
        "adders waited for each other: {:?}",
        started.elapsed()
    );
    assert_eq!(s.counter(counter).await.unwrap(), 8);

    // A write that reads the counter in a condition does not go on beside
    // the stuck adder (whose increment may still come): it waits a little,
    // then fails as if the other write had got there first; once the
    // stuck one is overdue, the next attempt undoes it and applies.
    let reader = || {
        create("a3", |b| {
            b.present(counter);
        })
    };
    assert!(!s.commit(reader()).await.unwrap().is_applied());
    s.outlive_leases();
    assert!(s.commit(reader()).await.unwrap().is_applied());
    assert_eq!(s.counter(counter).await.unwrap(), 8, "the stuck one undone");
    assert!(s.unfinished_writes().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adders_together_never_pass_what_a_counter_holds() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let s = h.store();
    let counter = "{c}holds:big";
    let big = i64::MAX - 10;
    let stuck = create("b1", |b| {
        b.incr(counter, big);
    });
    let _ = s.crashing_at(CrashPoint::Prepared).commit(stuck).await;

    // Alone this increment fits; with the stuck one it would not: it waits
    // until the stuck one is undone, never applying past i64::MAX.
    let second = create("b2", |b| {
        b.incr(counter, big);
    });
    assert!(held_back(&s, second).await.unwrap().is_applied());
    assert_eq!(s.counter(counter).await.unwrap(), big);

    // A small increment beside a small stuck one does not wait.
    let stuck = create("b3", |b| {
        b.incr(counter, -5);
    });
    let _ = s.crashing_at(CrashPoint::Prepared).commit(stuck).await;
    let started = Instant::now();
    let mut within = Batch::new();
    within.incr(counter, 10);
    assert!(s.commit(within).await.unwrap().is_applied());
    assert!(started.elapsed() < LEASE, "{:?}", started.elapsed());
    assert_eq!(s.counter(counter).await.unwrap(), i64::MAX);
    // One more would pass i64::MAX unless the stuck -5 commits: it waits,
    // and once the stuck one is undone it is refused, writing nothing.
    let mut over = Batch::new();
    over.incr(counter, 1);
    let err = held_back(&s, over).await.unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
    assert_eq!(s.counter(counter).await.unwrap(), i64::MAX);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_go_on_together_and_a_writer_takes_its_turn() {
    let h = ClusterHarness::with_lease(LEASE).await;
    let s = h.store();
    let parent = "{p}holds:parent";
    let mut seed = Batch::new();
    seed.put(parent, b"x".to_vec(), None);
    assert!(s.commit(seed).await.unwrap().is_applied());
    let stuck = create("c1", |b| {
        b.present(parent);
    });
    let _ = s.crashing_at(CrashPoint::Prepared).commit(stuck).await;

    // Another child of the same parent goes on at once.
    let started = Instant::now();
    let child = create("c2", |b| {
        b.present(parent);
    });
    assert!(s.commit(child).await.unwrap().is_applied());
    assert!(started.elapsed() < LEASE, "{:?}", started.elapsed());

    // A write of the parent waits for the stuck reader (which only reads
    // it, so the write's condition is not given up) and claims the parent:
    // a reader that comes meanwhile waits behind the writer, never starving
    // it. Once the stuck reader is overdue it is undone, the write applies,
    // then the new reader.
    let update = {
        let s = s.clone();
        tokio::spawn(async move {
            let mut b = Batch::new();
            b.equals(parent, b"x".to_vec())
                .put(parent, b"y".to_vec(), None);
            let applied = s.commit(b).await.unwrap().is_applied();
            (applied, Instant::now())
        })
    };
    tokio::time::sleep(LEASE / 4).await;
    let reader = {
        let s = s.clone();
        tokio::spawn(async move {
            let b = create("c3", |b| {
                b.present(parent);
            });
            let applied = s.commit(b).await.unwrap().is_applied();
            (applied, Instant::now())
        })
    };
    let (updated, update_done) = update.await.unwrap();
    let (read, read_done) = reader.await.unwrap();
    assert!(updated, "the writer applied");
    assert!(
        started.elapsed() >= LEASE,
        "the writer waited for the stuck reader"
    );
    assert!(
        read_done >= update_done,
        "the new reader went after the writer"
    );
    assert!(read, "the new reader applied");
    assert!(s.unfinished_writes().await.unwrap().is_empty());
    assert_eq!(s.get(parent).await.unwrap().as_deref(), Some(&b"y"[..]));
}
