//! `compress`: a realistic 40 KB JSON record (a post with its text and
//! nested comments, generated deterministically from a word list) stored
//! as it is, lz4-compressed and zstd-compressed.
//!
//! Prints the stored size of each form once, then measures with criterion:
//! - `encode/…`, `decode/…`: the record to stored bytes and back
//!   (envelope, compression, serde), no store;
//! - `redb create+get/…`: a generated repository on `RedbStore` creating a
//!   new post (one durable write transaction) and reading it back;
//! - `redb create+get/raw lz4`: the same through code written directly on
//!   redb: `serde_json` + lz4 + one table in the same database file, the
//!   same compressed bytes the repository stores.
//!
//! Run: `cargo bench -p kvmodel --bench compress --features zstd`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use kvmodel::{KvEntity, RedbStore};
use kvmodel_runtime::__private::entity;
use redb::{ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Comment {
    id: u64,
    author: String,
    at: String,
    text: String,
    likes: u32,
    replies: Vec<Comment>,
}

macro_rules! post {
    ($name:ident $(, $storage:meta)?) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
        #[kv(namespace = "bench", key = "post:{id}" $(, $storage)?)]
        struct $name {
            id: String,
            author_id: String,
            title: String,
            tags: Vec<String>,
            body: String,
            comments: Vec<Comment>,
        }
    };
}

post!(Plain);
post!(Lz4Post, compress(codec = "lz4", above = "1KiB"));
post!(ZstdPost, compress(codec = "zstd", above = "1KiB"));

const WORDS: &[&str] = &[
    "store",
    "record",
    "key",
    "value",
    "index",
    "counter",
    "relation",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "write",
    "read",
    "commit",
    "page",
    "cluster",
    "slot",
    "redis",
    "embedded",
    "schema",
    "field",
    "version",
    "migration",
    "listing",
    "author",
    "post",
    "comment",
    "because",
    "every",
    "which",
    "never",
    "always",
    "latency",
    "throughput",
    "compression",
    "reader",
];

/// A deterministic stream of words (a linear congruential generator).
struct Prose(u64);

impl Prose {
    fn word(&mut self) -> &'static str {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        WORDS[(self.0 >> 33) as usize % WORDS.len()]
    }

    fn sentence(&mut self, words: usize) -> String {
        let s: Vec<&str> = (0..words).map(|_| self.word()).collect();
        let mut out = s.join(" ");
        out.push('.');
        out
    }
}

fn comments(p: &mut Prose, n: usize, depth: u32, next: &mut u64) -> Vec<Comment> {
    (0..n)
        .map(|i| {
            *next += 1;
            Comment {
                id: *next,
                author: format!("user{}", (*next * 7919) % 1000),
                at: format!(
                    "2026-03-{:02}T{:02}:{:02}:00Z",
                    1 + i % 28,
                    i % 24,
                    (i * 7) % 60
                ),
                text: (0..2).map(|_| p.sentence(14)).collect::<Vec<_>>().join(" "),
                likes: (*next * 31 % 97) as u32,
                replies: if depth > 0 {
                    comments(p, 2, depth - 1, next)
                } else {
                    Vec::new()
                },
            }
        })
        .collect()
}

/// The post of about 40 KB of JSON: a 12 KB body and 16 comments, each
/// with two levels of two replies (112 comments in all).
fn post(id: &str) -> Plain {
    let mut p = Prose(42);
    let body = (0..90)
        .map(|_| p.sentence(18))
        .collect::<Vec<_>>()
        .join(" ");
    let mut next = 0;
    Plain {
        id: id.to_owned(),
        author_id: "ada".to_owned(),
        title: p.sentence(8),
        tags: (0..6).map(|_| p.word().to_owned()).collect(),
        body,
        comments: comments(&mut p, 16, 2, &mut next),
    }
}

macro_rules! convert {
    ($to:ident) => {
        impl From<&Plain> for $to {
            fn from(p: &Plain) -> Self {
                $to {
                    id: p.id.clone(),
                    author_id: p.author_id.clone(),
                    title: p.title.clone(),
                    tags: p.tags.clone(),
                    body: p.body.clone(),
                    comments: p.comments.clone(),
                }
            }
        }
    };
}
convert!(Lz4Post);
convert!(ZstdPost);

const RAW: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("raw_posts");

fn sizes(plain: &Plain) {
    let key = PlainKeys::record(&plain.id);
    let none = entity::encode(&key, plain).unwrap().len();
    let lz4 = entity::encode(&key, &Lz4Post::from(plain)).unwrap().len();
    let zstd = entity::encode(&key, &ZstdPost::from(plain)).unwrap().len();
    let pct = |n: usize| 100.0 * n as f64 / none as f64;
    println!("stored size of the post record:");
    println!("  none {none:>6} B  100.0 %");
    println!(
        "  lz4  {lz4:>6} B  {:5.1} %  ({:.2}× smaller)",
        pct(lz4),
        none as f64 / lz4 as f64
    );
    println!(
        "  zstd {zstd:>6} B  {:5.1} %  ({:.2}× smaller)",
        pct(zstd),
        none as f64 / zstd as f64
    );
}

fn codecs(c: &mut Criterion) {
    let plain = post("p1");
    sizes(&plain);
    let key = PlainKeys::record("p1");
    let (lz4, zstd) = (Lz4Post::from(&plain), ZstdPost::from(&plain));
    let mut g = c.benchmark_group("encode");
    g.bench_function("none", |b| {
        b.iter(|| entity::encode(&key, black_box(&plain)).unwrap())
    });
    g.bench_function("lz4", |b| {
        b.iter(|| entity::encode(&key, black_box(&lz4)).unwrap())
    });
    g.bench_function("zstd", |b| {
        b.iter(|| entity::encode(&key, black_box(&zstd)).unwrap())
    });
    g.finish();
    let bytes = [
        entity::encode(&key, &plain).unwrap(),
        entity::encode(&key, &lz4).unwrap(),
        entity::encode(&key, &zstd).unwrap(),
    ];
    let mut g = c.benchmark_group("decode");
    g.bench_function("none", |b| {
        b.iter(|| entity::decode_at::<Plain>(&key, black_box(&bytes[0])).unwrap())
    });
    g.bench_function("lz4", |b| {
        b.iter(|| entity::decode_at::<Lz4Post>(&key, black_box(&bytes[1])).unwrap())
    });
    g.bench_function("zstd", |b| {
        b.iter(|| entity::decode_at::<ZstdPost>(&key, black_box(&bytes[2])).unwrap())
    });
    g.finish();
}

fn on_redb(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("bench.redb")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let plain = post("p");
    let next = AtomicU64::new(0);
    let fresh = || format!("p{}", next.fetch_add(1, Ordering::Relaxed));
    let mut g = c.benchmark_group("redb create+get");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    let repo = PlainRepo::new(store.clone());
    g.bench_function("none", |b| {
        b.iter(|| {
            let mut p = plain.clone();
            p.id = fresh();
            rt.block_on(repo.create(&p)).unwrap();
            rt.block_on(repo.get(&p.id)).unwrap().unwrap()
        })
    });
    let repo = Lz4PostRepo::new(store.clone());
    let lz4 = Lz4Post::from(&plain);
    g.bench_function("lz4", |b| {
        b.iter(|| {
            let mut p = lz4.clone();
            p.id = fresh();
            rt.block_on(repo.create(&p)).unwrap();
            rt.block_on(repo.get(&p.id)).unwrap().unwrap()
        })
    });
    let repo = ZstdPostRepo::new(store.clone());
    let zstd = ZstdPost::from(&plain);
    g.bench_function("zstd", |b| {
        b.iter(|| {
            let mut p = zstd.clone();
            p.id = fresh();
            rt.block_on(repo.create(&p)).unwrap();
            rt.block_on(repo.get(&p.id)).unwrap().unwrap()
        })
    });
    // Code written directly on redb, storing the same bytes: the JSON
    // envelope, lz4-compressed behind the same header.
    let db = store.__database();
    let w = db.begin_write().unwrap();
    w.open_table(RAW).unwrap();
    w.commit().unwrap();
    g.bench_function("raw lz4", |b| {
        b.iter(|| {
            let mut p = lz4.clone();
            p.id = fresh();
            let key = Lz4PostKeys::record(&p.id);
            let mut json = b"{\"v\":1,\"d\":".to_vec();
            serde_json::to_writer(&mut json, &p).unwrap();
            json.push(b'}');
            let packed = kvmodel_runtime::__private::compress::pack(
                &key,
                kvmodel::__private::Codec::Lz4,
                &json,
            )
            .unwrap();
            let w = db.begin_write().unwrap();
            w.open_table(RAW)
                .unwrap()
                .insert(key.as_str(), packed.as_slice())
                .unwrap();
            w.commit().unwrap();
            let r = db.begin_read().unwrap();
            let t = r.open_table(RAW).unwrap();
            let got = t.get(key.as_str()).unwrap().unwrap();
            let json = kvmodel_runtime::__private::compress::open(&key, got.value())
                .unwrap()
                .into_owned();
            let body = &json[b"{\"v\":1,\"d\":".len()..json.len() - 1];
            serde_json::from_slice::<Lz4Post>(body).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, codecs, on_redb);
criterion_main!(benches);
