//! The modelling patterns beyond one-to-many listings and plain counters,
//! each on the in-memory, embedded and Redis stores.

mod buckets;
mod compress;
mod keep;
mod kept;
mod link_expiry;
mod links;
mod on_delete;
mod protobuf;
mod shards;
mod size;
mod trees;
mod window;

use buckets::*;
use compress::*;
use keep::*;
use kept::*;
use link_expiry::*;
use links::*;
use on_delete::*;
use protobuf::*;
use shards::*;
use size::*;
use trees::*;

// The cases after `real_time:` wait for records to expire (real time on
// Redis and Redis Cluster): there they run at once, so the waits overlap.
kvmodel_runtime::on_every_backend!(
    a_record_just_below_the_threshold_is_stored_as_it_is,
    a_record_at_the_threshold_is_stored_compressed,
    old_records_read_after_the_codec_changes,
    max_size_applies_before_compression,
    forged_compressed_values_are_errors_naming_the_key,
    a_record_at_the_limit_is_stored,
    a_record_over_the_limit_writes_nothing,
    an_update_over_the_limit_leaves_the_stored_record,
    a_bulk_create_with_one_large_record_writes_nothing,
    a_hot_sharded_counter_is_exact_under_concurrent_creates,
    a_sharded_read_is_one_store_call,
    verify_and_reconcile_treat_the_shards_as_one_counter,
    a_counter_that_becomes_sharded_keeps_its_count,
    the_model_walk_treats_the_shards_as_one_counter,
    a_sharded_sum_at_the_edge_is_refused_never_unreadable,
    a_capped_relation_keeps_the_newest,
    an_update_trims_the_collection_it_moves_into,
    concurrent_writers_leave_exactly_the_greatest,
    verify_reports_a_lost_kept_entry_and_reconcile_restores_it,
    trim_keeps_the_greatest_members,
    each_day_lists_its_own_records,
    bucket_keys_are_distinct_per_bucket,
    an_update_moves_the_entry_to_its_new_bucket,
    a_unique_bucket_claims_one_value_per_bucket,
    link_writes_both_directions_and_both_counts,
    listings_page_in_key_order,
    linking_a_missing_record_is_refused_and_writes_nothing,
    deleting_an_end_removes_its_collection_and_listings_skip_it,
    a_stale_entry_is_unlinked_exactly_once,
    composite_and_self_links_name_each_end_by_its_key,
    concurrent_links_and_unlinks_agree_exactly,
    link_operations_take_the_documented_store_calls,
    verify_judges_link_entries_and_counts_and_reconcile_repairs_them,
    reconcile_removes_the_edge_of_a_pair_whose_records_are_both_gone,
    the_model_walk_agrees_on_every_link_key,
    a_walk_beside_an_owner_made_again_leaves_its_count_true,
    a_purged_record_leaves_no_links_to_come_back,
    a_child_of_a_missing_parent_is_refused,
    a_contended_parent_condition_is_retried_not_refused,
    restrict_refuses_a_parent_with_children,
    cascade_deletes_children_and_grandchildren_with_their_upkeep,
    a_cascade_that_dies_midway_lies_nowhere_and_finishes_when_run_again,
    a_cascade_removes_the_links_of_the_children_it_deletes,
    a_child_created_during_a_restricted_delete_never_outlives_its_parent,
    a_deep_chain_deletes_without_recursion,
    a_wide_fan_out_deletes,
    cycles_delete_every_record_of_them,
    a_record_cannot_become_its_own_parent,
    a_record_stored_as_its_own_parent_still_deletes,
    a_cascade_cut_short_finishes_when_run_again,
    a_delete_takes_back_only_from_counters_not_kept_on_delete,
    verify_reports_a_kept_counter_below_its_records_and_reconcile_raises_it,
    reconcile_never_lowers_a_kept_counter,
    a_delete_in_a_transaction_keeps_what_a_delete_keeps,
    a_protobuf_record_round_trips_every_field_kind,
    json_and_msgpack_records_read_after_switching_to_protobuf,
    compression_applies_to_protobuf_records,
    older_protobuf_records_migrate_lazily_and_newer_ones_are_refused;
    real_time:
    links_of_an_expired_record_are_listed_nowhere_and_swept,
    moving_the_expiry_moves_the_links,
    unlink_delete_ttl_and_a_key_written_again,
    the_model_reconcile_sweeps_the_links_of_expired_records,
    a_kept_counter_keeps_its_count_after_the_expiry_sweep,
    a_kept_counter_outlives_a_verify_before_the_sweep,
);
