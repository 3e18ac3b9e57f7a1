//! The modelling patterns beyond one-to-many listings and plain counters,
//! each on the in-memory, embedded and Redis stores.

mod size;

use size::*;

kvmodel_runtime::on_every_backend!(
    a_record_at_the_limit_is_stored,
    a_record_over_the_limit_writes_nothing,
    an_update_over_the_limit_leaves_the_stored_record,
    a_bulk_create_with_one_large_record_writes_nothing,
);
