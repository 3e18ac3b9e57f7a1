//! Derived data never lies about the records: listings check every member
//! against its record, expiry reaches indexes and counters, one corrupt
//! record stops nothing, maintenance finds orphans and, beside live writers
//! or with an older schema, adds no drift. Every case runs on the
//! in-memory, embedded and Redis stores.

mod cases;
mod live;
mod matchers;
mod model;

use cases::*;
use live::*;

// The cases after `real_time:` wait out a 3 s TTL (3.2–6.6 s of real time
// on Redis and Redis Cluster): there they run at once, so the waits overlap.
kvmodel_runtime::on_every_backend!(
    stale_members_are_dropped_from_listings,
    corrupt_record_stops_nothing,
    oversized_sum_from_old_code_is_deletable,
    reconcile_beside_writers_adds_no_drift,
    maintenance_changes_nothing_it_cannot_judge,
    a_counter_made_again_is_judged_once_its_old_stamp_has_gone,
    a_walk_trusts_stamps_for_half_their_afterlife,
    verify_beside_rewrites_reports_no_receipt;
    real_time:
    recreated_session_leaves_its_old_user,
    expiry_reaches_counters_and_collections,
    orphans_are_found_and_repaired,
    writes_sweep_in_small_steps,
    a_sweep_ends_past_receipts_it_cannot_read,
    concurrent_writes_keep_receipts_true,
    records_without_receipts_are_repaired,
    every_write_path_keeps_receipts,
);
