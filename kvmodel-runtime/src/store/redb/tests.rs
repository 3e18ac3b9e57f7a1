//! A commit that fails once redb has begun it: its outcome is unknown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use redb::StorageBackend;
use redb::backends::InMemoryBackend;

use super::RedbStore;
use crate::error::Error;
use crate::store::Store;
use crate::store::batch::Batch;
use crate::store::clock::SystemClock;

/// An in-memory file whose writes (`write`, `sync_data`) fail once armed.
#[derive(Debug)]
struct Flaky {
    inner: InMemoryBackend,
    fail: Arc<AtomicBool>,
}

impl Flaky {
    fn check(&self) -> std::io::Result<()> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the disk is gone"));
        }
        Ok(())
    }
}

impl StorageBackend for Flaky {
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.check()?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> std::io::Result<()> {
        self.check()?;
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.check()?;
        self.inner.write(offset, data)
    }
}

#[tokio::test]
async fn a_commit_redb_fails_is_of_unknown_outcome() {
    let fail = Arc::new(AtomicBool::new(false));
    let backend = Flaky {
        inner: InMemoryBackend::new(),
        fail: fail.clone(),
    };
    let store = RedbStore::open_database(
        std::path::Path::new("flaky.redb"),
        SystemClock,
        std::panic::AssertUnwindSafe(move || redb::Builder::new().create_with_backend(backend)),
    )
    .unwrap();
    let mut b = Batch::new();
    b.put("k", b"v".to_vec(), None);
    assert!(store.commit(b).await.unwrap().is_applied());

    fail.store(true, Ordering::SeqCst);
    let mut b = Batch::new();
    b.put("k2", b"v".to_vec(), None);
    match store.commit(b).await {
        Err(Error::OutcomeUnknown {
            backend: "redb", ..
        }) => {}
        other => panic!("a failed commit is reported as {other:?}"),
    }
}
