//! `DynamoStore` beyond the conformance suite: opening by URL, DynamoDB's
//! limits refused before sending, a lost reply reported as an unknown
//! outcome, and the table's layout checked. All on the in-process emulator.

use std::time::Duration;

use kvmodel_runtime::conformance::DynamoEmulator;
use kvmodel_runtime::{AnyStore, Batch, DynamoStore, Error, Store};

mod answers;
mod writers;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_opens_the_table_and_creates_nothing() {
    let emulator = DynamoEmulator::start().await;
    let missing = AnyStore::open(&emulator.url("absent")).await.unwrap();
    assert_eq!(missing.backend(), "dynamodb");
    let err = missing.get("k").await.unwrap_err();
    assert!(
        err.to_string().contains("ResourceNotFoundException"),
        "opening created no table: {err}"
    );

    emulator.store("app").await;
    let store = AnyStore::open(&emulator.url("app")).await.unwrap();
    let mut b = Batch::new();
    b.absent("k").put("k", b"v".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
}

#[tokio::test]
async fn bad_urls_are_refused() {
    for url in [
        "dynamodb://",
        "dynamodb://t?colour=red",
        "dynamodb://a/b",
        "dynamodb:t",
    ] {
        assert!(
            matches!(AnyStore::open(url).await, Err(Error::InvalidUrl { .. })),
            "{url}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_table_is_idempotent_and_checks_the_layout() {
    let emulator = DynamoEmulator::start().await;
    let store = emulator.store("app").await;
    store.ensure_table().await.expect("a second time");
    // A table with another key schema is not taken over.
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let client = emulator.client();
    client
        .create_table()
        .table_name("other")
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let err = DynamoStore::from_client(client, "other")
        .ensure_table()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("key schema"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_beyond_dynamodbs_limits_are_refused_before_sending() {
    let emulator = DynamoEmulator::start().await;
    let store = emulator.store("app").await;

    let mut b = Batch::new();
    for i in 0..101 {
        b.put(format!("k{i}"), b"v".to_vec(), None);
    }
    let err = store.commit(b).await.unwrap_err();
    assert!(matches!(err, Error::InvalidBatch { .. }), "{err}");
    assert!(err.to_string().contains("meets 101 keys"), "{err}");
    assert!(err.to_string().contains("100 actions"), "{err}");

    let mut b = Batch::new();
    for i in 0..120 {
        b.add("coll", vec![], format!("m{i}").into_bytes());
    }
    let err = store.commit(b).await.unwrap_err();
    assert!(err.to_string().contains("100 actions"), "{err}");
    assert_eq!(store.collection_len("coll").await.unwrap(), 0);

    let mut b = Batch::new();
    b.put("big", vec![7; 401 * 1024], None);
    let err = store.commit(b).await.unwrap_err();
    assert!(err.to_string().contains("400 KB"), "{err}");

    let mut b = Batch::new();
    for i in 0..12 {
        b.put(format!("big{i}"), vec![7; 390 * 1024], None);
    }
    let err = store.commit(b).await.unwrap_err();
    assert!(err.to_string().contains("4 MB"), "{err}");
    assert_eq!(
        store.get("big0").await.unwrap(),
        None,
        "nothing was written"
    );

    // Keys beyond DynamoDB's key limits: refused, naming the limit; such a
    // key holds nothing.
    let mut b = Batch::new();
    b.add("coll", vec![b'x'; 1100], b"m".to_vec());
    let err = store.commit(b).await.unwrap_err();
    assert!(err.to_string().contains("1024 bytes"), "{err}");
    let long = "k".repeat(3000);
    let mut b = Batch::new();
    b.put(long.as_str(), b"v".to_vec(), None);
    let err = store.commit(b).await.unwrap_err();
    assert!(err.to_string().contains("2048 bytes"), "{err}");
    assert_eq!(store.get(&long).await.unwrap(), None);
    assert_eq!(
        store
            .get_many(&[long.clone(), "fits".to_owned()])
            .await
            .unwrap(),
        [None, None]
    );

    let mut b = Batch::new();
    b.put("fits", vec![7; 390 * 1024], None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(
        store.get("fits").await.unwrap().map(|v| v.len()),
        Some(390 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_reply_is_lost_has_an_unknown_outcome() {
    let emulator = DynamoEmulator::start().await;
    emulator.store("app").await;
    // A proxy that forwards the reads and swallows the transaction's reply.
    let upstream = emulator.endpoint().trim_start_matches("http://").to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let proxy = tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let upstream = upstream.clone();
            tokio::spawn(async move {
                use std::sync::Arc;
                use std::sync::atomic::{AtomicBool, Ordering};
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let (mut from_client, mut to_client) = client.into_split();
                let (mut from_server, mut to_server) = server.into_split();
                let swallow = Arc::new(AtomicBool::new(false));
                let seen = swallow.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 1 << 16];
                    while let Ok(n) = from_client.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        let chunk = &buf[..n];
                        if chunk
                            .windows(36)
                            .any(|w| w == b"DynamoDB_20120810.TransactWriteItems")
                        {
                            seen.store(true, Ordering::SeqCst);
                        }
                        if to_server.write_all(chunk).await.is_err() {
                            return;
                        }
                    }
                });
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = from_server.read(&mut buf).await {
                    if n == 0 || swallow.load(Ordering::SeqCst) {
                        // Applied upstream; the reply never comes back.
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        return;
                    }
                    if to_client.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "tests"))
        .endpoint_url(format!("http://{addr}"))
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                // Long enough for the emulator to apply the write on a
                // loaded machine: the reply is lost, not the request.
                .operation_attempt_timeout(Duration::from_secs(2))
                .operation_timeout(Duration::from_secs(4))
                .build(),
        )
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    let store = DynamoStore::from_client(aws_sdk_dynamodb::Client::from_conf(config), "app");
    let mut b = Batch::new();
    b.put("k", b"v".to_vec(), None);
    let err = store.commit(b).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutcomeUnknown {
                backend: "dynamodb",
                ..
            }
        ),
        "{err}"
    );
    proxy.abort();
    // The request reached the emulator before its reply was swallowed; on a
    // loaded machine it may still be applying it.
    let direct = DynamoStore::from_client(emulator.client(), "app");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut stored = direct.get("k").await.unwrap();
    while stored.is_none() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stored = direct.get("k").await.unwrap();
    }
    assert_eq!(
        stored.as_deref(),
        Some(&b"v"[..]),
        "the write was applied though its reply was lost"
    );
}

/// A client configured without an HTTP client still sends its requests:
/// `from_client` gives it `DynamoStore::http_client()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_configured_without_an_http_client_sends_with_the_stores() {
    let emulator = DynamoEmulator::start().await;
    emulator.store("app").await;
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "tests"))
        .endpoint_url(emulator.endpoint())
        .build();
    assert!(config.http_client().is_none());
    let store = DynamoStore::from_client(aws_sdk_dynamodb::Client::from_conf(config), "app");
    let mut b = Batch::new();
    b.put("k", b"v".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());
    assert_eq!(store.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
}

/// `HTTP_PROXY` is honoured, as by the SDK's own client: the request of
/// a child process reaches the proxy this test listens as, in the form a
/// client speaks to a proxy (the whole URL of the endpoint). The child is
/// this test again, with `KVMODEL_PROXY_PROBE` set: it sends one request to a
/// DynamoDB endpoint that does not resolve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_go_through_the_proxy_the_environment_names() {
    use tokio::io::AsyncReadExt;
    const PROBE: &str = "KVMODEL_PROXY_PROBE";
    if std::env::var_os(PROBE).is_some() {
        let store = AnyStore::open(
            "dynamodb://app?region=us-east-1&endpoint=http://dynamodb.kvmodel.invalid",
        )
        .await
        .unwrap();
        let _ = store.get("k").await;
        return;
    }
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = proxy.local_addr().unwrap();
    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "requests_go_through_the_proxy_the_environment_names",
            "--quiet",
        ])
        .env(PROBE, "1")
        .env("HTTP_PROXY", format!("http://{addr}"))
        // Credentials from the environment: no instance-metadata request
        // (which would go through the proxy too) before the DynamoDB one.
        .env("AWS_ACCESS_KEY_ID", "probe")
        .env("AWS_SECRET_ACCESS_KEY", "probe")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (mut conn, _) = tokio::time::timeout(Duration::from_secs(60), proxy.accept())
        .await
        .expect("the child's request reaches the proxy")
        .unwrap();
    let mut head = vec![0; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut head))
        .await
        .unwrap()
        .unwrap();
    let head = String::from_utf8_lossy(&head[..n]);
    assert!(
        head.starts_with("POST http://dynamodb.kvmodel.invalid"),
        "the proxy received: {head}"
    );
    drop(conn);
    drop(child);
}
