//! The conformance suite every [`Store`] backend must pass.
//!
//! A backend's test file provides a [`Harness`] and expands
//! [`conformance_tests!`](crate::conformance_tests), which generates one
//! `#[tokio::test]` per case:
//!
//! ```text
//! kvmodel_runtime::conformance_tests!(async { MyHarness::start().await });
//! ```
//!
//! The cases (in `cases`) panic on failure, as tests do.

mod cases;
#[cfg(feature = "redis-cluster")]
mod cluster;
mod counters;
mod counting;
#[cfg(feature = "dynamodb-emulator")]
mod dynamo;
mod faulty;
mod feeds;
mod follow;
mod maintenance;
mod sizes;
#[cfg(feature = "tls")]
mod tls;
#[cfg(any(feature = "redb", feature = "redis"))]
mod watchdog;

pub use cases::*;
#[cfg(feature = "redis-cluster")]
pub use cluster::{ClusterHarness, LentCluster, RedisCluster};
pub use counters::*;
pub use counting::CountingStore;
#[cfg(feature = "dynamodb-emulator")]
pub use dynamo::{DynamoEmulator, DynamoHarness, DynamoRequests};
pub use faulty::FaultyStore;
pub use feeds::*;
pub use follow::*;
pub use maintenance::*;
pub use sizes::*;
#[cfg(feature = "tls")]
pub use tls::TlsRedisServer;

use std::future::Future;
use std::time::Duration;

use crate::store::Store;
use crate::store::clock::ManualClock;
use crate::store::memory::MemoryStore;

/// Whether the heavy suites (the model-based test, the compile test of
/// generated schemas, the deep and wide trees) run at their long settings: `KVMODEL_LONG_TESTS` is
/// set to anything but `0` or nothing. `.ci/run` sets it; a plain
/// `scripts/test` runs those suites shorter.
pub fn long_run() -> bool {
    std::env::var_os("KVMODEL_LONG_TESTS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs `write(0)` … `write(n - 1)` as `n` tasks released together by a
/// barrier, all racing for one unique value, and returns how many won.
///
/// Every loser must fail with [`Error::UniqueViolation`](crate::Error::UniqueViolation);
/// any other outcome panics, naming the error.
pub async fn unique_race<F, Fut>(n: usize, write: F) -> usize
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = crate::Result<()>> + Send + 'static,
{
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (barrier, write) = (barrier.clone(), write(i));
            tokio::spawn(async move {
                barrier.wait().await;
                write.await
            })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        match t.await.expect("a racing write panicked") {
            Ok(()) => wins += 1,
            Err(crate::Error::UniqueViolation { .. }) => {}
            Err(e) => panic!("a racing write failed with an unexpected error: {e}"),
        }
    }
    wins
}

/// What a backend gives the suite.
pub trait Harness: Send + Sync + 'static {
    /// The store under test.
    type Store: Store;

    /// A handle to the store (every call returns a handle to the same store).
    fn store(&self) -> Self::Store;

    /// Lets `d` of store time pass: advances a manual clock, or sleeps.
    fn pass(&self, d: Duration) -> impl Future<Output = ()> + Send;

    /// The key the suite calls `name`; harnesses that share one server
    /// between tests prefix it.
    fn key(&self, name: &str) -> String {
        name.to_owned()
    }
}

/// A [`MemoryStore`] on a [`ManualClock`].
#[derive(Debug, Clone)]
pub struct MemoryHarness {
    store: MemoryStore,
    clock: ManualClock,
}

impl MemoryHarness {
    /// A fresh store.
    pub fn new() -> Self {
        let clock = ManualClock::new(1_700_000_000_000);
        MemoryHarness {
            store: MemoryStore::with_clock(clock.clone()),
            clock,
        }
    }
}

impl Default for MemoryHarness {
    fn default() -> Self {
        MemoryHarness::new()
    }
}

impl Harness for MemoryHarness {
    type Store = MemoryStore;
    fn store(&self) -> MemoryStore {
        self.store.clone()
    }
    async fn pass(&self, d: Duration) {
        self.clock.advance(d);
    }
}

/// A [`RedbStore`](crate::RedbStore) in a fresh temporary file on a
/// [`ManualClock`]. The file is removed on drop, and with the directory of
/// this process's test files when the process ends (a harness kept in a
/// `static` is never dropped).
#[cfg(feature = "redb")]
#[derive(Debug)]
pub struct RedbHarness {
    store: crate::RedbStore,
    clock: ManualClock,
    path: std::path::PathBuf,
}

#[cfg(feature = "redb")]
impl RedbHarness {
    /// A fresh database file.
    pub fn new() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path =
            watchdog::scratch().join(format!("{}.redb", NEXT.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_file(&path);
        let clock = ManualClock::new(1_700_000_000_000);
        let store = crate::RedbStore::open_with_clock(&path, clock.clone())
            .expect("open a temporary redb file");
        RedbHarness { store, clock, path }
    }
}

#[cfg(feature = "redb")]
impl Default for RedbHarness {
    fn default() -> Self {
        RedbHarness::new()
    }
}

#[cfg(feature = "redb")]
impl Drop for RedbHarness {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(feature = "redb")]
impl Harness for RedbHarness {
    type Store = crate::RedbStore;
    fn store(&self) -> crate::RedbStore {
        self.store.clone()
    }
    async fn pass(&self, d: Duration) {
        self.clock.advance(d);
    }
}

/// Generates one `#[tokio::test]` per conformance case; the argument is an
/// async expression producing a [`Harness`].
#[macro_export]
macro_rules! conformance_tests {
    ($harness:expr) => {
        $crate::__conformance_each! { $harness;
            absent_condition, equals_condition, absent_or_equals_condition, present_condition,
            failed_condition_applies_nothing, failed_condition_reports_first_failing,
            invalid_increment_applies_nothing, ops_see_earlier_ops_of_the_batch,
            put_replaces_value_and_ttl, values_expire, extreme_ttls_are_accepted, expire_sets_ttl_on_counters_and_collections,
            get_many_keeps_order, counters_add_up, range_bounds, range_limit_and_direction,
            range_cursor_resumes_across_inserts, collections_are_sets_and_delete_clears,
            concurrent_absent_race_has_one_winner, concurrent_compare_and_swap_loses_nothing,
            counter_syntax_is_one_rule, counter_overflow_is_exact, kinds_do_not_mix,
            sub_millisecond_ttls_are_accepted, reading_a_non_counter_is_a_read_error,
            collection_len_counts_live_members, range_takes_any_limit,
            scan_lists_keys_by_prefix, now_ms_is_the_ttl_clock, range_keys_pages_value_keys_in_order,
            commit_after_read_plans_one_write, concurrent_planned_writes_lose_nothing,
            get_via_follows_one_key, range_values_reads_each_members_value,
            range_values_with_lends_each_members_value, get_with_lends_the_value,
            a_snapshot_reads_one_instant, change_stamps_follow_every_move,
            an_increment_stays_within_its_limit, feed_entries_come_with_their_commit,
            the_empty_key_reads_as_absent, delete_if_equals_deletes_only_its_value,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_each {
    ($harness:expr; $($case:ident),* $(,)?) => {$(
        #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            let harness = $harness.await;
            $crate::conformance::$case(&harness).await;
        }
    )*};
}

/// Runs async test cases `async fn case<H: Harness>(h: &H)` on every
/// backend: one `#[tokio::test]` per case in each of the modules `memory`,
/// `redb` and `redis` (and `cluster`, a Redis Cluster, when the runtime's
/// feature `redis-cluster` is on), each with a fresh harness. The cases are
/// named as they are in scope where the macro is invoked.
///
/// ```text
/// kvmodel_runtime::on_every_backend!(create_writes_every_entry, delete_removes_everything);
/// ```
///
/// Cases that wait for real time to pass (a TTL on Redis) follow
/// `; real_time:`. They are tests of their own on the stores with a clock
/// to move; on Redis and Redis Cluster they run at once in one test per
/// module, `real_time_cases_together` (see [`together`]), so that their
/// waits overlap instead of holding a test thread each in turn:
///
/// ```text
/// kvmodel_runtime::on_every_backend!(create_writes_every_entry; real_time: values_expire);
/// ```
#[cfg(all(feature = "redb", feature = "redis", not(feature = "redis-cluster")))]
#[macro_export]
macro_rules! on_every_backend {
    ($($case:ident),* $(,)?) => {
        $crate::__on_single_backends!($($case),*);
    };
    ($($case:ident),* ; real_time: $($wait:ident),* $(,)?) => {
        $crate::__on_single_backends!($($case),* ; real_time: $($wait),*);
    };
}

/// Runs async test cases `async fn case<H: Harness>(h: &H)` on every
/// backend: one `#[tokio::test]` per case in each of the modules `memory`,
/// `redb`, `redis` and `cluster` (a Redis Cluster, see
/// [`ClusterHarness`]), each with a
/// fresh harness. The cases are named as they are in scope where the macro
/// is invoked.
///
/// ```text
/// kvmodel_runtime::on_every_backend!(create_writes_every_entry, delete_removes_everything);
/// ```
///
/// Cases that wait for real time to pass (a TTL on Redis) follow
/// `; real_time:`. They are tests of their own on the stores with a clock
/// to move; on Redis and Redis Cluster they run at once in one test per
/// module, `real_time_cases_together` (see [`together`]), so that their
/// waits overlap instead of holding a test thread each in turn:
///
/// ```text
/// kvmodel_runtime::on_every_backend!(create_writes_every_entry; real_time: values_expire);
/// ```
#[cfg(all(feature = "redb", feature = "redis", feature = "redis-cluster"))]
#[macro_export]
macro_rules! on_every_backend {
    ($($case:ident),* $(,)?) => {
        $crate::__on_single_backends!($($case),*);
        mod cluster {
            $crate::__on_backend!($crate::conformance::ClusterHarness::start().await; $($case),*);
        }
    };
    ($($case:ident),* ; real_time: $($wait:ident),* $(,)?) => {
        $crate::__on_single_backends!($($case),* ; real_time: $($wait),*);
        mod cluster {
            $crate::__on_backend!($crate::conformance::ClusterHarness::start().await; $($case),*);
            $crate::__on_backend_together!($crate::conformance::ClusterHarness::start().await; $($wait),*);
        }
    };
}

#[doc(hidden)]
#[cfg(all(feature = "redb", feature = "redis"))]
#[macro_export]
macro_rules! __on_single_backends {
    ($($case:ident),*) => {
        mod memory {
            $crate::__on_backend!($crate::conformance::MemoryHarness::new(); $($case),*);
        }
        mod redb {
            $crate::__on_backend!($crate::conformance::RedbHarness::new(); $($case),*);
        }
        mod redis {
            $crate::__on_backend!($crate::conformance::RedisHarness::start().await; $($case),*);
        }
        $crate::__on_dynamodb!($($case),*);
    };
    ($($case:ident),* ; real_time: $($wait:ident),*) => {
        mod memory {
            $crate::__on_backend!($crate::conformance::MemoryHarness::new(); $($case),*);
            $crate::__on_backend!($crate::conformance::MemoryHarness::new(); $($wait),*);
        }
        mod redb {
            $crate::__on_backend!($crate::conformance::RedbHarness::new(); $($case),*);
            $crate::__on_backend!($crate::conformance::RedbHarness::new(); $($wait),*);
        }
        mod redis {
            $crate::__on_backend!($crate::conformance::RedisHarness::start().await; $($case),*);
            $crate::__on_backend_together!($crate::conformance::RedisHarness::start().await; $($wait),*);
        }
        $crate::__on_dynamodb!($($case),* ; $($wait),*);
    };
}

#[doc(hidden)]
#[cfg(feature = "dynamodb-emulator")]
#[macro_export]
macro_rules! __on_dynamodb {
    ($($case:ident),*) => {
        mod dynamodb {
            $crate::__on_backend!($crate::conformance::DynamoHarness::start().await; $($case),*);
        }
    };
    ($($case:ident),* ; $($wait:ident),*) => {
        mod dynamodb {
            $crate::__on_backend!($crate::conformance::DynamoHarness::start().await; $($case),*);
            $crate::__on_backend!($crate::conformance::DynamoHarness::start().await; $($wait),*);
        }
    };
}

#[doc(hidden)]
#[cfg(not(feature = "dynamodb-emulator"))]
#[macro_export]
macro_rules! __on_dynamodb {
    ($($case:ident),*) => {};
    ($($case:ident),* ; $($wait:ident),*) => {};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __on_backend {
    ($harness:expr; $($case:ident),*) => {$(
        #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            let harness = $harness;
            super::$case(&harness).await;
        }
    )*};
}

/// One `#[tokio::test]`, `real_time_cases_together`, that runs the cases
/// whose time passes for real (Redis, Redis Cluster) at once, each on a
/// harness of its own, so that their waits overlap; see [`together`].
#[doc(hidden)]
#[macro_export]
macro_rules! __on_backend_together {
    ($harness:expr; $($case:ident),*) => {
        #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn real_time_cases_together() {
            $crate::conformance::together(::std::vec![$(
                (
                    ::std::stringify!($case),
                    ::std::boxed::Box::pin(async {
                        let harness = $harness;
                        super::$case(&harness).await;
                    }) as $crate::conformance::Case,
                ),
            )*])
            .await;
        }
    };
}

/// A test case as [`together`] runs it.
pub type Case = std::pin::Pin<Box<dyn Future<Output = ()> + 'static>>;

/// Runs the named cases at once (as tasks of one thread, each free to
/// spawn tasks of its own on the runtime) and fails naming each case that
/// panicked (its panic message is printed where it happened), after all
/// of them have finished. The cases of [`on_every_backend!`]'s
/// `real_time:` list run so on Redis and Redis Cluster: each still asserts
/// all it asserts alone, on a harness of its own, while the waits for real
/// time to pass overlap.
pub async fn together(cases: Vec<(&'static str, Case)>) {
    let local = tokio::task::LocalSet::new();
    let failed = local
        .run_until(async {
            let tasks: Vec<_> = cases
                .into_iter()
                .map(|(name, case)| (name, tokio::task::spawn_local(case)))
                .collect();
            let mut failed = Vec::new();
            for (name, task) in tasks {
                if task.await.is_err() {
                    failed.push(name);
                }
            }
            failed
        })
        .await;
    assert!(
        failed.is_empty(),
        "real-time cases failed (their panics are printed above): {}",
        failed.join(", ")
    );
}

/// A `redis-server` process started for tests on a free loopback port, and
/// stopped (by its PID) when dropped or when this process ends, even killed
/// or with the server held in a `static`: a watchdog stops it once this
/// process is gone. Never touches a server it did not start.
#[cfg(feature = "redis")]
#[derive(Debug)]
pub struct RedisServer {
    process: watchdog::Watched,
    port: u16,
}

#[cfg(feature = "redis")]
impl RedisServer {
    /// Starts a server; panics with an actionable message if `redis-server`
    /// is not installed or does not come up.
    pub fn start() -> Self {
        use std::net::TcpListener;
        for _ in 0..10 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("find a free loopback port")
                .port();
            if let Some(server) = Self::spawn(port, None) {
                return server;
            }
        }
        panic!("redis-server did not start on a free loopback port");
    }

    /// Starts a server on `port` (one a stopped test server used, to test
    /// reconnection); panics if it does not come up.
    pub fn start_on(port: u16) -> Self {
        Self::spawn(port, None)
            .unwrap_or_else(|| panic!("redis-server did not start on port {port}"))
    }

    /// Starts a durable server on `port` that keeps its data in `dir`: an
    /// append-only file synced on every write (`appendfsync always`), which
    /// a server started again on the same directory loads. For crash tests:
    /// dropping the server kills it with SIGKILL. `port` 0 picks a free one.
    pub fn start_durable(port: u16, dir: &std::path::Path) -> Self {
        use std::net::TcpListener;
        for _ in 0..10 {
            let port = match port {
                0 => TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .expect("find a free loopback port")
                    .port(),
                p => p,
            };
            if let Some(server) = Self::spawn(port, Some(dir)) {
                return server;
            }
        }
        panic!(
            "a durable redis-server did not start in `{}`",
            dir.display()
        );
    }

    /// A server on `port`, or `None` if it exits (the port was taken) or
    /// does not answer within 30 s. With `durable`, it appends every write
    /// to a file in that directory and syncs it before answering.
    fn spawn(port: u16, durable: Option<&std::path::Path>) -> Option<Self> {
        use std::ffi::OsString;
        let mut args: Vec<OsString> = ["--port", &port.to_string(), "--bind", "127.0.0.1"]
            .into_iter()
            .chain(["--save", ""])
            .map(OsString::from)
            .collect();
        let dir = match durable {
            Some(dir) => {
                args.extend(["--appendonly", "yes", "--appendfsync", "always"].map(OsString::from));
                dir
            }
            None => {
                args.extend(["--appendonly", "no"].map(OsString::from));
                watchdog::scratch()
            }
        };
        args.extend([OsString::from("--dir"), dir.as_os_str().to_owned()]);
        let process = watchdog::Watched::spawn(args)?;
        // Loading a long append-only file takes a while.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if process.exited() {
                return None; // the port was taken meanwhile
            }
            // The port may answer for another test's server that took it
            // first: only a server that names this process's PID is ours.
            if serves(port, process.pid()) {
                return Some(RedisServer { process, port });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

/// Whether the Redis server on `port` is the process `pid` (`INFO server`
/// names its `process_id`).
#[cfg(feature = "redis")]
fn serves(port: u16, pid: u32) -> bool {
    use std::io::{Read, Write};
    let Ok(mut conn) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
    if conn.write_all(b"INFO server\r\n").is_err() {
        return false;
    }
    let want = format!("\r\nprocess_id:{pid}\r\n");
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    while reply.len() < 1 << 16 {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => reply.extend_from_slice(&chunk[..n]),
        }
        let text = String::from_utf8_lossy(&reply);
        if text.contains(&want) {
            return true;
        }
        let named = text.find("\r\nprocess_id:").map(|at| &text[at + 2..]);
        if named.is_some_and(|line| line.contains("\r\n")) {
            return false; // another process
        }
    }
    false
}

/// A [`RedisStore`](crate::RedisStore) on its own [`RedisServer`]; time
/// passes for real.
#[cfg(feature = "redis")]
#[derive(Debug)]
pub struct RedisHarness {
    store: crate::RedisStore,
    server: RedisServer,
}

#[cfg(feature = "redis")]
impl RedisHarness {
    /// Starts a server and connects to it.
    pub async fn start() -> Self {
        let server = RedisServer::start();
        let store = crate::RedisStore::connect(&server.url())
            .await
            .expect("connect to the test redis-server");
        RedisHarness { store, server }
    }

    /// Starts a server and connects to it with a store that keeps delete
    /// plans ([`RedisStoreBuilder::delete_plans`](crate::RedisStoreBuilder::delete_plans)).
    pub async fn start_with_delete_plans() -> Self {
        let server = RedisServer::start();
        let store = crate::RedisStore::builder(&server.url())
            .delete_plans(true)
            .connect()
            .await
            .expect("connect to the test redis-server");
        RedisHarness { store, server }
    }

    /// The server.
    pub fn server(&self) -> &RedisServer {
        &self.server
    }
}

#[cfg(feature = "redis")]
impl Harness for RedisHarness {
    type Store = crate::RedisStore;
    fn store(&self) -> crate::RedisStore {
        self.store.clone()
    }
    async fn pass(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }
}
