//! The features of the generated repositories and the stores beyond the
//! core suites, one module per feature, in one test binary (one link).

/// The repository suite's model, shared by the modules that count round
/// trips and single-writer commits.
#[path = "../repo/model.rs"]
#[allow(dead_code, unused_imports)]
mod model;

mod added_without_since;
mod conflict;
mod counter_arithmetic;
mod delete_plans;
mod dynamo_costs;
mod dynamo_writers;
mod floats;
mod lints;
mod live_cascade;
mod live_rolling;
mod live_tamper;
mod on_delete_switch;
mod one_transaction;
mod reconcile_ttl;
mod record_expiry;
mod renamed_struct;
mod round_trips;
mod stale_claims;
mod standalone_counters;
mod store_edges;
mod tls_feature;
mod transaction;
mod transaction_links;
mod uuid_v4;
