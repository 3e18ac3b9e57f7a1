//! What the engine tells [`tracing`] (feature `tracing`, on by default).
//!
//! Every repository operation is a span at `DEBUG` level, target
//! `kvmodel`, named after the method (`create`, `modify`, `list`, …) with
//! the fields `entity` and `backend`; an operation on one record (`get`,
//! `exists`, `create`, `update`, `upsert`, `modify`, `try_modify`,
//! `delete`) also carries its `key`, unless the target `kvmodel::keys` is
//! turned off (`kvmodel=debug,kvmodel::keys=off`). Inside it, each store commit is an
//! event with the keys it touches, the bytes it writes, its size and its
//! outcome (a delete by a record's delete plan on Redis is an event of its
//! own, with its outcome), and each optimistic retry is an event with its attempt number.
//! Without a subscriber that listens at `DEBUG` for `kvmodel`, none of it
//! is computed: a span or event costs one cached check.
//!
//! To see them, install any subscriber, for example with
//! `tracing-subscriber`:
//!
//! ```text
//! tracing_subscriber::fmt().with_env_filter("kvmodel=debug").init();
//! ```
//!
//! Layer: data (the lowest layer): tracing helpers, importing no other engine
//! module.

use std::collections::BTreeSet;

use tracing::Level;

use crate::store::PlannedDelete;
use crate::store::batch::{Batch, Op, Outcome};

/// What a commit event reports of its batch.
pub(crate) struct CommitSummary {
    conditions: usize,
    ops: usize,
    keys: usize,
    bytes: usize,
}

impl CommitSummary {
    /// The summary of `batch`, or `None` (and nothing computed) when no
    /// subscriber listens.
    pub(crate) fn of(batch: &Batch) -> Option<CommitSummary> {
        if !tracing::enabled!(target: "kvmodel", Level::DEBUG) {
            return None;
        }
        let mut keys = BTreeSet::new();
        let mut bytes = 0;
        for c in batch.conditions() {
            keys.insert(c.key());
        }
        for op in batch.ops() {
            keys.insert(op.key());
            bytes += match op {
                Op::Put { value, .. } => value.len(),
                Op::Add { sort, member, .. } => sort.len() + member.len(),
                _ => 0,
            };
        }
        Some(CommitSummary {
            conditions: batch.conditions().len(),
            ops: batch.ops().len(),
            keys: keys.len(),
            bytes,
        })
    }

    /// Emits the event for the commit's `outcome`.
    pub(crate) fn record<T, E>(self, backend: &'static str, outcome: &Result<T, E>)
    where
        T: std::borrow::Borrow<Outcome>,
    {
        let outcome = match outcome.as_ref().map(|o| o.borrow()) {
            Ok(Outcome::Applied) => "applied",
            Ok(Outcome::Failed { .. }) => "condition failed",
            Err(_) => "error",
        };
        tracing::debug!(
            target: "kvmodel",
            backend,
            conditions = self.conditions,
            ops = self.ops,
            keys = self.keys,
            bytes = self.bytes,
            outcome,
            "commit"
        );
    }
}

/// Emits the event of a delete by a record's delete plan: `deleted`, `no
/// record`, `unplanned` (nothing written: the usual delete follows, with
/// its own commit event) or `error`.
pub(crate) fn planned_delete<E>(backend: &'static str, outcome: &Result<PlannedDelete, E>) {
    let outcome = match outcome {
        Ok(PlannedDelete::Deleted) => "deleted",
        Ok(PlannedDelete::Absent) => "no record",
        Ok(PlannedDelete::Unplanned) => "unplanned",
        Err(_) => "error",
    };
    tracing::debug!(target: "kvmodel", backend, outcome, "delete by plan");
}

/// The record key an operation's span carries: left out (`None`, and
/// `key` never called) unless the target `kvmodel::keys` listens at
/// `DEBUG`, so that a filter such as `kvmodel=debug,kvmodel::keys=off`
/// keeps keys (which may hold personal data) out of traces.
pub(crate) fn key(key: impl FnOnce() -> String) -> Option<tracing::field::DisplayValue<String>> {
    tracing::enabled!(target: "kvmodel::keys", Level::DEBUG).then(|| tracing::field::display(key()))
}

/// Emits the event of an optimistic retry after attempt `attempt` failed.
pub(crate) fn retry(attempt: u32, wait: std::time::Duration) {
    tracing::debug!(
        target: "kvmodel",
        attempt,
        wait_us = wait.as_micros() as u64,
        "another writer changed the record; retrying"
    );
}
