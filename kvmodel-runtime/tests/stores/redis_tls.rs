//! `rediss://`: the Redis stores over TLS, against a `redis-server` that
//! speaks only TLS and whose certificate a test CA signed.

#![cfg(feature = "tls")]

use std::time::Duration;

use kvmodel_runtime::conformance::TlsRedisServer;
use kvmodel_runtime::{AnyStore, Batch, Error, RedisClusterStore, RedisStore, Store};

/// Writes a key and reads it back.
async fn round_trip<S: Store>(store: &S) {
    let mut batch = Batch::new();
    batch.put("tls/greeting", b"hello".to_vec(), None);
    assert!(store.commit(batch).await.unwrap().is_applied());
    assert_eq!(
        store.get("tls/greeting").await.unwrap().as_deref(),
        Some(&b"hello"[..])
    );
}

#[tokio::test]
async fn a_store_over_tls_commits_and_reads() {
    let server = TlsRedisServer::start();
    let store = RedisStore::builder(&server.url())
        .tls_root_certificates(server.ca_pem().to_vec())
        .connect()
        .await
        .unwrap();
    round_trip(&store).await;
}

#[tokio::test]
async fn a_server_of_an_unknown_ca_is_refused() {
    let server = TlsRedisServer::start();
    let other = TlsRedisServer::start();
    let err = RedisStore::builder(&server.url())
        .tls_root_certificates(other.ca_pem().to_vec())
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(err.to_string().contains(&server.url()[9..]), "{err}");
}

#[tokio::test]
async fn any_store_opens_rediss_urls() {
    let server = TlsRedisServer::start();
    // The test CA is not among the system's roots: `#insecure` skips the
    // check (the CLI test trusts it through `SSL_CERT_FILE`).
    let store = AnyStore::open(&format!("{}#insecure", server.url()))
        .await
        .unwrap();
    assert_eq!(store.backend(), "redis");
    round_trip(&store).await;
}

#[tokio::test]
async fn a_plain_url_to_a_tls_server_fails_fast() {
    let server = TlsRedisServer::start();
    let plain = format!("redis://127.0.0.1:{}", server.port());
    let started = std::time::Instant::now();
    let err = RedisStore::builder(&plain)
        .connect_timeout(Duration::from_millis(500))
        .response_timeout(Duration::from_millis(500))
        .connect()
        .await;
    assert!(err.is_err());
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_cluster_store_over_tls_commits_and_reads() {
    let server = TlsRedisServer::start_cluster();
    let store = RedisClusterStore::builder(&[&server.url()])
        .tls_root_certificates(server.ca_pem().to_vec())
        .connect()
        .await
        .unwrap();
    round_trip(&store).await;
    // A batch across hash slots runs the cross-slot protocol over TLS too.
    let mut batch = Batch::new();
    batch.put("tls/a", b"1".to_vec(), None);
    batch.put("tls/b", b"2".to_vec(), None);
    assert!(store.commit(batch).await.unwrap().is_applied());
    assert_eq!(
        store.get("tls/b").await.unwrap().as_deref(),
        Some(&b"2"[..])
    );

    let url = format!("rediss+cluster://127.0.0.1:{}#insecure", server.port());
    let any = AnyStore::open(&url).await.unwrap();
    assert_eq!(any.backend(), "redis-cluster");
    assert_eq!(any.get("tls/a").await.unwrap().as_deref(), Some(&b"1"[..]));
}
