//! A model-based test of generated repositories: random sequences of
//! create, update, upsert, modify and delete on a lasting and an expiring
//! entity and on one with a change feed (whose events are checked against
//! the writes the model applied), store time passing (on an injected clock where the store has
//! one), expiry sweeps, and concurrent writers, checked after every step
//! against a plain in-memory model (records, unique lookups, every listing
//! page by page in both directions, counters, a counter kept when leases
//! expire, the number of records); after every sequence
//! `verify` is clean. On the in-memory, redb, Redis, Redis Cluster and
//! DynamoDB stores.
//!
//! Each write of a lease draws its expiry: the entity's `ttl`, its own
//! `ends` soon, or its own `ends` long after the sequence. Once a lease
//! expired, listings and lookups skip it at once; until a sweep ran to the
//! end, counters lie between what the live leases add and that plus what
//! the expired ones may still add (a write's sweep step may take them back
//! first); after it they are exact, the kept count unchanged, and `verify`
//! finds nothing awaiting the sweep.
//!
//! `KVMODEL_MODEL_CASES` sets the number of sequences per store (by
//! default 64 on memory, 16 on redb, 4 on Redis, Redis Cluster and
//! DynamoDB; with `KVMODEL_LONG_TESTS=1`, as `.ci/run` runs it, 256, 64
//! and 12);
//! `KVMODEL_MODEL_STEPS` the longest sequence (default 24; 16 on Redis and
//! Redis Cluster).
//! A failure prints the shrunk sequence; it becomes a case in
//! `regressions.rs`.

mod check;
mod entities;
mod feed;
mod regressions;
mod steps;

use kvmodel::conformance::Harness;
use kvmodel::{Batch, Store};
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use entities::Model;
use steps::{Repos, Step};

/// Removes every key of the namespace, so each sequence starts empty.
async fn clear<S: Store>(store: &S) {
    let mut cursor = None;
    loop {
        let page = store.scan("mb:", cursor.take(), 1_000).await.unwrap();
        if !page.keys.is_empty() {
            let mut b = Batch::new();
            for k in &page.keys {
                b.delete(k.as_str());
            }
            assert!(store.commit(b).await.unwrap().is_applied());
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => return,
        }
    }
}

/// How close to its expiry a lease may get, on the real clock, before the
/// model can no longer tell whether the store still has it. A lease's
/// deadline is the earliest the store can expire it, and a step is judged
/// after it ran against the deadlines of the leases it started with, so the
/// margin only spares checks that would meet an expiry; it need not cover
/// a slow step.
const MARGIN_MS: u64 = 100;

/// What running a sequence showed.
#[derive(Debug, PartialEq, Eq)]
pub enum Ran {
    /// Every step matched the model.
    Matched,
    /// Where time passes for real, the steps took so long that a lease came
    /// within `MARGIN_MS` of its expiry without a pass: the store may
    /// rightly have dropped it, so the rest of the sequence cannot be
    /// judged.
    TooSlow,
}

/// Runs one sequence from an empty store, checking after every step.
pub async fn run_sequence<H: Harness>(h: &H, sequence: &[Step]) -> Ran {
    let store = h.store();
    let real_time = real_time(&store);
    clear(&store).await;
    let from = feed::start(&store).await;
    let repos = Repos {
        items: entities::ItemRepo::new(store.clone()),
        leases: entities::LeaseRepo::new(store.clone()),
        entries: entities::EntryRepo::new(store.clone()),
    };
    let mut model = Model {
        feeds: store.keeps_feeds(),
        real_time,
        ..Model::default()
    };
    for (i, step) in sequence.iter().enumerate() {
        let before = model.deadlines();
        let ran = catch(async {
            model.step_started = Some(std::time::Instant::now());
            steps::run(h, &repos, &mut model, step).await;
            if real_time && too_slow(&model, &before) {
                return Ran::TooSlow;
            }
            check::check(&repos, &model).await;
            Ran::Matched
        })
        .await;
        match ran {
            Ok(Ran::Matched) => {}
            Ok(Ran::TooSlow) => return Ran::TooSlow,
            // A step or check that failed while a lease neared its expiry
            // may have met the store's rightful expiry.
            Err(_) if real_time && too_slow(&model, &before) => return Ran::TooSlow,
            Err(msg) => panic!("step {i} ({step:?}): {msg}"),
        }
    }
    check::verify(&repos).await;
    feed::check_feed(&repos, &model, from).await;
    Ran::Matched
}

/// Whether time passes for real on `store` (no injected clock).
fn real_time<S: Store>(store: &S) -> bool {
    matches!(store.backend(), "redis" | "redis-cluster")
}

/// Whether a lease came within `MARGIN_MS` of its expiry without a pass
/// ending it in the model: one the model holds, or one it held as the step
/// started (`before`) that the step wrote again or deleted, and that the
/// store may have met expired.
fn too_slow(model: &Model, before: &[(String, std::time::Instant)]) -> bool {
    let near = std::time::Instant::now() + std::time::Duration::from_millis(MARGIN_MS);
    too_old(model)
        || before
            .iter()
            .any(|(id, deadline)| *deadline < near && !model.pending.contains_key(id))
}

fn too_old(model: &Model) -> bool {
    model
        .nearest_expiry()
        .is_some_and(|left| left < std::time::Duration::from_millis(MARGIN_MS))
}

fn env(name: &str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}")),
    )
}

/// Draws sequences and runs each on `h`'s store; on failure, proptest
/// shrinks the sequence and the panic names the smallest it found.
async fn repositories_follow_the_model<H: Harness>(h: &H) {
    let backend = h.store().backend();
    let real_time = real_time(&h.store());
    let long = kvmodel::conformance::long_run();
    let default_cases = match (backend, long) {
        ("memory", true) => 256,
        ("memory", false) => 64,
        ("redis" | "redis-cluster" | "dynamodb", true) => 12,
        ("redis" | "redis-cluster" | "dynamodb", false) => 4,
        (_, true) => 64,
        (_, false) => 16,
    };
    let cases = env("KVMODEL_MODEL_CASES").unwrap_or(default_cases);
    let steps = env("KVMODEL_MODEL_STEPS").unwrap_or(if real_time { 16 } else { 24 });
    let strategy = proptest::collection::vec(steps::step(), 1..=steps.max(1));
    let mut runner = TestRunner::new(Config {
        cases: u32::try_from(cases).unwrap_or(u32::MAX),
        failure_persistence: None,
        // Each shrinking step replays a sequence; on Redis it sleeps.
        max_shrink_iters: if real_time { 200 } else { 2_000 },
        // A sequence too slow to judge (`Ran::TooSlow`) is drawn again; so
        // many that the cases could not be judged fail the test.
        max_global_rejects: u32::try_from(cases).unwrap_or(u32::MAX),
        ..Config::default()
    });
    let handle = tokio::runtime::Handle::current();
    let result = tokio::task::block_in_place(|| {
        runner.run(&strategy, |sequence| {
            let sequence = real_time_steps(sequence, real_time);
            match handle.block_on(async { run_checked(h, &sequence).await }) {
                Ok(Ran::Matched) => Ok(()),
                Ok(Ran::TooSlow) => {
                    Err(TestCaseError::reject("the steps outlasted a lease's life"))
                }
                Err(msg) => Err(TestCaseError::fail(msg)),
            }
        })
    });
    if let Err(e) = result {
        panic!("{} sequence failed: {e}", h.store().backend());
    }
}

/// Where time passes for real, only long passes are taken: a short one
/// would let a lease expire a few milliseconds early or late for the model.
fn real_time_steps(mut sequence: Vec<Step>, real_time: bool) -> Vec<Step> {
    if real_time {
        sequence.retain(|s| !matches!(s, Step::Pass { long: false }));
    }
    sequence
}

/// Runs a sequence, turning a panic into an error message.
async fn run_checked<H: Harness>(h: &H, sequence: &[Step]) -> Result<Ran, String> {
    catch(run_sequence(h, sequence)).await
}

/// Runs a future that borrows the harness (so it cannot be spawned),
/// turning a panic into its message.
async fn catch<T>(fut: impl std::future::Future<Output = T>) -> Result<T, String> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx)));
        match polled {
            Ok(std::task::Poll::Ready(t)) => std::task::Poll::Ready(Ok(t)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(p) => std::task::Poll::Ready(Err(p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default())),
        }
    })
    .await
}

use regressions::*;

kvmodel_runtime::on_every_backend!(
    repositories_follow_the_model,
    expired_lease_frees_its_token_and_id,
    leases_expire_at_their_own_time,
    unique_values_in_any_case_are_one_claim,
    feed_holds_applied_writes_only,
);

/// The same sequences on a Redis store that keeps delete plans: a delete
/// by its plan leaves what the usual one leaves.
mod redis_delete_plans {
    kvmodel_runtime::__on_backend!(
        kvmodel::conformance::RedisHarness::start_with_delete_plans().await;
        repositories_follow_the_model,
        unique_values_in_any_case_are_one_claim
    );
}

/// A lease the model holds is too old to judge once its real time left
/// comes within `MARGIN_MS` of its expiry, soon or after the `ttl`; a lease
/// the model let expire counts no more, nor one whose expiry is later.
#[test]
fn a_lease_near_its_expiry_cannot_be_judged() {
    use entities::{Life, SOON_MS, TTL_MS};
    use std::time::{Duration, Instant};
    let lease = |id: &str| entities::Lease {
        id: id.into(),
        token: format!("t-{id}"),
        owner: "o1".into(),
        rank: 0,
        weight: 1,
        ends: Life::Soon.ends(0, SOON_MS),
    };
    let mut m = Model {
        step_started: Some(Instant::now()),
        ..Model::default()
    };
    m.put_lease(lease("a"), Some(Life::Later));
    assert!(!too_old(&m), "a later expiry is far");
    m.put_lease(lease("b"), Some(Life::Ttl));
    assert!(!too_old(&m));
    let near = TTL_MS - MARGIN_MS + 50;
    m.step_started = Some(Instant::now() - Duration::from_millis(near));
    m.put_lease(lease("b"), Some(Life::Ttl));
    assert!(too_old(&m), "the ttl comes near");
    m.step_started = Some(Instant::now());
    m.put_lease(lease("b"), Some(Life::Soon));
    assert!(!too_old(&m));
    // `modify` leaving the expiry keeps the lease's deadline.
    m.step_started = Some(Instant::now() + Duration::from_millis(SOON_MS));
    m.put_lease(lease("b"), None);
    assert!(!too_old(&m));
    m.step_started = Some(Instant::now() - Duration::from_millis(near));
    m.put_lease(lease("c"), Some(Life::Soon));
    assert!(too_old(&m), "a soon expiry comes near");
    m.pass(SOON_MS);
    assert_eq!(m.leases.keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(m.pending.keys().collect::<Vec<_>>(), ["b", "c"]);
    assert!(!too_old(&m), "an expired lease is judged by the model");
    assert_eq!(m.lease_bounds(|_| Some(1)), (1, 3));
    m.swept();
    assert_eq!(m.lease_bounds(|_| Some(1)), (1, 1));
}
