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
