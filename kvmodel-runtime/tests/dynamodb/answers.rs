//! What a commit makes of DynamoDB's last answer: known refusals are
//! ordinary errors (nothing written); answers that may follow an attempt
//! that applied (still in progress, throttled, an internal error) leave
//! the outcome unknown. A fake endpoint gives each answer.

use std::time::Duration;

use kvmodel_runtime::{Batch, DynamoStore, Error, Store};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An endpoint that answers every read with no item and every
/// `TransactWriteItems` with HTTP `status` and the error `kind`.
async fn endpoint(status: u16, kind: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                loop {
                    // One request: its head, then its body.
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap_or(0));
                    while buf.len() < end + 4 + length {
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let (code, body) = if head.contains("transactwriteitems") {
                        let body = format!(
                            "{{\"__type\":\"com.amazonaws.dynamodb.v20120810#{kind}\",\"message\":\"as told\"}}"
                        );
                        (status, body)
                    } else {
                        (200, "{\"Responses\":[]}".to_owned())
                    };
                    let reply = format!(
                        "HTTP/1.1 {code} X\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if conn.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                    buf.drain(..end + 4 + length);
                }
            });
        }
    });
    format!("http://{addr}")
}

async fn commit_against(status: u16, kind: &'static str) -> Error {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "tests"))
        .endpoint_url(endpoint(status, kind).await)
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    let store = DynamoStore::from_client(aws_sdk_dynamodb::Client::from_conf(config), "app");
    let mut b = Batch::new();
    b.incr("c", 1);
    store.commit(b).await.unwrap_err()
}

#[tokio::test]
async fn answers_that_may_follow_an_applied_attempt_are_unknown() {
    for (status, kind) in [
        (400, "TransactionInProgressException"),
        (400, "ThrottlingException"),
        (400, "ProvisionedThroughputExceededException"),
        (500, "InternalServerError"),
    ] {
        let err = commit_against(status, kind).await;
        assert!(
            matches!(
                err,
                Error::OutcomeUnknown {
                    backend: "dynamodb",
                    ..
                }
            ),
            "{kind}: {err}"
        );
    }
}

#[tokio::test]
async fn refusals_are_ordinary_errors() {
    for kind in ["ValidationException", "ResourceNotFoundException"] {
        let err = commit_against(400, kind).await;
        assert!(matches!(err, Error::Backend { .. }), "{kind}: {err:?}");
        assert!(err.to_string().contains(kind), "{err}");
    }
}
