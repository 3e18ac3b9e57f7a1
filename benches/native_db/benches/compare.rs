//! kvmodel (RedbStore, redb 4) against native_db 0.8.2 (redb 2) for the same
//! entity: a primary key, one unique and one non-unique secondary key.
//! Both commit each write in its own durable redb write transaction.
//!
//! After criterion's rows, concurrent creates (`concurrent creates`): `N`
//! items (`KV_BENCH_CONCURRENT_N`, 4,000) created by `W` writers at once, for
//! each `W` in 1, 8, 32 and 128 (`KV_BENCH_WRITERS`): through kvmodel's
//! repository from `W` tokio tasks on a multi-thread runtime, and through
//! native_db from `W` OS threads, each insert its own `rw_transaction` and
//! `commit`. Writer `i` creates the ids equal to `i` modulo `W`; every run
//! starts on a fresh file (opening it is not timed); each `W` runs
//! `KV_BENCH_CONCURRENT_ROUNDS` rounds (4), alternating which side goes first,
//! and the table reports each side's median creates per second and the median
//! of the per-round ratios kvmodel / native_db (of throughputs). The first
//! argument `concurrent` runs these rows alone.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use kvmodel::{KvEntity, RedbStore};
use native_db::{Builder, Models, ToKey, native_db};
use native_model::{Model, native_model};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "b", key = "item:{id}")]
#[kv(index(name = "by_group", fields(group)))]
pub struct Item {
    pub id: u32,
    #[kv(unique)]
    pub email: String,
    pub group: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[native_model(id = 1, version = 1)]
#[native_db]
pub struct NItem {
    #[primary_key]
    pub id: u32,
    #[secondary_key(unique)]
    pub email: String,
    #[secondary_key]
    pub group: String,
    pub name: String,
}

fn item(i: u32) -> Item {
    Item { id: i, email: format!("user{i}@example.com"), group: format!("g{}", i % 10), name: "Ada Lovelace".into() }
}

fn nitem(i: u32) -> NItem {
    let it = item(i);
    NItem { id: it.id, email: it.email, group: it.group, name: it.name }
}

static NEXT: AtomicU32 = AtomicU32::new(1_000);

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();

    let repo = ItemRepo::new(RedbStore::open(dir.path().join("kvmodel.redb")).unwrap());
    let mut models = Models::new();
    models.define::<NItem>().unwrap();
    let ndb = Builder::new().create(&models, dir.path().join("native.redb")).unwrap();
    rt.block_on(async {
        for i in 0..100 {
            repo.create(&item(i)).await.unwrap();
        }
    });
    let rw = ndb.rw_transaction().unwrap();
    for i in 0..100 {
        rw.insert(nitem(i)).unwrap();
    }
    rw.commit().unwrap();

    let mut g = c.benchmark_group("vs_native_db");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    g.bench_function("insert/kvmodel", |b| {
        b.iter(|| rt.block_on(repo.create(&item(NEXT.fetch_add(1, Ordering::Relaxed)))).unwrap())
    });
    g.bench_function("insert/native_db", |b| {
        b.iter(|| {
            let rw = ndb.rw_transaction().unwrap();
            rw.insert(nitem(NEXT.fetch_add(1, Ordering::Relaxed))).unwrap();
            rw.commit().unwrap();
        })
    });
    g.bench_function("get_primary/kvmodel", |b| b.iter(|| black_box(rt.block_on(repo.get(black_box(42))).unwrap())));
    g.bench_function("get_primary/native_db", |b| {
        b.iter(|| {
            let r = ndb.r_transaction().unwrap();
            black_box(r.get().primary::<NItem>(black_box(42u32)).unwrap())
        })
    });
    g.bench_function("get_unique/kvmodel", |b| {
        b.iter(|| black_box(rt.block_on(repo.find_by_email(black_box("user42@example.com"))).unwrap()))
    });
    g.bench_function("get_unique/native_db", |b| {
        b.iter(|| {
            let r = ndb.r_transaction().unwrap();
            black_box(r.get().secondary::<NItem>(NItemKey::email, black_box("user42@example.com")).unwrap())
        })
    });
    g.bench_function("delete/kvmodel", |b| {
        b.iter_custom(|iters| {
            let ids: Vec<u32> = (0..iters).map(|_| NEXT.fetch_add(1, Ordering::Relaxed)).collect();
            rt.block_on(async {
                for i in &ids {
                    repo.create(&item(*i)).await.unwrap();
                }
            });
            let start = Instant::now();
            for i in &ids {
                assert!(rt.block_on(repo.delete(*i)).unwrap());
            }
            start.elapsed()
        })
    });
    g.bench_function("delete/native_db", |b| {
        b.iter_custom(|iters| {
            let ids: Vec<u32> = (0..iters).map(|_| NEXT.fetch_add(1, Ordering::Relaxed)).collect();
            let rw = ndb.rw_transaction().unwrap();
            for i in &ids {
                rw.insert(nitem(*i)).unwrap();
            }
            rw.commit().unwrap();
            let start = Instant::now();
            for i in &ids {
                // Like kvmodel's delete: read the record by key, then remove it.
                let rw = ndb.rw_transaction().unwrap();
                let it: NItem = rw.get().primary(*i).unwrap().unwrap();
                rw.remove(it).unwrap();
                rw.commit().unwrap();
            }
            start.elapsed()
        })
    });
    g.finish();
    let _ = ToKey::to_key(&0u32);
}

/// The name the first-argument filter matches.
const CONCURRENT: &str = "concurrent creates";

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 }
}

/// The ids `0..n` dealt to `writers` writers: writer `i` gets those equal to
/// `i` modulo `writers`.
fn deal(n: u32, writers: u32) -> Vec<Vec<u32>> {
    (0..writers).map(|w| (w..n).step_by(writers as usize).collect()).collect()
}

/// `n` creates from `writers` tokio tasks through kvmodel's repository, on a
/// fresh file: the wall time from the first spawn to the last task's end.
fn concurrent_kvmodel(rt: &tokio::runtime::Runtime, n: u32, writers: u32) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let repo = ItemRepo::new(RedbStore::open(dir.path().join("kvmodel.redb")).unwrap());
    let parts = deal(n, writers);
    let start = Instant::now();
    let tasks: Vec<_> = parts
        .into_iter()
        .map(|ids| {
            let repo = repo.clone();
            rt.spawn(async move {
                for i in ids {
                    repo.create(&item(i)).await.unwrap();
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
    rt.block_on(async {
        for i in 0..n {
            assert!(repo.get(i).await.unwrap().is_some(), "kvmodel, {writers} writers: {i}");
        }
    });
    elapsed
}

/// `n` creates from `writers` OS threads through native_db, each in its own
/// write transaction, on a fresh file: the wall time from the first spawn to
/// the last thread's end.
fn concurrent_native_db(n: u32, writers: u32) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mut models = Models::new();
    models.define::<NItem>().unwrap();
    let ndb = Builder::new().create(&models, dir.path().join("native.redb")).unwrap();
    let parts = deal(n, writers);
    let start = Instant::now();
    std::thread::scope(|s| {
        for ids in &parts {
            let ndb = &ndb;
            s.spawn(move || {
                for &i in ids {
                    let rw = ndb.rw_transaction().unwrap();
                    rw.insert(nitem(i)).unwrap();
                    rw.commit().unwrap();
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let len = ndb.r_transaction().unwrap().len().primary::<NItem>().unwrap();
    assert_eq!(len, u64::from(n), "native_db, {writers} writers");
    elapsed
}

fn concurrent() {
    let n = env("KV_BENCH_CONCURRENT_N", 4_000) as u32;
    let rounds = env("KV_BENCH_CONCURRENT_ROUNDS", 4).max(1);
    let writers: Vec<u32> = std::env::var("KV_BENCH_WRITERS")
        .unwrap_or_else(|_| "1,8,32,128".to_owned())
        .split(',')
        .map(|w| w.trim().parse().expect("KV_BENCH_WRITERS: numbers, comma-separated"))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    eprintln!(
        "{CONCURRENT}: {n} creates per run, {rounds} rounds per writer count, kvmodel on {} tokio workers",
        rt.metrics().num_workers()
    );
    // The first files and threads of the process cost more: warm both sides
    // up, untimed.
    concurrent_kvmodel(&rt, n.min(400), 8);
    concurrent_native_db(n.min(400), 8);
    println!("\n| {CONCURRENT}, writers | native_db, creates/s | kvmodel, creates/s | kvmodel / native_db |");
    println!("|---|---|---|---|");
    for &w in &writers {
        let (mut kv_rates, mut ndb_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let (kv, ndb) = if r % 2 == 0 {
                let kv = concurrent_kvmodel(&rt, n, w);
                (kv, concurrent_native_db(n, w))
            } else {
                let ndb = concurrent_native_db(n, w);
                (concurrent_kvmodel(&rt, n, w), ndb)
            };
            let (kv, ndb) = (f64::from(n) / kv.as_secs_f64(), f64::from(n) / ndb.as_secs_f64());
            eprintln!("  {w} writers, round {r}: native_db {ndb:.0}/s, kvmodel {kv:.0}/s, {:.2}×", kv / ndb);
            kv_rates.push(kv);
            ndb_rates.push(ndb);
            ratios.push(kv / ndb);
        }
        println!("| {w} | {:.0} | {:.0} | {:.2}× |", median(ndb_rates), median(kv_rates), median(ratios));
    }
}

criterion_group!(benches, bench);

fn main() {
    // Criterion's rows unless the first argument names only the concurrent
    // ones; the concurrent rows unless it names others.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let concurrent_only = !filter.is_empty() && CONCURRENT.contains(filter.as_str());
    if !concurrent_only {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    if CONCURRENT.contains(filter.as_str()) {
        concurrent();
    }
}
