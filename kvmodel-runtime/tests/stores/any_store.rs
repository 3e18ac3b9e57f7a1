//! `AnyStore`: the conformance suite over each backend it can hold, and the
//! URLs `AnyStore::open` reads.

use std::time::Duration;

use kvmodel_runtime::conformance::{
    Harness, MemoryHarness, RedbHarness, RedisHarness, RedisServer,
};
use kvmodel_runtime::{AnyStore, Batch, Error, Store};

/// Another harness's store, behind an `AnyStore`.
struct AnyHarness<H>(H);

impl<H: Harness> Harness for AnyHarness<H>
where
    H::Store: Into<AnyStore>,
{
    type Store = AnyStore;
    fn store(&self) -> AnyStore {
        self.0.store().into()
    }
    async fn pass(&self, d: Duration) {
        self.0.pass(d).await;
    }
    fn key(&self, name: &str) -> String {
        self.0.key(name)
    }
}

mod memory {
    kvmodel_runtime::conformance_tests!(async { super::AnyHarness(super::MemoryHarness::new()) });
}

mod redb {
    kvmodel_runtime::conformance_tests!(async { super::AnyHarness(super::RedbHarness::new()) });
}

mod redis {
    kvmodel_runtime::conformance_tests!(async {
        super::AnyHarness(super::RedisHarness::start().await)
    });
}

async fn round_trip(store: &AnyStore) {
    let mut b = Batch::new();
    b.put("k", b"v".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.get("k").await.unwrap(), Some(b"v".to_vec()));
}

#[tokio::test]
async fn open_reads_each_url_form() {
    let memory = AnyStore::open("memory:").await.unwrap();
    assert_eq!(memory.backend(), "memory");
    round_trip(&memory).await;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("any.redb");
    let redb = AnyStore::open(&format!("redb:{}", path.display()))
        .await
        .unwrap();
    assert_eq!(redb.backend(), "redb");
    round_trip(&redb).await;
    assert!(path.exists());

    let server = RedisServer::start();
    let redis = AnyStore::open(&server.url()).await.unwrap();
    assert_eq!(redis.backend(), "redis");
    round_trip(&redis).await;
}

#[tokio::test]
async fn open_refuses_bad_urls_with_what_to_write() {
    for (url, says) in [
        ("", "memory:"),
        ("postgres://db", "`postgres:` is not a known store"),
        ("memory:extra", "write `memory:`"),
        ("redb:", "redb:PATH"),
        ("redis+cluster://", "redis+cluster://HOST:PORT,HOST:PORT"),
        (
            "redis+cluster://127.0.0.1:7000/0",
            "redis+cluster://HOST:PORT,HOST:PORT",
        ),
        ("redis://[::1", "redis://HOST:PORT"),
    ] {
        let err = AnyStore::open(url).await.unwrap_err();
        assert!(matches!(err, Error::InvalidUrl { .. }), "{url}: {err}");
        assert!(err.to_string().contains(says), "{url}: {err}");
    }
}

#[tokio::test]
async fn open_of_an_unreachable_redis_fails_fast() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let started = std::time::Instant::now();
    let err = AnyStore::open(&format!("redis://127.0.0.1:{port}"))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "{err}");
    assert!(matches!(err, Error::Backend { .. }), "{err}");
}

/// `AnyStore` forwards `collection_len` to the backend's one-read answer
/// instead of the trait's page-by-page default.
#[tokio::test]
async fn collection_len_is_one_round_trip_through_any_store() {
    let h = RedisHarness::start().await;
    let redis = h.store();
    let mut b = Batch::new();
    for i in 0..2500u32 {
        b.add("len", vec![], i.to_string().into_bytes());
    }
    assert!(redis.commit(b).await.unwrap().is_applied());
    let any = AnyStore::from(redis.clone());
    let before = redis.round_trips();
    assert_eq!(any.collection_len("len").await.unwrap(), 2500);
    assert_eq!(redis.round_trips() - before, 1);
}
