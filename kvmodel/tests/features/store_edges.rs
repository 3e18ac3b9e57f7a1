//! Generated repositories on a store chosen at run time, and what they do
//! when a commit's outcome is unknown: they never retry it themselves, and
//! a retry by the caller behaves as `Error::OutcomeUnknown` documents.

use std::sync::atomic::{AtomicU32, Ordering};

use kvmodel::conformance::{FaultyStore, RedisServer};
use kvmodel::{AnyStore, Error, KvEntity, MemoryStore, PageRequest};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "e", key = "doc:{id}")]
#[kv(counter(name = "by_owner", group_by(owner)))]
struct Doc {
    id: String,
    #[kv(unique)]
    title: String,
    owner: String,
    rev: u64,
}

fn doc(id: &str, title: &str) -> Doc {
    Doc {
        id: id.into(),
        title: title.into(),
        owner: "ada".into(),
        rev: 0,
    }
}

async fn exercise(store: AnyStore) {
    let docs = DocRepo::new(store);
    docs.create(&doc("1", "One")).await.unwrap();
    docs.create(&doc("2", "Two")).await.unwrap();
    assert_eq!(docs.find_by_title("Two").await.unwrap().unwrap().id, "2");
    docs.modify("1", |d| d.owner = "bob".into()).await.unwrap();
    assert_eq!(docs.count_by_owner("bob").await.unwrap(), 1);
    assert!(docs.delete("2").await.unwrap());
    let page = docs.list_all(PageRequest::new(10)).await.unwrap();
    assert_eq!(page.items.len(), 1);
}

#[tokio::test]
async fn generated_repositories_run_on_any_store() {
    exercise(AnyStore::open("memory:").await.unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("docs.redb").display());
    exercise(AnyStore::open(&url).await.unwrap()).await;
    let server = RedisServer::start();
    exercise(AnyStore::open(&server.url()).await.unwrap()).await;
}

fn unknown<T: std::fmt::Debug>(result: kvmodel::Result<T>) {
    let err = result.unwrap_err();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    assert!(err.to_string().contains("may have been applied"), "{err}");
}

#[tokio::test]
async fn an_unknown_outcome_is_reported_not_retried() {
    let store = FaultyStore::new(MemoryStore::new());
    let docs = DocRepo::new(store.clone());

    // create: applied, reported unknown; a retry finds the record.
    store.lose_next_reply();
    unknown(docs.create(&doc("1", "One")).await);
    assert!(matches!(
        docs.create(&doc("1", "One")).await,
        Err(Error::AlreadyExists { .. })
    ));

    // modify: the closure ran once and its change was applied once.
    let calls = AtomicU32::new(0);
    store.lose_next_reply();
    unknown(
        docs.modify("1", |d| {
            calls.fetch_add(1, Ordering::SeqCst);
            d.rev += 1;
        })
        .await,
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(docs.get("1").await.unwrap().unwrap().rev, 1);

    // update: a retry writes the same record again, harmlessly.
    let mut moved = docs.get("1").await.unwrap().unwrap();
    moved.owner = "bob".into();
    store.lose_next_reply();
    unknown(docs.update(&moved).await);
    docs.update(&moved).await.unwrap();
    assert_eq!(docs.count_by_owner("bob").await.unwrap(), 1);
    assert_eq!(docs.count_by_owner("ada").await.unwrap(), 0);

    // delete: a retry finds nothing left to delete.
    store.lose_next_reply();
    unknown(docs.delete("1").await);
    assert!(!docs.delete("1").await.unwrap());
    assert_eq!(docs.count_by_owner("bob").await.unwrap(), 0);
    assert!(docs.find_by_title("One").await.unwrap().is_none());
}

/// The process that writes in [`a_killed_burst_loses_no_acknowledged_create`]:
/// 32 tasks create records on the redb file named by the environment, each
/// printing `acked ID` once its create returned, until it is killed.
async fn burst_until_killed(path: &str) {
    let store = kvmodel::RedbStore::open(path).unwrap();
    let mut tasks = Vec::new();
    for t in 0..32 {
        let docs = DocRepo::new(store.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                let id = format!("{t}-{i}");
                let mut d = doc(&id, &format!("title {id}"));
                d.owner = format!("o{}", i % 3);
                docs.create(&d).await.unwrap();
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                writeln!(out, "acked {id}").unwrap();
                out.flush().unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Concurrent creates on the embedded store commit in groups that share
/// one durable transaction; a caller is told "created" only once that
/// transaction is on disk. Killed (SIGKILL) in the middle of a burst of 32
/// writers, the process loses no create it acknowledged, and the file
/// reopens whole: `verify` finds no drift.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_burst_loses_no_acknowledged_create() {
    const CHILD: &str = "KVMODEL_TEST_BURST_FILE";
    if let Ok(path) = std::env::var(CHILD) {
        burst_until_killed(&path).await;
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("burst.redb");
    // This test's name in its binary: its module path without the crate.
    let name = module_path!()
        .split_once("::")
        .map_or(String::new(), |(_, module)| format!("{module}::"))
        + "a_killed_burst_loses_no_acknowledged_create";
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture"])
        .env(CHILD, &path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = acked.clone();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(id) = line.strip_prefix("acked ") {
                seen.lock().unwrap().push(id.to_owned());
            }
        }
    });
    // Let the burst run (however long the child takes to start on a loaded
    // machine), then kill it mid-flight.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while acked.lock().unwrap().len() <= 64 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap();
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert!(
        acked.len() > 32,
        "only {} creates before the kill",
        acked.len()
    );

    let docs = DocRepo::new(kvmodel::RedbStore::open(&path).unwrap());
    for id in &acked {
        assert!(
            docs.get(id).await.unwrap().is_some(),
            "create {id} was acknowledged, then lost ({} acknowledged)",
            acked.len()
        );
    }
    let drift = docs.verify(500).await.unwrap();
    assert!(drift.is_clean(), "{drift:?}");
    eprintln!(
        "{} creates acknowledged before the kill, all there",
        acked.len()
    );
}
