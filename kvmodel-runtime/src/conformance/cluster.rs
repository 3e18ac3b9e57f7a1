//! A Redis Cluster for tests: three masters, each a `redis-server` this
//! process starts on free loopback ports, and a harness per test that
//! isolates its keys under a prefix of its own.
//!
//! Starting a cluster takes a few seconds (the nodes must agree), so a
//! test binary starts one ([`RedisCluster::shared`]) and every test uses
//! it through its own [`ClusterHarness`]. Each server runs under a small
//! `sh` watchdog that stops it when this process is gone (even killed), so
//! a cluster held in a static is never left running, and its files are in
//! this process's temporary directory, removed when the process ends; a
//! cluster started with [`RedisCluster::start`] is stopped (by PID) when
//! dropped.

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::Harness;
use super::watchdog::Watched;
use crate::store::RedisClusterStore;

/// The cluster every test of this process shares ([`RedisCluster::shared`]).
static SHARED: OnceLock<RedisCluster> = OnceLock::new();

/// The clusters not lent out now ([`RedisCluster::lend`]).
static POOL: Mutex<Vec<&'static RedisCluster>> = Mutex::new(Vec::new());

/// A cluster lent to one test alone ([`RedisCluster::lend`]); back to the
/// pool when dropped.
#[derive(Debug)]
pub struct LentCluster(&'static RedisCluster);

impl Deref for LentCluster {
    type Target = RedisCluster;
    fn deref(&self) -> &RedisCluster {
        self.0
    }
}

impl Drop for LentCluster {
    fn drop(&mut self) {
        POOL.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(self.0);
    }
}

/// One master: its server (held to be stopped when dropped) and its port.
#[derive(Debug)]
struct Node {
    _process: Watched,
    port: u16,
}

/// A three-master Redis Cluster of `redis-server` processes started for
/// tests, on loopback ports whose cluster-bus ports (port + 10000) are free
/// too. Never touches a server it did not start.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<Node>,
    dir: PathBuf,
}

fn free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A port in 15000–22767 that is free, with its bus port (+10000, below
/// the usual ephemeral range) free too.
fn free_pair() -> u16 {
    loop {
        let port = fastrand::u16(15_000..22_768);
        if free(port) && free(port + 10_000) {
            return port;
        }
    }
}

fn command(port: u16, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut conn)
}

fn text(reply: redis::RedisResult<redis::Value>) -> String {
    match reply {
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::VerbatimString { text, .. }) => text,
        Ok(redis::Value::SimpleString(s)) => s,
        _ => String::new(),
    }
}

fn info(port: u16) -> String {
    text(command(port, &["CLUSTER", "INFO"]))
}

fn node_id(port: u16) -> String {
    let id = text(command(port, &["CLUSTER", "MYID"]));
    assert!(
        !id.is_empty(),
        "the test cluster node on port {port} has no id"
    );
    id
}

/// Polls `done` until it holds; panics naming `what` after 30 s.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Node {
    /// A server on a free port pair in `dir`, or `None` if it does not
    /// come up (the port was taken meanwhile).
    fn spawn(dir: &std::path::Path, index: usize) -> Option<Node> {
        let port = free_pair();
        let data = dir.join(format!("node{index}"));
        std::fs::create_dir_all(&data).ok()?;
        let process = Watched::spawn(
            ["--port", &port.to_string(), "--bind", "127.0.0.1"]
                .into_iter()
                .chain(["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"])
                .chain(["--save", "", "--appendonly", "no", "--dir"])
                .map(std::ffi::OsString::from)
                .chain([data.into_os_string()]),
        )?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if process.exited() {
                return None; // the port was taken meanwhile
            }
            if super::serves(port, process.pid()) {
                return Some(Node {
                    _process: process,
                    port,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl RedisCluster {
    /// Starts three masters, splits the slots between them, joins them
    /// and waits until every node reports `cluster_state:ok`; panics with an
    /// actionable message if that does not happen.
    pub fn start() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = super::watchdog::scratch()
            .join(format!("cluster-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        let mut nodes = Vec::new();
        for index in 0..3 {
            let node = (0..10)
                .find_map(|_| Node::spawn(&dir, index))
                .expect("redis-server did not start on a free loopback port");
            nodes.push(node);
        }
        let cluster = RedisCluster { nodes, dir };
        cluster.form();
        cluster
    }

    fn form(&self) {
        let ranges = [("0", "5460"), ("5461", "10922"), ("10923", "16383")];
        for (node, (from, to)) in self.nodes.iter().zip(ranges) {
            command(node.port, &["CLUSTER", "ADDSLOTSRANGE", from, to])
                .expect("assign hash slots to a test cluster node");
        }
        let first = self.nodes[0].port;
        for node in &self.nodes[1..] {
            command(
                first,
                &["CLUSTER", "MEET", "127.0.0.1", &node.port.to_string()],
            )
            .expect("join the test cluster's nodes");
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let ready = self.nodes.iter().all(|n| {
                let text = info(n.port);
                text.contains("cluster_state:ok") && text.contains("cluster_known_nodes:3")
            });
            if ready {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the test Redis Cluster did not reach cluster_state:ok within 30 s");
    }

    /// The cluster every test of this process shares, started on first use.
    pub fn shared() -> &'static RedisCluster {
        SHARED.get_or_init(RedisCluster::start)
    }

    /// A cluster for one test alone, holding no key: for tests that cannot
    /// keep their keys under a prefix of their own (a program run on the
    /// cluster's URL). It is one a test before this one gave back, emptied
    /// (`FLUSHALL` on every master), or a new one: a test binary starts as
    /// many clusters as its tests use at once, not one per test. Like
    /// [`shared`](Self::shared), the clusters are stopped when the process
    /// ends. A test that changes more than keys (ACL users, the slots)
    /// starts a cluster of its own instead.
    pub fn lend() -> LentCluster {
        loop {
            let pooled = POOL.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let Some(cluster) = pooled else {
                return LentCluster(Box::leak(Box::new(RedisCluster::start())));
            };
            // One that cannot be emptied (a node a test stopped) is not
            // lent again.
            if cluster.flush_all() {
                return LentCluster(cluster);
            }
        }
    }

    /// `FLUSHALL` on every master; whether all of them did it.
    fn flush_all(&self) -> bool {
        self.nodes.iter().all(|node| {
            redis::Client::open(format!("redis://127.0.0.1:{}", node.port))
                .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
                .and_then(|mut conn| redis::cmd("FLUSHALL").arg("SYNC").query::<()>(&mut conn))
                .is_ok()
        })
    }

    /// Waits until every write stuck before this call is overdue: its
    /// deadline, stamped by a node at most one `lease` after that node's clock
    /// reads now, plus the margin of one more lease, has passed on the nodes'
    /// clock (their `TIME`, which recovery goes by) and on this process's
    /// (which a write meeting its holds goes by). Polls the clocks rather than
    /// sleeping a fixed time, so it holds however slowly the machine runs; a
    /// slow node is asked again.
    pub async fn overdue(&self, lease: Duration) {
        let lease = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX / 4);
        let client = redis::Client::open(self.seeds()[0].as_str()).expect("a seed URL");
        let limit = std::time::Instant::now() + Duration::from_secs(120);
        let (mut conn, mut due) = (None, None);
        loop {
            assert!(
                std::time::Instant::now() < limit,
                "the test cluster's clock could not be read"
            );
            if conn.is_none() {
                conn = client.get_multiplexed_async_connection().await.ok();
            }
            let node: Option<(u64, u64)> = match conn.as_mut() {
                Some(c) => redis::cmd("TIME").query_async(c).await.ok(),
                None => None,
            };
            match node {
                Some((s, us)) => {
                    let node = s * 1000 + us / 1000;
                    let due = *due.get_or_insert(node + 2 * lease);
                    let here = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_millis();
                    if node > due && here > u128::from(due) {
                        return;
                    }
                }
                None => conn = None,
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Adds a replica of the master on port `master`, waits until it has
    /// copied the master's data, and returns its port. [`seeds`](Self::seeds)
    /// and [`ports`](Self::ports) list it from then on.
    pub fn add_replica(&mut self, master: u16) -> u16 {
        let node = (0..10)
            .find_map(|_| Node::spawn(&self.dir, self.nodes.len()))
            .expect("redis-server did not start on a free loopback port");
        let port = node.port;
        self.nodes.push(node);
        command(
            self.nodes[0].port,
            &["CLUSTER", "MEET", "127.0.0.1", &port.to_string()],
        )
        .expect("join a replica to the test cluster");
        let master_id = node_id(master);
        // The node must know the master before it can replicate it.
        until("the replica to join the test cluster", || {
            command(port, &["CLUSTER", "REPLICATE", &master_id]).is_ok()
        });
        until("the replica to copy its master", || {
            text(command(port, &["INFO", "replication"])).contains("master_link_status:up")
        });
        port
    }

    /// Fails the master over to its replica on port `replica` (`CLUSTER
    /// FAILOVER`, as an operator would) and waits until every node takes
    /// the replica for the master and the cluster is `ok`.
    pub fn fail_over(&self, replica: u16) {
        command(replica, &["CLUSTER", "FAILOVER"]).expect("start a failover");
        let id = node_id(replica);
        until("the failover to complete on every node", || {
            self.nodes.iter().all(|n| {
                let nodes = text(command(n.port, &["CLUSTER", "NODES"]));
                let promoted = nodes.lines().any(|line| {
                    line.starts_with(id.as_str())
                        && line.split(' ').nth(2).is_some_and(|f| f.contains("master"))
                });
                promoted && info(n.port).contains("cluster_state:ok")
            })
        });
    }

    /// A `redis://127.0.0.1:PORT` seed URL per node.
    pub fn seeds(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}", n.port))
            .collect()
    }

    /// The nodes' ports: the masters', then any replicas'.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// Removes every key of `store` (its prefix's keys and its counters'
    /// change stamps, [`RedisClusterStore::owns`]) from every master: what
    /// a test leaves on the shared cluster would otherwise slow every later
    /// scan of it (a `verify`, a sweep) by the keys of all the tests
    /// before. One `SCAN` of each master, which holds only the keys of the
    /// tests still running. Best effort: a node that does not answer keeps
    /// its keys.
    fn remove_keys_of(&self, store: &RedisClusterStore) {
        if store.key_prefix().is_empty() {
            return; // never everyone's keys
        }
        for node in &self.nodes {
            let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{}", node.port)) else {
                continue;
            };
            let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(2)) else {
                continue;
            };
            let mut cursor = 0u64;
            loop {
                let page: redis::RedisResult<(u64, Vec<Vec<u8>>)> = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(1000)
                    .query(&mut conn);
                let Ok((next, keys)) = page else { break };
                // One key per command: the keys hash to many slots.
                let mut pipe = redis::pipe();
                for key in keys
                    .iter()
                    .filter(|k| std::str::from_utf8(k).is_ok_and(|k| store.owns(k)))
                {
                    pipe.cmd("UNLINK").arg(key).ignore();
                }
                if pipe.query::<()>(&mut conn).is_err() || next == 0 {
                    break;
                }
                cursor = next;
            }
        }
    }

    /// A store on this cluster under a fresh key prefix, with `lease`.
    pub async fn store(&self, lease: Duration) -> RedisClusterStore {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let prefix = format!("t{}/", NEXT.fetch_add(1, Ordering::Relaxed));
        let seeds = self.seeds();
        let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
        RedisClusterStore::builder(&seeds)
            .key_prefix(&prefix)
            .lease(lease)
            .connect()
            .await
            .expect("connect to the test cluster")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A [`RedisClusterStore`] on the shared test cluster, under a key prefix
/// of its own; time passes for real.
///
/// [`start`](ClusterHarness::start) puts the keys the suite names
/// ([`Harness::key`]) in one hash slot, so its batches commit as one
/// script; [`spread`](ClusterHarness::spread) leaves them to hash where
/// they fall, so its batches cross slots and run the cross-slot protocol.
#[derive(Debug)]
pub struct ClusterHarness {
    store: RedisClusterStore,
    tag: Option<String>,
}

impl ClusterHarness {
    /// The default lease of test stores: long enough for a slow machine.
    const LEASE: Duration = Duration::from_secs(3);

    async fn open(tagged: bool, lease: Duration) -> Self {
        let cluster = tokio::task::spawn_blocking(RedisCluster::shared)
            .await
            .expect("start the test cluster");
        let store = cluster.store(lease).await;
        let tag = tagged.then(|| format!("{:08x}", fastrand::u32(..)));
        ClusterHarness { store, tag }
    }

    /// A harness whose named keys share one slot.
    pub async fn start() -> Self {
        Self::open(true, Self::LEASE).await
    }

    /// A harness whose named keys spread over slots.
    pub async fn spread() -> Self {
        Self::open(false, Self::LEASE).await
    }

    /// A harness whose store has `lease` (for tests of crashed writes).
    pub async fn with_lease(lease: Duration) -> Self {
        Self::open(false, lease).await
    }
}

impl Drop for ClusterHarness {
    /// The harness's keys go with it (see `RedisCluster::remove_keys_of`).
    fn drop(&mut self) {
        if let Some(cluster) = SHARED.get() {
            cluster.remove_keys_of(&self.store);
        }
    }
}

impl Harness for ClusterHarness {
    type Store = RedisClusterStore;
    fn store(&self) -> RedisClusterStore {
        self.store.clone()
    }
    async fn pass(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }
    fn key(&self, name: &str) -> String {
        match &self.tag {
            Some(tag) => format!("{{{tag}}}{name}"),
            None => name.to_owned(),
        }
    }
}
