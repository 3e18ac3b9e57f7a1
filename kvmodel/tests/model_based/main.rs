//! A model-based test of generated repositories: random sequences of
//! create, update, upsert, modify and delete on a lasting and an expiring
//! entity, store time passing (on an injected clock where the store has
//! one), and concurrent writers, checked after every step against a plain
//! in-memory model (records, unique lookups, every listing page by page in
//! both directions, counters, the number of records); after every sequence
//! `verify` is clean. On the in-memory, redb, Redis and Redis Cluster
//! stores.
//!
//! `KVMODEL_MODEL_CASES` sets the number of sequences per store (by
//! default 256 on memory, 64 on redb, 12 on Redis and Redis Cluster, where
//! time passes for real);
//! `KVMODEL_MODEL_STEPS` the longest sequence (default 24; 16 on Redis and
//! Redis Cluster).
//! A failure prints the shrunk sequence; it becomes a case in
//! `regressions.rs`.

mod check;
mod entities;
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

/// Runs one sequence from an empty store, checking after every step.
pub async fn run_sequence<H: Harness>(h: &H, sequence: &[Step]) {
    let store = h.store();
    clear(&store).await;
    let repos = Repos {
        items: entities::ItemRepo::new(store.clone()),
        leases: entities::LeaseRepo::new(store.clone()),
    };
    let mut model = Model::default();
    for (i, step) in sequence.iter().enumerate() {
        let ran = catch(async {
            steps::run(h, &repos, &mut model, step).await;
            check::check(&repos, &model).await;
        })
        .await;
        if let Err(msg) = ran {
            panic!("step {i} ({step:?}): {msg}");
        }
    }
    check::verify(&repos).await;
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
    let real_time = backend == "redis" || backend == "redis-cluster";
    let default_cases = match backend {
        "memory" => 256,
        "redis" | "redis-cluster" => 12,
        _ => 64,
    };
    let cases = env("KVMODEL_MODEL_CASES").unwrap_or(default_cases);
    let steps = env("KVMODEL_MODEL_STEPS").unwrap_or(if real_time { 16 } else { 24 });
    let strategy = proptest::collection::vec(steps::step(), 1..=steps.max(1));
    let mut runner = TestRunner::new(Config {
        cases: u32::try_from(cases).unwrap_or(u32::MAX),
        failure_persistence: None,
        // Each shrinking step replays a sequence; on Redis it sleeps.
        max_shrink_iters: if real_time { 200 } else { 2_000 },
        ..Config::default()
    });
    let handle = tokio::runtime::Handle::current();
    let result = tokio::task::block_in_place(|| {
        runner.run(&strategy, |sequence| {
            let sequence = real_time_steps(sequence, real_time);
            handle
                .block_on(async { run_checked(h, &sequence).await })
                .map_err(TestCaseError::fail)
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
async fn run_checked<H: Harness>(h: &H, sequence: &[Step]) -> Result<(), String> {
    catch(run_sequence(h, sequence)).await
}

/// Runs a future that borrows the harness (so it cannot be spawned),
/// turning a panic into its message.
async fn catch(fut: impl std::future::Future<Output = ()>) -> Result<(), String> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx)));
        match polled {
            Ok(std::task::Poll::Ready(())) => std::task::Poll::Ready(Ok(())),
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
    unique_values_in_any_case_are_one_claim,
);
