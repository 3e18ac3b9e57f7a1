//! Stores, the `kvmodel` binary, and version-1 shop users.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use kvmodel::{AnyStore, KvEntity, Timestamp};
use kvmodel_runtime::conformance::{
    DynamoEmulator, LentCluster, RedisCluster, RedisServer, TlsRedisServer,
};
use serde::{Deserialize, Serialize};

/// The store a case runs on: a redb file (which one process opens at a
/// time: the case closes its handle before running the command) or a Redis
/// server of its own.
pub enum Backend {
    Redb(tempfile::TempDir),
    Redis(RedisServer),
    /// A cluster of its own while the case runs, emptied before.
    Cluster(LentCluster),
    /// A server that speaks only TLS, with a test CA; its URL ends in
    /// `#insecure` (the CA is not among the system's roots).
    Tls(TlsRedisServer),
    /// A DynamoDB emulator served by the test's runtime, with the table
    /// `shop`.
    Dynamo(DynamoEmulator),
}

impl Backend {
    pub fn redb() -> Backend {
        Backend::Redb(tempfile::tempdir().unwrap())
    }

    pub fn redis() -> Backend {
        Backend::Redis(RedisServer::start())
    }

    pub fn cluster() -> Backend {
        Backend::Cluster(RedisCluster::lend())
    }

    pub fn tls() -> Backend {
        Backend::Tls(TlsRedisServer::start())
    }

    pub async fn dynamo() -> Backend {
        let emulator = DynamoEmulator::start().await;
        emulator.store("shop").await;
        Backend::Dynamo(emulator)
    }

    pub fn url(&self) -> String {
        match self {
            Backend::Cluster(c) => {
                let seeds: Vec<String> =
                    c.ports().iter().map(|p| format!("127.0.0.1:{p}")).collect();
                format!("redis+cluster://{}", seeds.join(","))
            }
            Backend::Redb(dir) => format!("redb:{}", dir.path().join("shop.redb").display()),
            Backend::Redis(server) => server.url(),
            Backend::Tls(server) => format!("{}#insecure", server.url()),
            Backend::Dynamo(emulator) => emulator.url("shop"),
        }
    }

    /// A handle on the store; drop it before running a command on redb.
    pub async fn open(&self) -> AnyStore {
        AnyStore::open(&self.url()).await.unwrap()
    }

    /// Whether the store keeps a discovery set of each entity's records
    /// (`NS:ENTITY#all`): the ordered stores range over record keys instead.
    pub fn keeps_discovery_set(&self) -> bool {
        !matches!(self, Backend::Redb(_))
    }

    pub fn is_redis(&self) -> bool {
        matches!(
            self,
            Backend::Redis(_) | Backend::Cluster(_) | Backend::Tls(_)
        )
    }
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kvmodel"));
    c.args(args).current_dir(repo()).env("NO_COLOR", "1");
    c
}

/// Runs `kvmodel ARGS` to the end.
pub fn kvmodel(args: &[&str]) -> Output {
    command(args).output().unwrap()
}

/// Runs `kvmodel ARGS` to the end with the variable `name` set to `value`,
/// or removed when `value` is `None`.
pub fn kvmodel_with(args: &[&str], name: &str, value: Option<&Path>) -> Output {
    let mut c = command(args);
    match value {
        Some(value) => c.env(name, value),
        None => c.env_remove(name),
    };
    c.output().unwrap()
}

/// Starts `kvmodel ARGS` in the background.
pub fn spawn(args: &[&str]) -> Child {
    command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--schema schemas/shop.yaml --store URL` and more.
pub fn ops<'a>(command: &'a str, url: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![command, "--schema", "schemas/shop.yaml", "--store", url];
    args.extend_from_slice(more);
    args
}

pub fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// The shop's user as version 1 of the schema wrote it: `full_name`, a
/// flag since removed, no status (its counter arrived in version 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "user:{id}", version = 1)]
#[kv(counter(name = "signups_per_day", group_by(day(created_at))))]
pub struct OldUser {
    pub id: String,
    #[kv(unique, normalize = "lowercase")]
    pub email: String,
    pub full_name: String,
    pub legacy_flag: bool,
    pub created_at: Timestamp,
}

/// Version-1 users `u0`… written by version-1 code.
pub async fn old_users(store: &AnyStore, n: usize) {
    let repo = OldUserRepo::new(store.clone());
    for i in 0..n {
        repo.create(&OldUser {
            id: format!("u{i}"),
            email: format!("U{i}@Example.com"),
            full_name: format!("User {i}"),
            legacy_flag: i.is_multiple_of(2),
            created_at: ts("2026-03-01T10:00:00Z"),
        })
        .await
        .unwrap();
    }
}
