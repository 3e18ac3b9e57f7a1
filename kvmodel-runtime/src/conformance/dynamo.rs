//! DynamoDB in the tests: an in-process emulator, the harness on it, and a
//! counter of the requests a client sends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

use super::Harness;
use crate::store::clock::ManualClock;

/// A DynamoDB emulator (`dynoxide`, in memory) served on a free loopback
/// port by a task of the current tokio runtime, which stops with the
/// runtime or when this is dropped. No Java, no Docker, no network.
#[derive(Debug)]
pub struct DynamoEmulator {
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl DynamoEmulator {
    /// Starts an empty emulator; panics if no loopback port can be bound.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a free loopback port for the DynamoDB emulator");
        let addr = listener.local_addr().expect("the emulator's address");
        let db = dynoxide::Database::memory().expect("an in-memory DynamoDB emulator");
        let task = tokio::spawn(dynoxide::server::serve_on(listener, db));
        DynamoEmulator { addr, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The store URL of `table` on this emulator, for [`AnyStore::open`](crate::AnyStore::open).
    pub fn url(&self, table: &str) -> String {
        format!(
            "dynamodb://{table}?region=us-east-1&endpoint={}",
            self.endpoint()
        )
    }

    /// A client of this emulator (placeholder credentials; the emulator
    /// checks none).
    pub fn client(&self) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(self.config().build())
    }

    /// A client of this emulator whose every request `requests` counts.
    pub fn counted_client(&self, requests: &DynamoRequests) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(self.config().interceptor(requests.clone()).build())
    }

    fn config(&self) -> aws_sdk_dynamodb::config::Builder {
        use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
        aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .http_client(crate::DynamoStore::http_client())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "tests"))
            .endpoint_url(self.endpoint())
    }

    /// A [`DynamoStore`](crate::DynamoStore) on a new table `table` of this
    /// emulator.
    pub async fn store(&self, table: &str) -> crate::DynamoStore {
        let store = crate::DynamoStore::from_client(self.client(), table);
        store
            .ensure_table()
            .await
            .expect("create the test table in the DynamoDB emulator");
        store
    }
}

impl Drop for DynamoEmulator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A [`DynamoStore`](crate::DynamoStore) on its own [`DynamoEmulator`],
/// with expiry counted on a [`ManualClock`] that starts at the real time.
#[derive(Debug)]
pub struct DynamoHarness {
    store: crate::DynamoStore,
    clock: ManualClock,
    emulator: DynamoEmulator,
}

impl DynamoHarness {
    /// Starts an emulator and creates the store's table in it.
    pub async fn start() -> Self {
        use crate::store::clock::{Clock, SystemClock};
        let emulator = DynamoEmulator::start().await;
        let clock = ManualClock::new(SystemClock.now_ms());
        let store = emulator.store("kvmodel").await.with_clock(clock.clone());
        DynamoHarness {
            store,
            clock,
            emulator,
        }
    }

    /// The emulator.
    pub fn emulator(&self) -> &DynamoEmulator {
        &self.emulator
    }
}

impl Harness for DynamoHarness {
    type Store = crate::DynamoStore;
    fn store(&self) -> crate::DynamoStore {
        self.store.clone()
    }
    async fn pass(&self, d: Duration) {
        self.clock.advance(d);
    }
}

/// Counts the requests a DynamoDB client sends, by operation
/// (`TransactWriteItems`, `GetItem`, …), retries included, and the actions
/// of its transactions by kind: install it with
/// [`DynamoEmulator::counted_client`].
#[derive(Debug, Clone, Default)]
pub struct DynamoRequests {
    requests: Arc<Mutex<BTreeMap<String, u64>>>,
    actions: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl DynamoRequests {
    /// A counter at zero.
    pub fn new() -> Self {
        DynamoRequests::default()
    }

    /// The requests counted since the last call, by operation; the counter
    /// starts again from zero.
    pub fn take(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The actions of the `TransactWriteItems` sent since the last call, by
    /// kind (`Put`, `Update`, `Delete`, `ConditionCheck`); the counter
    /// starts again from zero.
    pub fn take_actions(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.actions.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Intercept for DynamoRequests {
    fn name(&self) -> &'static str {
        "DynamoRequests"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // `X-Amz-Target: DynamoDB_20120810.TransactWriteItems`
        let operation = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown")
            .to_owned();
        if operation == "TransactWriteItems" {
            let body: serde_json::Value = context
                .request()
                .body()
                .bytes()
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or_default();
            let mut actions = self.actions.lock().unwrap_or_else(|e| e.into_inner());
            for item in body["TransactItems"].as_array().into_iter().flatten() {
                for kind in item.as_object().into_iter().flat_map(|o| o.keys()) {
                    *actions.entry(kind.clone()).or_default() += 1;
                }
            }
        }
        *self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(operation)
            .or_default() += 1;
        Ok(())
    }
}
