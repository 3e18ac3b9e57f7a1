//! On the stores with a single writer (memory, redb), `modify`, `update`
//! and `delete` read, compute and write in one write transaction: however
//! many tasks contend for one record, each change runs exactly once and
//! none is retried. On a current-thread runtime redb falls back to the
//! optimistic protocol, which still loses nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::model::*;
use kvmodel::conformance::{Harness, MemoryHarness, RedbHarness};

/// Four tasks × five `modify` calls whose change takes a while; returns
/// how often the change ran.
async fn contend<H: Harness>(h: &H) -> u32 {
    let repo = UserRepo::new(h.store());
    repo.create(&user(
        "hot",
        "hot@x.io",
        Status::Active,
        "2026-01-01T00:00:00Z",
    ))
    .await
    .unwrap();
    let runs = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for t in 0..4 {
        let (repo, runs) = (repo.clone(), runs.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..5 {
                repo.modify("hot", |u| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    // Long enough for every other task to read the same
                    // version, were the read outside the write.
                    std::thread::sleep(Duration::from_millis(2));
                    u.visits = Some(u.visits.unwrap_or(0) + 1);
                    u.status = if (t + i) % 2 == 0 {
                        Status::Active
                    } else {
                        Status::Inactive
                    };
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let u = repo.get("hot").await.unwrap().unwrap();
    assert_eq!(u.visits, Some(20), "no update lost");
    let active = repo.count_by_status(Status::Active).await.unwrap();
    let inactive = repo.count_by_status(Status::Inactive).await.unwrap();
    assert_eq!(active + inactive, 1, "exactly one status counted");
    runs.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_runs_each_change_once() {
    assert_eq!(contend(&MemoryHarness::new()).await, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redb_runs_each_change_once() {
    assert_eq!(contend(&RedbHarness::new()).await, 20);
}

#[tokio::test]
async fn redb_on_a_current_thread_runtime_loses_nothing() {
    assert!(contend(&RedbHarness::new()).await >= 20);
}

/// Polls `f` to completion on this thread, without any runtime: how a
/// synchronous caller with its own small executor drives a repository.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => return v,
            std::task::Poll::Pending => std::thread::park(),
        }
    }
}

/// Outside any runtime, redb writes in one transaction too.
#[test]
fn redb_outside_a_runtime_updates_and_deletes() {
    let h = RedbHarness::new();
    let repo = UserRepo::new(h.store());
    let mut u = user("1", "a@x.io", Status::Active, "2026-01-01T00:00:00Z");
    block_on(repo.create(&u)).unwrap();
    u.status = Status::Inactive;
    block_on(repo.update(&u)).unwrap();
    assert_eq!(block_on(repo.get("1")).unwrap(), Some(u.clone()));
    assert_eq!(block_on(repo.count_by_status(Status::Inactive)).unwrap(), 1);
    assert_eq!(block_on(repo.count_by_status(Status::Active)).unwrap(), 0);
    assert!(block_on(repo.delete("1")).unwrap());
    assert!(!block_on(repo.delete("1")).unwrap());
    assert_eq!(block_on(repo.count_total()).unwrap(), 0);
}

/// Outside any runtime, DynamoDB writers that race each other wait their
/// backoff without a tokio timer, and lose nothing: the store sends its
/// requests on a runtime of its own, and its waits need none.
#[test]
fn dynamodb_writers_outside_a_runtime_race_and_lose_nothing() {
    // The emulator is served by a runtime of its own on other threads; the
    // writers below run on plain threads with no runtime.
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let harness = server.block_on(kvmodel::conformance::DynamoHarness::start());
    let repo = UserRepo::new(harness.store());
    block_on(repo.create(&user(
        "hot",
        "hot@x.io",
        Status::Active,
        "2026-01-01T00:00:00Z",
    )))
    .unwrap();
    let runs = Arc::new(AtomicU32::new(0));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            // A store each, as separate processes would have: nothing in
            // one process orders their writes.
            let store = server.block_on(harness.emulator().store("kvmodel"));
            let (repo, runs) = (UserRepo::new(store), runs.clone());
            std::thread::spawn(move || {
                assert!(tokio::runtime::Handle::try_current().is_err());
                for i in 0..5 {
                    block_on(repo.modify("hot", |u| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(2));
                        u.visits = Some(u.visits.unwrap_or(0) + 1);
                        u.status = if (t + i) % 2 == 0 {
                            Status::Active
                        } else {
                            Status::Inactive
                        };
                    }))
                    .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let u = block_on(repo.get("hot")).unwrap().unwrap();
    assert_eq!(u.visits, Some(20), "no update lost");
    let active = block_on(repo.count_by_status(Status::Active)).unwrap();
    let inactive = block_on(repo.count_by_status(Status::Inactive)).unwrap();
    assert_eq!(active + inactive, 1, "exactly one status counted");
    assert!(
        runs.load(Ordering::SeqCst) > 20,
        "the writers raced: some changes ran again"
    );
    drop(harness);
}
