//! Derive-generated repositories on the in-memory, embedded and Redis stores:
//! each upkeep case runs on all three.

mod cases;
mod model;

use cases::*;

kvmodel_runtime::on_every_backend!(
    create_writes_every_entry,
    unique_conflict_leaves_nothing,
    update_moves_claims_members_and_counters,
    delete_removes_everything,
    sums_adjust_by_difference,
    relation_pages_in_order,
    ttl_expires_record_claims_and_members,
    lazy_migration_and_since,
    migration_from_chain,
    future_version_and_garbage_are_errors,
    unique_race_has_one_winner,
    contended_modify_loses_nothing,
    separators_never_collide,
    maintenance_migrates_verifies_and_repairs,
    records_are_listed_by_their_keys_where_keys_are_ordered,
);
