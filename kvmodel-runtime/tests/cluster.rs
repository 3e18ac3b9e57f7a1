//! The shared conformance suite on a Redis Cluster: once with every test's
//! keys in one hash slot (one script per batch, as on one server), once with
//! them spread over the slots (every batch of several keys runs the
//! cross-slot protocol).

mod one_slot {
    kvmodel_runtime::conformance_tests!(kvmodel_runtime::conformance::ClusterHarness::start());
}

mod across_slots {
    kvmodel_runtime::conformance_tests!(kvmodel_runtime::conformance::ClusterHarness::spread());
}

