//! Derive-generated repositories on the in-memory, embedded and Redis stores:
//! each upkeep case runs on all three.

mod cases;
mod model;

macro_rules! suite {
    ($harness:expr) => {
        suite!(@each $harness;
            create_writes_every_entry, unique_conflict_leaves_nothing,
            update_moves_claims_members_and_counters, delete_removes_everything,
            sums_adjust_by_difference, relation_pages_in_order,
            ttl_expires_record_claims_and_members, lazy_migration_and_since,
            migration_from_chain, future_version_and_garbage_are_errors,
            unique_race_has_one_winner, contended_modify_loses_nothing,
            separators_never_collide,
        );
    };
    (@each $harness:expr; $($case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            let harness = $harness.await;
            crate::cases::$case(&harness).await;
        }
    )*};
}

mod memory {
    suite!(async { kvmodel::conformance::MemoryHarness::new() });
}

mod redb {
    use std::time::Duration;

    use kvmodel::RedbStore;
    use kvmodel::clock::ManualClock;
    use kvmodel::conformance::Harness;

    pub struct RedbHarness {
        _dir: tempfile::TempDir,
        store: RedbStore,
        clock: ManualClock,
    }

    impl RedbHarness {
        pub fn new() -> Self {
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

    suite!(async { RedbHarness::new() });
}

mod redis {
    suite!(kvmodel::conformance::RedisHarness::start());
}
