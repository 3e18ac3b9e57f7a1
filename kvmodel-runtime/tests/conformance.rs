//! The shared conformance suite on every backend.

mod memory {
    kvmodel_runtime::conformance_tests!(async {
        kvmodel_runtime::conformance::MemoryHarness::new()
    });
}

mod redb {
    kvmodel_runtime::conformance_tests!(async { kvmodel_runtime::conformance::RedbHarness::new() });
}

mod redis {
    kvmodel_runtime::conformance_tests!(kvmodel_runtime::conformance::RedisHarness::start());
}

mod dynamodb {
    kvmodel_runtime::conformance_tests!(kvmodel_runtime::conformance::DynamoHarness::start());
}

/// A store that implements only the required methods, so the trait's
/// default methods (`collection_len`, `counter`, `commit_after_read`,
/// `get_via`, `range_values`) are what the cases meet.
mod defaults {
    use std::time::Duration;

    use kvmodel_runtime::conformance::{self, Harness};
    use kvmodel_runtime::store::clock::ManualClock;
    use kvmodel_runtime::{Batch, MemoryStore, Outcome, RangeRequest, RangeResult, Result, Store};

    #[derive(Debug, Clone)]
    struct Plain(MemoryStore);

    impl Store for Plain {
        fn backend(&self) -> &'static str {
            "plain"
        }
        async fn commit(&self, batch: Batch) -> Result<Outcome> {
            self.0.commit(batch).await
        }
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
            self.0.get(key).await
        }
        async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
            self.0.get_many(keys).await
        }
        async fn range(&self, key: &str, req: RangeRequest) -> Result<RangeResult> {
            self.0.range(key, req).await
        }
    }

    struct PlainHarness(Plain, ManualClock);

    impl Harness for PlainHarness {
        type Store = Plain;
        fn store(&self) -> Plain {
            self.0.clone()
        }
        async fn pass(&self, d: Duration) {
            self.1.advance(d);
        }
    }

    fn plain() -> PlainHarness {
        let clock = ManualClock::new(1_700_000_000_000);
        PlainHarness(Plain(MemoryStore::with_clock(clock.clone())), clock)
    }

    #[tokio::test]
    async fn collection_len_by_default_walks_the_collection() {
        conformance::collection_len_counts_live_members(&plain()).await;
    }

    #[tokio::test]
    async fn planned_writes_by_default_read_then_commit() {
        conformance::commit_after_read_plans_one_write(&plain()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_planned_writes_by_default_lose_nothing() {
        conformance::concurrent_planned_writes_lose_nothing(&plain()).await;
    }

    #[tokio::test]
    async fn get_via_by_default_reads_twice() {
        conformance::get_via_follows_one_key(&plain()).await;
    }

    #[tokio::test]
    async fn range_values_by_default_ranges_then_reads() {
        conformance::range_values_reads_each_members_value(&plain()).await;
    }

    #[tokio::test]
    async fn range_values_with_by_default_reads_range_values() {
        conformance::range_values_with_lends_each_members_value(&plain()).await;
    }

    #[tokio::test]
    async fn get_with_by_default_reads_get() {
        conformance::get_with_lends_the_value(&plain()).await;
    }
}
