//! A `rediss://` URL and the `tls` feature: without the feature (a build
//! of this crate alone leaves it out) the URL is refused with an error that
//! names the feature; with it (a workspace build turns it on for the
//! command) the URL is read and only the connection fails.

use kvmodel::{AnyStore, Error, RedisClusterStore, RedisStore};

/// A loopback port nobody listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

#[tokio::test]
async fn a_rediss_url_is_refused_naming_the_feature_or_read() {
    let port = closed_port();
    let server = format!("rediss://127.0.0.1:{port}");
    let cluster = format!("rediss+cluster://127.0.0.1:{port}");
    let errors = [
        AnyStore::open(&server).await.map(drop).unwrap_err(),
        AnyStore::open(&cluster).await.map(drop).unwrap_err(),
        RedisStore::connect(&server).await.map(drop).unwrap_err(),
        RedisClusterStore::connect(&[&server])
            .await
            .map(drop)
            .unwrap_err(),
    ];
    for err in errors {
        match err {
            Error::InvalidUrl { ref reason, .. } => {
                assert!(reason.contains("feature `tls`"), "{err}");
                assert!(reason.contains("features = [\"tls\"]"), "{err}");
            }
            Error::Backend { .. } => {} // TLS is on: nothing listens there.
            other => panic!("{other}"),
        }
    }
}
