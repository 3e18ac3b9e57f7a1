//! A generated repository against the code a careful engineer would write by
//! hand for the same key layout on the same store: create (unique claim,
//! ordered member, group counter, discovery member), get, find by the unique
//! index, a page of 10 from the ordered index, delete.
//!
//! Run: `cargo bench -p kvmodel --bench repo`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kvmodel::{
    Batch, Error, KvEntity, KvEnum, MemoryStore, Outcome, PageRequest, RangeRequest, RedbStore,
    Store, Timestamp,
};
use kvmodel_runtime::__private::{Derived, Encoding, KeyBuilder, key::sort_key, record};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KvEnum)]
#[serde(rename_all = "snake_case")]
enum Status {
    Active,
    Inactive,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "bench", key = "user:{id}")]
#[kv(index(name = "by_status", fields(status), order_by = created_at))]
#[kv(counter(name = "by_status", group_by(status)))]
struct User {
    id: String,
    #[kv(unique)]
    email: String,
    name: String,
    status: Status,
    created_at: Timestamp,
}

fn user(i: u64) -> User {
    User {
        id: format!("u{i}"),
        email: format!("u{i}@example.com"),
        name: "Ada Lovelace".into(),
        status: Status::Active,
        created_at: Timestamp::from_unix_millis(1_700_000_000_000 + i as i64)
            .expect("a 2023 instant"),
    }
}

/// The same operations, written by hand against the store.
mod hand {
    use super::*;

    pub fn user_key(id: &str) -> String {
        KeyBuilder::new("bench").lit("user").part(id).finish()
    }
    fn email_key(email: &str) -> String {
        KeyBuilder::derived("bench", "user", Derived::Claim)
            .lit("by_email")
            .part(email)
            .finish()
    }
    pub fn status_key(s: Status) -> String {
        KeyBuilder::derived("bench", "user", Derived::Index)
            .lit("by_status")
            .part(&s)
            .finish()
    }
    fn count_key(s: Status) -> String {
        KeyBuilder::derived("bench", "user", Derived::Counter)
            .lit("by_status")
            .part(&s)
            .finish()
    }
    fn all_key() -> String {
        KeyBuilder::derived("bench", "user", Derived::Discovery).finish()
    }

    fn decode(key: &str, bytes: &[u8]) -> kvmodel::Result<User> {
        let h = record::header(key, bytes)?;
        if h.version != 1 {
            return Err(Error::FutureVersion {
                key: key.into(),
                found: h.version,
                supported: 1,
            });
        }
        record::decode_current(key, bytes)
    }

    pub async fn create<S: Store>(s: &S, u: &User) -> kvmodel::Result<()> {
        let key = user_key(&u.id);
        let owner = key.clone().into_bytes();
        let claim = email_key(&u.email);
        let mut b = Batch::new();
        b.absent(&key)
            .absent_or_equals(&claim, owner.clone())
            .put(&key, record::encode(&key, Encoding::Json, 1, u)?, None)
            .put(&claim, owner.clone(), None)
            .add(status_key(u.status), sort_key(&u.created_at), owner.clone())
            .incr(count_key(u.status), 1)
            .add(all_key(), Vec::new(), owner);
        match s.commit(b).await? {
            Outcome::Applied => Ok(()),
            Outcome::Failed { index: 0 } => Err(Error::AlreadyExists {
                entity: "User",
                key,
            }),
            Outcome::Failed { .. } => Err(Error::UniqueViolation {
                entity: "User",
                index: "by_email",
                value: u.email.clone(),
            }),
        }
    }

    pub async fn get<S: Store>(s: &S, id: &str) -> kvmodel::Result<Option<User>> {
        let key = user_key(id);
        s.get(&key).await?.map(|b| decode(&key, &b)).transpose()
    }

    pub async fn find_by_email<S: Store>(s: &S, email: &str) -> kvmodel::Result<Option<User>> {
        let Some(owner) = s.get(&email_key(email)).await? else {
            return Ok(None);
        };
        let key = String::from_utf8(owner).map_err(|_| Error::decode(email, "bad claim", None))?;
        s.get(&key).await?.map(|b| decode(&key, &b)).transpose()
    }

    pub async fn page<S: Store>(s: &S, status: Status, limit: usize) -> kvmodel::Result<Vec<User>> {
        let r = s
            .range(&status_key(status), RangeRequest::all(limit))
            .await?;
        let keys: Vec<String> = r
            .members
            .iter()
            .map(|m| String::from_utf8_lossy(&m.member).into_owned())
            .collect();
        let values = s.get_many(&keys).await?;
        keys.iter()
            .zip(values)
            .filter_map(|(k, v)| v.map(|b| decode(k, &b)))
            .collect()
    }

    pub async fn delete<S: Store>(s: &S, id: &str) -> kvmodel::Result<bool> {
        let key = user_key(id);
        let Some(bytes) = s.get(&key).await? else {
            return Ok(false);
        };
        let u = decode(&key, &bytes)?;
        let owner = key.clone().into_bytes();
        let mut b = Batch::new();
        b.equals(&key, bytes)
            .delete(&key)
            .delete(email_key(&u.email))
            .remove(status_key(u.status), sort_key(&u.created_at), owner.clone())
            .incr(count_key(u.status), -1)
            .remove(all_key(), Vec::new(), owner);
        Ok(s.commit(b).await?.is_applied())
    }
}

static NEXT: AtomicU64 = AtomicU64::new(1_000_000);

/// `fresh`, when given, makes a new empty store for every timed create, so
/// that the growth of one shared in-memory map (rehashing) does not land on
/// whichever variant runs second.
fn bench_store<S: Store>(
    c: &mut Criterion,
    name: &str,
    store: S,
    rt: &tokio::runtime::Runtime,
    slow: bool,
    fresh: Option<fn() -> S>,
) {
    let repo = UserRepo::new(store.clone());
    rt.block_on(async {
        for i in 0..200 {
            repo.create(&user(i)).await.unwrap();
        }
    });
    let mut g = c.benchmark_group(format!("repo_{name}"));
    if slow {
        g.sample_size(20).measurement_time(Duration::from_secs(4));
    }
    match fresh {
        Some(fresh) => {
            g.bench_function("create/generated", |b| {
                b.iter_batched(
                    || UserRepo::new(fresh()),
                    |r| {
                        rt.block_on(r.create(&user(NEXT.fetch_add(1, Ordering::Relaxed))))
                            .unwrap()
                    },
                    BatchSize::PerIteration,
                )
            });
            g.bench_function("create/hand", |b| {
                b.iter_batched(
                    fresh,
                    |s| {
                        rt.block_on(hand::create(
                            &s,
                            &user(NEXT.fetch_add(1, Ordering::Relaxed)),
                        ))
                        .unwrap()
                    },
                    BatchSize::PerIteration,
                )
            });
        }
        None => {
            g.bench_function("create/generated", |b| {
                b.iter(|| {
                    rt.block_on(repo.create(&user(NEXT.fetch_add(1, Ordering::Relaxed))))
                        .unwrap()
                })
            });
            g.bench_function("create/hand", |b| {
                b.iter(|| {
                    rt.block_on(hand::create(
                        &store,
                        &user(NEXT.fetch_add(1, Ordering::Relaxed)),
                    ))
                    .unwrap()
                })
            });
        }
    }
    g.bench_function("get/generated", |b| {
        b.iter(|| black_box(rt.block_on(repo.get("u42")).unwrap()))
    });
    g.bench_function("get/hand", |b| {
        b.iter(|| black_box(rt.block_on(hand::get(&store, "u42")).unwrap()))
    });
    g.bench_function("find_unique/generated", |b| {
        b.iter(|| black_box(rt.block_on(repo.find_by_email("u42@example.com")).unwrap()))
    });
    g.bench_function("find_unique/hand", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(hand::find_by_email(&store, "u42@example.com"))
                    .unwrap(),
            )
        })
    });
    g.bench_function("page10/generated", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(repo.list_by_status(Status::Active, PageRequest::new(10)))
                    .unwrap(),
            )
        })
    });
    g.bench_function("page10/hand", |b| {
        b.iter(|| black_box(rt.block_on(hand::page(&store, Status::Active, 10)).unwrap()))
    });
    // Deletes need records to delete: create them untimed, then time the deletes.
    let (repo, store) = (&repo, &store);
    let timed_deletes = |generated: bool| {
        move |b: &mut criterion::Bencher<'_>| {
            b.iter_custom(|iters| {
                let ids: Vec<u64> = (0..iters)
                    .map(|_| NEXT.fetch_add(1, Ordering::Relaxed))
                    .collect();
                rt.block_on(async {
                    for i in &ids {
                        repo.create(&user(*i)).await.unwrap();
                    }
                });
                let start = Instant::now();
                rt.block_on(async {
                    for i in &ids {
                        let id = format!("u{i}");
                        let ok = if generated {
                            repo.delete(&id).await.unwrap()
                        } else {
                            hand::delete(store, &id).await.unwrap()
                        };
                        assert!(ok);
                    }
                });
                start.elapsed()
            })
        }
    };
    g.bench_function("delete/generated", timed_deletes(true));
    g.bench_function("delete/hand", timed_deletes(false));
    g.finish();
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    bench_store(
        c,
        "memory",
        MemoryStore::new(),
        &rt,
        false,
        Some(MemoryStore::new),
    );
    let dir = tempfile::tempdir().unwrap();
    bench_store(
        c,
        "redb",
        RedbStore::open(dir.path().join("bench.redb")).unwrap(),
        &rt,
        true,
        None,
    );
    let server = kvmodel::conformance::RedisServer::start();
    let redis = rt
        .block_on(kvmodel::RedisStore::connect(&server.url()))
        .unwrap();
    bench_store(c, "redis", redis, &rt, false, None);
}

criterion_group!(group, benches);
criterion_main!(group);
