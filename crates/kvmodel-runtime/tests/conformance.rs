//! The shared conformance suite on the in-memory and embedded backends.

mod memory {
    kvmodel_runtime::conformance_tests!(async {
        kvmodel_runtime::conformance::MemoryHarness::new()
    });
}

mod redb {
    use std::time::Duration;

    use kvmodel_runtime::RedbStore;
    use kvmodel_runtime::clock::ManualClock;
    use kvmodel_runtime::conformance::Harness;

    struct RedbHarness {
        _dir: tempfile::TempDir,
        store: RedbStore,
        clock: ManualClock,
    }

    impl RedbHarness {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let clock = ManualClock::new(1_700_000_000_000);
            let store =
                RedbStore::open_with_clock(dir.path().join("t.redb"), clock.clone()).unwrap();
            RedbHarness {
                _dir: dir,
                store,
                clock,
            }
        }
    }

    impl Harness for RedbHarness {
        type Store = RedbStore;
        fn store(&self) -> RedbStore {
            self.store.clone()
        }
        async fn pass(&self, d: Duration) {
            self.clock.advance(d);
        }
    }

    kvmodel_runtime::conformance_tests!(async { RedbHarness::new() });
}

mod redis {
    kvmodel_runtime::conformance_tests!(kvmodel_runtime::conformance::RedisHarness::start());
}
