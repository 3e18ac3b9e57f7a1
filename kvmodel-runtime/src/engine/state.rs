//! Index states: an index, relation or counter added after the first
//! version (`since: N`, N > 1) is written by every write from the start,
//! but readable only once no record older than N remains, since older
//! records lack its entries until they are rewritten. Until then it is
//! *write-only*, and reading it fails with [`Error::NotReadable`] instead
//! of silently leaving the old records out (or reads it anyway, when the
//! reader opts in to partial results).
//!
//! The state lives in the store, under the entity's derived key space
//! (`{ns}:{space}#state`), as JSON: the version every record was known to
//! be at or past (`complete`), and what established it. Generated
//! repositories and the `kvmodel` command share it:
//!
//! - the first read that needs the state, when none is stored,
//!   establishes it: an empty entity is complete at the reader's version,
//!   *provisionally* ([`IndexState::provisional`]); otherwise up to
//!   [`FIRST_LOOK`] records are looked at (their version only) and the
//!   state is their lowest version, or 1 when there are more;
//! - a provisional state is looked at again by the first read (of any
//!   repository: none keeps a provisional answer) that finds records in
//!   the entity: writers of an older version still running in a rolling
//!   deploy may have created some, which lack what the newer version
//!   added, and then the state falls to their version and reads of it are
//!   refused until `migrate`. The look never raises the state (a reader of
//!   a newer version does not outrun the writers it was set for) and
//!   falls to 1 when there are more records than it looks at;
//! - a migration (`migrate_all`, `kvmodel migrate`) that leaves no old
//!   record behind makes it complete at the current version; one that
//!   leaves duplicates of a unique index records them, and the state the
//!   lowest version left.
//!
//! Records written by code older than the state after it was established
//! by a look or a migration (a deployment that still runs old writers)
//! lack entries of what is readable, and its reads miss them: no read can
//! tell without looking at every record. `verify` does: it reports them as
//! *behind* ([`Drift::behind`](crate::engine::report::Drift::behind)), and
//! `migrate` rewrites them at the current version whatever the state says.
//! Stop old writers before migrating.
//!
//! Layer: maintenance, below [`walk`](crate::engine::walk) (the walks read
//! the state with [`load`]) and [`migrate`](crate::engine::migrate), whose
//! findings [`record_migration`] is given.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

use crate::codec::key::{Derived, Space};
use crate::codec::record;
use crate::engine::def::{EntityDef, Typed};
use crate::engine::entity::Entity;
use crate::engine::records::Records;
use crate::engine::repo::Engine;
use crate::engine::report::Duplicate;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::Batch;

/// Records the first read looks at, when no state is stored, before it
/// leaves the decision to a migration.
pub const FIRST_LOOK: usize = 10_000;

/// Duplicates kept in the state (all are counted).
const KEPT_DUPLICATES: usize = 100;

/// The stored state of an entity's indexes, relations and counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexState {
    /// Every record was at this version or later when the state was last
    /// established: what was introduced at or before it is readable.
    pub complete: u32,
    /// What established it, in words.
    pub by: String,
    /// When, in milliseconds since the Unix epoch, by the store's clock.
    pub at_ms: u64,
    /// Duplicates of unique indexes the last migration met (the first
    /// hundred).
    #[serde(default)]
    pub duplicates: Vec<Duplicate>,
    /// How many duplicates it met.
    #[serde(default)]
    pub duplicate_count: u64,
    /// Established by a read of an empty entity, not by looking at
    /// records: the first read by a repository that finds records since
    /// looks at them again, since writers of an older version (a rolling
    /// deploy) may have written some.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provisional: bool,
}

impl IndexState {
    /// Whether what version `since` introduced is readable.
    pub fn readable(&self, since: u32) -> bool {
        since <= self.complete
    }
}

/// The state stored for the entity in `space`, if any.
pub async fn load<S: Store>(store: &S, space: Space<'_>) -> Result<Option<IndexState>> {
    let key = space.state_key();
    match store.get(&key).await? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::decode(
                &key,
                "it is not a kvmodel index state; delete it and the next read establishes it again",
                Some(Box::new(e)),
            )
        }),
    }
}

fn encode(key: &str, state: &IndexState) -> Result<Vec<u8>> {
    serde_json::to_vec(state).map_err(|e| Error::Encode {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

/// Writes `state` if the stored one is still `old`; the stored state after.
async fn replace<S: Store>(
    store: &S,
    space: Space<'_>,
    old: Option<&IndexState>,
    state: IndexState,
) -> Result<IndexState> {
    let key = space.state_key();
    let mut b = Batch::new();
    match old {
        Some(o) => b.equals(&key, encode(&key, o)?),
        None => b.absent(&key),
    };
    b.put(&key, encode(&key, &state)?, None);
    if crate::engine::repo::commit(store, b).await?.is_applied() {
        return Ok(state);
    }
    // Another reader or a migration got there first: theirs stands.
    Ok(load(store, space).await?.unwrap_or(state))
}

/// What a look at up to [`FIRST_LOOK`] records (their version only)
/// found: whether it saw them all, and the lowest version it saw.
async fn look<S: Store>(store: &S, records: &Records) -> Result<(bool, Option<u32>, usize)> {
    let mut lowest: Option<u32> = None;
    let mut seen = 0usize;
    let mut after = None;
    let finished = loop {
        let (keys, next) = records.keys(store, after.take(), 1000).await?;
        for (key, bytes) in keys.iter().zip(store.get_many(&keys).await?) {
            // Records that do not decode are read by nobody: they leave
            // no index partial.
            if let Some(h) = bytes.and_then(|b| record::header(key, &b).ok()) {
                lowest = Some(lowest.map_or(h.version, |l| l.min(h.version)));
            }
        }
        seen += keys.len();
        match next {
            Some(n) if seen < FIRST_LOOK => after = Some(n),
            Some(_) => break false,
            None => break true,
        }
    };
    Ok((finished, lowest, seen))
}

/// A state complete at `complete`, established by `by`.
async fn stated<S: Store>(
    store: &S,
    complete: u32,
    by: String,
    provisional: bool,
) -> Result<IndexState> {
    Ok(IndexState {
        complete,
        by,
        at_ms: store.now_ms().await?,
        duplicates: Vec::new(),
        duplicate_count: 0,
        provisional,
    })
}

/// Establishes the state of an entity none is stored for, as code at
/// `version` sees it: see the [module documentation](self).
pub async fn establish<S: Store>(
    store: &S,
    space: Space<'_>,
    records: &Records,
    version: u32,
) -> Result<IndexState> {
    let state = match look(store, records).await? {
        (true, None, _) => {
            stated(
                store,
                version,
                "the first read, of an empty entity".to_owned(),
                true,
            )
            .await?
        }
        (true, Some(l), seen) => {
            let by = format!("the first read, which looked at all {seen} records");
            stated(store, l.min(version), by, false).await?
        }
        (false, _, _) => {
            let by = format!(
                "the first read, which found more than {FIRST_LOOK} records: migrate decides"
            );
            stated(store, 1, by, false).await?
        }
    };
    replace(store, space, None, state).await
}

/// Looks again at the records of an entity whose stored state `old` was
/// established on an empty entity ([`IndexState::provisional`]), now that
/// it has records: writers of an older version may have written some. The
/// stored state after.
async fn look_again<S: Store>(
    store: &S,
    space: Space<'_>,
    records: &Records,
    old: IndexState,
) -> Result<IndexState> {
    let state = match look(store, records).await? {
        // Emptied again meanwhile: it stays as it was.
        (true, None, _) => return Ok(old),
        // Never above what the state said: a reader of another version
        // (older or newer) neither lowers it below the records it saw nor
        // raises it past the writers the state was set for.
        (true, Some(l), seen) => {
            let by = format!("a later read, which looked at all {seen} records");
            stated(store, l.min(old.complete), by, false).await?
        }
        // Records beyond the look may be older: as when the state is first
        // established.
        (false, _, _) => {
            let by = format!(
                "a later read, which found more than {FIRST_LOOK} records: migrate decides"
            );
            stated(store, 1, by, false).await?
        }
    };
    replace(store, space, Some(&old), state).await
}

/// Records what a finished migration of the entity to `version` found:
/// complete at `version` when it left no old record (`oldest_left` is the
/// lowest version it left), with the `duplicates` it met. `by` names the
/// run. A migration that left no old record never lowers a state a newer
/// version set: one run by an older schema during a rolling deploy passes
/// the newer records over, so it proves nothing below them.
pub async fn record_migration<S: Store>(
    store: &S,
    space: Space<'_>,
    version: u32,
    oldest_left: Option<u32>,
    duplicates: &[Duplicate],
    by: &str,
) -> Result<IndexState> {
    let key = space.state_key();
    for attempt in 0..crate::engine::repo::MAX_ATTEMPTS {
        // Conditioned on the bytes read; a state that does not decode (or
        // was written by other code) is replaced, as before.
        let raw = store.get(&key).await?;
        let stored: Option<IndexState> =
            raw.as_deref().and_then(|b| serde_json::from_slice(b).ok());
        let complete = match (oldest_left, &stored) {
            (Some(left), _) => left.min(version),
            (None, Some(s)) if !s.provisional => s.complete.max(version),
            (None, _) => version,
        };
        let state = IndexState {
            complete,
            by: by.to_owned(),
            at_ms: store.now_ms().await?,
            duplicates: duplicates.iter().take(KEPT_DUPLICATES).cloned().collect(),
            duplicate_count: duplicates.len() as u64,
            provisional: false,
        };
        let mut b = Batch::new();
        match raw {
            Some(bytes) => b.equals(&key, bytes),
            None => b.absent(&key),
        };
        b.put(&key, encode(&key, &state)?, None);
        if crate::engine::repo::commit(store, b).await?.is_applied() {
            return Ok(state);
        }
        crate::engine::repo::backoff(attempt).await;
    }
    Err(Error::Conflict {
        entity: "index state",
        key,
        attempts: crate::engine::repo::MAX_ATTEMPTS,
    })
}

/// What kind of thing a [`Derived`] kind names, for messages.
fn what(kind: Derived) -> &'static str {
    match kind {
        Derived::Claim => "unique index",
        Derived::Index => "index",
        Derived::Relation => "relation",
        _ => "counter",
    }
}

/// Checks that what `since` introduced (the `kind` named `name` of the
/// entity `entity` in `space`, read by code at `version`) is readable,
/// establishing the state when none is stored; [`Error::NotReadable`] when
/// it is write-only. An empty entity is readable whatever its state.
#[allow(clippy::too_many_arguments)]
pub async fn require<S: Store>(
    store: &S,
    space: Space<'_>,
    records: &Records,
    entity: &str,
    version: u32,
    kind: Derived,
    name: &str,
    since: u32,
) -> Result<IndexState> {
    let state = match load(store, space).await? {
        // Established on an empty entity: look again once it has records.
        Some(s) if s.provisional && s.readable(since) => {
            if records.is_empty(store).await? {
                s
            } else {
                look_again(store, space, records, s).await?
            }
        }
        Some(s) => s,
        None => establish(store, space, records, version).await?,
    };
    if state.readable(since) {
        return Ok(state);
    }
    if records.is_empty(store).await? {
        let fresh = stated(store, version, "a read of an empty entity".to_owned(), true).await?;
        let state = replace(store, space, Some(&state), fresh).await?;
        if state.readable(since) {
            return Ok(state);
        }
    }
    Err(Error::NotReadable {
        entity: entity.to_owned(),
        what: what(kind),
        name: name.to_owned(),
        since,
        complete: state.complete,
    })
}

/// How a repository reads indexes, relations and counters added after the
/// first version: refused while they are write-only (the default), or
/// partial results accepted. It remembers what it found readable (shared
/// by clones), so the state is read once.
#[derive(Debug, Clone, Default)]
pub struct ReadGate {
    partial: bool,
    complete: Arc<AtomicU32>,
}

impl ReadGate {
    /// A gate that refuses write-only reads.
    pub fn new() -> Self {
        ReadGate::default()
    }

    /// A gate that reads write-only indexes anyway, with whatever entries
    /// they hold.
    pub fn partial(mut self) -> Self {
        self.partial = true;
        self
    }

    /// Whether partial reads are accepted.
    pub fn is_partial(&self) -> bool {
        self.partial
    }
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Checks, before a read of what version `since` introduced (the
    /// `kind` named `name`), that it is readable; see [`require`].
    pub async fn require_readable(
        &self,
        gate: &ReadGate,
        kind: Derived,
        name: &str,
        since: u32,
    ) -> Result<()> {
        if gate.partial || since <= gate.complete.load(Ordering::Relaxed) {
            return Ok(());
        }
        let state = require(
            self.store(),
            E::space(),
            &Typed::<E>::new().records(self.store()),
            E::META.name,
            E::VERSION,
            kind,
            name,
            since,
        )
        .await?;
        // A provisional state is not kept: the next read looks again, so
        // records an older writer adds later are seen.
        if !state.provisional {
            gate.complete.fetch_max(state.complete, Ordering::Relaxed);
        }
        Ok(())
    }
}
