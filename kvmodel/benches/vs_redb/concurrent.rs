//! Concurrent creates: `N` accounts (`KV_BENCH_CONCURRENT_N`, 4,000)
//! created by `W` writers at once, for each `W` in 1, 8, 32 and 128
//! (`KV_BENCH_WRITERS`), on each side:
//!
//! - kvmodel: `W` tokio tasks on a multi-thread runtime, each calling
//!   `repo.create` for its share of the accounts, one after the other;
//! - raw redb: `W` OS threads, each running `raw::insert` (one durable
//!   `begin_write` … `commit`, which redb runs one at a time) for its share.
//!
//! Writer `i` creates the accounts whose id is `i` modulo `W`. Every run
//! starts on a fresh database file (the raw side opens it with
//! `Database::create`, as `RedbStore` does), so no run inherits another's
//! pages; opening it and creating the tables are not timed. Each `W` runs
//! `KV_BENCH_CONCURRENT_ROUNDS` rounds (4), alternating which side goes
//! first; the table reports each side's median creates per second and the
//! median of the per-round ratios kvmodel / raw (of throughputs: above 1×,
//! kvmodel creates more per second).

use std::time::{Duration, Instant};

use kvmodel::RedbStore;
use redb::Database;

use super::{Account, AccountRepo, PLANS, account, env, median, raw};

/// The name the first-argument filter matches.
pub const NAME: &str = "concurrent creates";

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Kvmodel,
    Raw,
}

/// The accounts `0..n`, dealt to `writers` writers: writer `i` gets the
/// ids equal to `i` modulo `writers`.
fn deal(n: usize, writers: usize) -> Vec<Vec<Account>> {
    let mut parts: Vec<Vec<Account>> = (0..writers)
        .map(|_| Vec::with_capacity(n / writers + 1))
        .collect();
    for id in 0..n {
        parts[id % writers].push(account(id as u64));
    }
    parts
}

/// `n` creates from `writers` tokio tasks through the repository, on a
/// fresh file; returns the wall time from the first spawn to the last
/// task's end.
fn run_kvmodel(rt: &tokio::runtime::Runtime, n: usize, writers: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let repo = AccountRepo::new(RedbStore::open(dir.path().join("kvmodel.redb")).unwrap());
    let parts = deal(n, writers);
    let start = Instant::now();
    let tasks: Vec<_> = parts
        .into_iter()
        .map(|part| {
            let repo = repo.clone();
            rt.spawn(async move {
                for a in &part {
                    repo.create(a).await.unwrap();
                }
            })
        })
        .collect();
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });
    let elapsed = start.elapsed();
    assert_eq!(
        rt.block_on(repo.count_total()).unwrap(),
        n as i64,
        "kvmodel, {writers} writers"
    );
    elapsed
}

/// `n` creates from `writers` OS threads through the hand-written code, on
/// a fresh file; returns the wall time from the first spawn to the last
/// thread's end.
fn run_raw(n: usize, writers: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("raw.redb")).unwrap();
    raw::create_tables(&db).unwrap();
    let parts = deal(n, writers);
    let start = Instant::now();
    std::thread::scope(|s| {
        for part in &parts {
            let db = &db;
            s.spawn(move || {
                for a in part {
                    raw::insert(db, a).unwrap().unwrap();
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let total: i64 = PLANS.iter().map(|&p| raw::count(&db, p).unwrap()).sum();
    assert_eq!(total, n as i64, "raw redb, {writers} writers");
    elapsed
}

/// Runs the group and prints its table.
pub fn run() {
    let n = env("KV_BENCH_CONCURRENT_N", 4_000);
    let rounds = env("KV_BENCH_CONCURRENT_ROUNDS", 4).max(1);
    let writers: Vec<usize> = std::env::var("KV_BENCH_WRITERS")
        .unwrap_or_else(|_| "1,8,32,128".to_owned())
        .split(',')
        .map(|w| {
            w.trim()
                .parse()
                .expect("KV_BENCH_WRITERS: numbers, comma-separated")
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    eprintln!(
        "{NAME}: {n} creates per run, {rounds} rounds per writer count, \
         kvmodel on {} tokio workers",
        rt.metrics().num_workers()
    );
    // The first files and threads of the process cost more: warm both
    // sides up, untimed.
    run_kvmodel(&rt, n.min(400), 8);
    run_raw(n.min(400), 8);
    println!("\n| {NAME}, writers | raw redb, creates/s | kvmodel, creates/s | kvmodel / raw |");
    println!("|---|---|---|---|");
    for &w in &writers {
        let (mut kv_rates, mut raw_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let order = if r % 2 == 0 {
                [Side::Kvmodel, Side::Raw]
            } else {
                [Side::Raw, Side::Kvmodel]
            };
            let (mut kv, mut rw) = (0.0, 0.0);
            for side in order {
                match side {
                    Side::Kvmodel => kv = n as f64 / run_kvmodel(&rt, n, w).as_secs_f64(),
                    Side::Raw => rw = n as f64 / run_raw(n, w).as_secs_f64(),
                }
            }
            eprintln!(
                "  {w} writers, round {r}: raw {rw:.0}/s, kvmodel {kv:.0}/s, {:.2}×",
                kv / rw
            );
            kv_rates.push(kv);
            raw_rates.push(rw);
            ratios.push(kv / rw);
        }
        println!(
            "| {w} | {:.0} | {:.0} | {:.2}× |",
            median(raw_rates),
            median(kv_rates),
            median(ratios)
        );
    }
}
