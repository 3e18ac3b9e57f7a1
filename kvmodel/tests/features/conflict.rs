//! Optimistic writes give up with `Error::Conflict` after bounded retries when
//! another writer changes the record every time, and write nothing then.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use kvmodel::{Batch, Error, KvEntity, MemoryStore, Outcome, RangeRequest, RangeResult, Store};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "c", key = "doc:{id}")]
#[kv(counter(name = "by_owner", group_by(owner)))]
struct Doc {
    id: String,
    owner: String,
    rev: u64,
}

/// A store on which a rival writer bumps `rev` of the record right after
/// every read, so every conditional commit finds it changed.
#[derive(Clone, Debug)]
struct Rival {
    inner: MemoryStore,
    reads: Arc<AtomicU32>,
}

impl Store for Rival {
    fn backend(&self) -> &'static str {
        "rival"
    }

    async fn commit(&self, batch: Batch) -> kvmodel::Result<Outcome> {
        self.inner.commit(batch).await
    }

    async fn get(&self, key: &str) -> kvmodel::Result<Option<Vec<u8>>> {
        let value = self.inner.get(key).await?;
        if key.starts_with("c:doc:") {
            let n = self.reads.fetch_add(1, Ordering::SeqCst);
            let mut b = Batch::new();
            let bumped = format!(
                r#"{{"v":1,"d":{{"id":"d","owner":"o","rev":{}}}}}"#,
                1000 + n
            );
            b.put(key, bumped.into_bytes(), None);
            let _ = self.inner.commit(b).await?;
        }
        Ok(value)
    }

    async fn get_many(&self, keys: &[String]) -> kvmodel::Result<Vec<Option<Vec<u8>>>> {
        self.inner.get_many(keys).await
    }

    async fn range(&self, key: &str, req: RangeRequest) -> kvmodel::Result<RangeResult> {
        self.inner.range(key, req).await
    }
}

#[tokio::test]
async fn modify_gives_up_with_conflict_and_writes_nothing() {
    let inner = MemoryStore::new();
    DocRepo::new(inner.clone())
        .create(&Doc {
            id: "d".into(),
            owner: "o".into(),
            rev: 0,
        })
        .await
        .unwrap();
    let rival = Rival {
        inner: inner.clone(),
        reads: Arc::default(),
    };
    let repo = DocRepo::new(rival.clone());
    let err = repo
        .modify("d", |d| d.owner = "other".into())
        .await
        .unwrap_err();
    match &err {
        Error::Conflict { attempts, key, .. } => {
            assert!(*attempts >= 10, "at least 10 attempts, made {attempts}");
            assert_eq!(key, "c:doc:d");
        }
        other => panic!("expected Conflict, got {other}"),
    }
    assert!(err.to_string().contains("kept changing"), "{err}");
    assert_eq!(
        rival.reads.load(Ordering::SeqCst),
        kvmodel_runtime::__private::MAX_ATTEMPTS
    );
    let plain = DocRepo::new(inner);
    assert_eq!(
        plain.get("d").await.unwrap().unwrap().owner,
        "o",
        "the rival's writes only"
    );
    assert_eq!(
        plain.count_by_owner("other").await.unwrap(),
        0,
        "no counter moved"
    );
    assert_eq!(plain.count_by_owner("o").await.unwrap(), 1);
}
