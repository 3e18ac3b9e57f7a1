//! kvmodel (RedbStore, redb 4) against native_db 0.8.2 (redb 2) for the same
//! entity: a primary key, one unique and one non-unique secondary key.
//! Both commit each write in its own durable redb write transaction.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
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

criterion_group!(benches, bench);
criterion_main!(benches);
