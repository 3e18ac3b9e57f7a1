//! The upkeep engine behind every generated repository.
//!
//! Generated `XRepo` types are thin typed wrappers over [`Engine`]: they build
//! keys, the engine turns a record image into its facts (claims, collection
//! members, counters) and every write into one [`Batch`] committed atomically.
//! This module holds the engine itself: its store, how it commits (every
//! commit of the engine goes through `commit`, traced), how it retries,
//! and the errors of a refused claim. The methods that do work live in
//! role modules above it (see the [module map](crate::engine)): the writes
//! (`write`, `delete`; each built by the one `transition`), the reads
//! (`read`), the sweep (`expiry`), and maintenance
//! ([`maintenance`](crate::engine::maintenance)).
//!
//! Layer: core: above the data layer (it imports only
//! [`entity`](crate::engine::entity) and `trace` of the
//! engine), below every module that gives [`Engine`] a role.

use std::marker::PhantomData;

use crate::engine::entity::{ClaimFact, Entity};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome, Planned};

/// How many times `update`, `modify` and `delete` re-read and retry before
/// giving up with [`Error::Conflict`].
pub const MAX_ATTEMPTS: u32 = 16;

/// Typed access to the records of one entity on one store.
pub struct Engine<E, S> {
    store: S,
    _entity: PhantomData<fn() -> E>,
}

impl<E, S: Clone> Clone for Engine<E, S> {
    fn clone(&self) -> Self {
        Engine {
            store: self.store.clone(),
            _entity: PhantomData,
        }
    }
}

impl<E, S: std::fmt::Debug> std::fmt::Debug for Engine<E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("entity", &std::any::type_name::<E>())
            .field("store", &self.store)
            .finish()
    }
}

/// Waits a little before retrying an optimistic write: jittered exponential
/// backoff, 0–1 ms after the first failure up to 0–64 ms.
pub(crate) async fn backoff(attempt: u32) {
    use std::time::Duration;
    let wait = crate::exec::jitter(
        attempt.saturating_add(1),
        Duration::from_millis(1),
        Duration::from_millis(64),
    );
    #[cfg(feature = "tracing")]
    crate::engine::trace::retry(attempt, wait);
    crate::exec::sleep(wait).await;
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Commits `batch` to the store: every commit of the engine goes
    /// through here, so each one is traced.
    pub(crate) async fn commit(&self, batch: Batch) -> Result<Outcome> {
        commit(&self.store, batch).await
    }

    /// [`Store::commit_after_read`] of `plan`, traced as [`commit`](Self::commit)
    /// traces a commit.
    pub(crate) async fn commit_after_read<T: Send>(
        &self,
        keys: &[String],
        plan: impl FnOnce(Vec<Option<Vec<u8>>>, u64) -> Result<Planned<T>> + Send,
    ) -> Result<(Outcome, T)> {
        #[cfg(feature = "tracing")]
        {
            let mut summary = None;
            let outcome = self
                .store
                .commit_after_read(keys, |values, now| {
                    let planned = plan(values, now)?;
                    if let Planned::Commit(batch, _) = &planned {
                        summary = crate::engine::trace::CommitSummary::of(batch);
                    }
                    Ok(planned)
                })
                .await;
            if let Some(summary) = summary {
                let traced = match &outcome {
                    Ok((o, _)) => Ok(*o),
                    Err(e) => Err(e),
                };
                summary.record(self.store.backend(), &traced);
            }
            outcome
        }
        #[cfg(not(feature = "tracing"))]
        self.store.commit_after_read(keys, plan).await
    }

    /// An engine on `store`.
    pub fn new(store: S) -> Self {
        Engine {
            store,
            _entity: PhantomData,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// [`Error::Conflict`] for the record at `key` after [`MAX_ATTEMPTS`]
    /// tries, each finding it changed by another writer.
    pub(crate) fn gave_up(key: impl Into<String>) -> Error {
        Error::Conflict {
            entity: E::META.name,
            key: key.into(),
            attempts: MAX_ATTEMPTS,
        }
    }

    pub(crate) fn unique_violation(&self, claim: &ClaimFact) -> Error {
        unique_violation(E::META.name, claim)
    }
}

/// Commits `batch` to `store`, traced: every commit of the engine, its
/// writes' ([`Engine::commit`]) and maintenance's, goes through here.
pub(crate) async fn commit<S: Store>(store: &S, batch: Batch) -> Result<Outcome> {
    #[cfg(feature = "tracing")]
    let summary = crate::engine::trace::CommitSummary::of(&batch);
    let outcome = store.commit(batch).await;
    #[cfg(feature = "tracing")]
    if let Some(summary) = summary {
        summary.record(store.backend(), &outcome);
    }
    outcome
}

/// The error of a unique value another record holds.
pub(crate) fn unique_violation(entity: &'static str, claim: &ClaimFact) -> Error {
    Error::UniqueViolation {
        entity,
        index: claim.index,
        value: crate::codec::key::derived_parts(
            &claim.key,
            crate::codec::key::Derived::Claim,
            claim.index,
        )
        .map_or_else(|| claim.key.clone(), |parts| parts.join(", ")),
    }
}
