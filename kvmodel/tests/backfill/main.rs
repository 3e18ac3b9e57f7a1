//! Index states, backfills, resumable walks, the migration lease and the
//! ledger, on the in-memory, embedded and Redis stores: what version 2 of
//! an entity added is write-only until a migration backfills it; a unique
//! backfill records duplicates instead of stopping; a resumed or repeated
//! backfill never counts a record twice; a walk saved between steps
//! resumes with the same findings; one runner holds the lease.

mod cases;
mod model;

use cases::*;

kvmodel_runtime::on_every_backend!(
    write_only_until_backfilled,
    backfill_never_counts_twice,
    an_empty_entity_is_readable,
    a_saved_walk_resumes,
    one_runner_holds_the_lease,
    the_ledger_lists_runs,
);
