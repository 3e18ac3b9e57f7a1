//! Generated repositories on a store chosen at run time, and what they do
//! when a commit's outcome is unknown: they never retry it themselves, and
//! a retry by the caller behaves as `Error::OutcomeUnknown` documents.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kvmodel::conformance::RedisServer;
use kvmodel::{
    AnyStore, Batch, Error, KvEntity, MemoryStore, Outcome, PageRequest, RangeRequest, RangeResult,
    Store,
};
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

/// A store that applies the next commit but loses its reply.
#[derive(Clone, Debug, Default)]
struct LostReply {
    inner: MemoryStore,
    lose_next: Arc<AtomicBool>,
}

impl LostReply {
    fn lose_next_reply(&self) {
        self.lose_next.store(true, Ordering::SeqCst);
    }
}

impl Store for LostReply {
    fn backend(&self) -> &'static str {
        "lost-reply"
    }

    async fn commit(&self, batch: Batch) -> kvmodel::Result<Outcome> {
        let outcome = self.inner.commit(batch).await?;
        if self.lose_next.swap(false, Ordering::SeqCst) {
            return Err(Error::OutcomeUnknown {
                backend: "lost-reply",
                source: "the reply was lost".into(),
            });
        }
        Ok(outcome)
    }

    async fn get(&self, key: &str) -> kvmodel::Result<Option<Vec<u8>>> {
        self.inner.get(key).await
    }

    async fn get_many(&self, keys: &[String]) -> kvmodel::Result<Vec<Option<Vec<u8>>>> {
        self.inner.get_many(keys).await
    }

    async fn range(&self, key: &str, req: RangeRequest) -> kvmodel::Result<RangeResult> {
        self.inner.range(key, req).await
    }
}

fn unknown<T: std::fmt::Debug>(result: kvmodel::Result<T>) {
    let err = result.unwrap_err();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    assert!(err.to_string().contains("may have been applied"), "{err}");
}

#[tokio::test]
async fn an_unknown_outcome_is_reported_not_retried() {
    let store = LostReply::default();
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
