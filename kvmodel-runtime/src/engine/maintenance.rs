//! Maintenance over every record of an entity, as repository methods:
//! `migrate` (rewrite old versions), `verify` (recompute index entries and
//! counters, report drift) and `reconcile` (the same, and repair it).
//!
//! The walks themselves are written once, over any
//! [`EntityDef`](crate::engine::def::EntityDef), in
//! [`walk`](crate::engine::walk) and [`migrate`](crate::engine::migrate);
//! the `kvmodel` command runs the same code through the run-time model.

use serde::{Deserialize, Serialize};

use crate::engine::def::Typed;
use crate::engine::entity::Entity;
use crate::engine::migrate::{Duplicate, MigrateState};
use crate::engine::page::{Cursor, ListRequest, PageRequest};
use crate::engine::repo::Engine;
use crate::engine::skipped::Skipped;
use crate::engine::state;
use crate::engine::walk::Walker;
use crate::error::Result;
use crate::store::{Direction, RangeRequest, Store, encode_entry};

/// How far a migration got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Records visited so far.
    pub visited: u64,
    /// Records rewritten so far.
    pub changed: u64,
    /// Where to resume; `None` when the walk is complete.
    pub next: Option<Cursor>,
    /// Records that could not be read, so were not migrated.
    pub skipped: Vec<Skipped>,
    /// Records left at their version because another record holds their
    /// value of a unique index: change one of the two, then migrate again.
    pub duplicates: Vec<Duplicate>,
}

/// A counter whose stored value differs from what the records add up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterDrift {
    /// Counter key.
    pub key: String,
    /// What the records add up to (exactly; it may lie beyond what a 64-bit
    /// counter holds, and is then reported but not repaired). 0 for a
    /// counter no record contributes to.
    #[serde(with = "crate::engine::walk::wide::int")]
    pub expected: i128,
    /// What the store holds.
    pub actual: i64,
    /// True for a counter that keeps the amounts of records that are gone
    /// (`keep: on_expiry | always`): `expected` is then what the live
    /// records add up to, a lower bound the counter is below, and a repair
    /// raises it to that bound.
    #[serde(default)]
    pub at_least: bool,
}

/// A counter that keeps the amounts of records that are gone
/// (`keep: on_expiry | always`), at or above what the live records add up
/// to: not drift. The records cannot tell its exact value, so a walk checks
/// only that lower bound and never lowers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptCounter {
    /// Counter key.
    pub key: String,
    /// What the live records add up to: the least it may hold.
    #[serde(with = "crate::engine::walk::wide::int")]
    pub at_least: i128,
    /// What the store holds.
    pub actual: i64,
}

/// Everything `verify` found out of step.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// Records examined.
    pub records: u64,
    /// Unique claims that are missing (claim key, record key).
    pub missing_claims: Vec<(String, String)>,
    /// Unique claims held by another record (claim key, record key, holder).
    pub conflicting_claims: Vec<(String, String, String)>,
    /// Collection members that are missing (collection key, record key).
    pub missing_members: Vec<(String, String)>,
    /// Counters that differ from the records, including counters no record
    /// contributes to that are not 0.
    pub counters: Vec<CounterDrift>,
    /// Records (or expiry receipts) that could not be read: bytes that do
    /// not decode, a newer version, a record under a key not its own.
    /// `purge` removes such a record.
    pub undecodable: Vec<Skipped>,
    /// Unique claims that no record holds: the record they name is gone or
    /// does not have that value (claim key, the record key it holds).
    pub orphan_claims: Vec<(String, String)>,
    /// Collection members (of indexes, relations, the discovery set and the
    /// expiry ledger) whose record is gone or does not derive them
    /// (collection key, member).
    pub orphan_members: Vec<(String, String)>,
    /// Records of an expiring entity whose receipt or ledger entry is
    /// missing or out of step, so their expiry would not reach their
    /// derived entries (record keys).
    pub receipts: Vec<String>,
    /// Records that expired and whose entries the next sweep removes
    /// (`verify` only: `reconcile` sweeps them). Not drift: their entries
    /// and counter amounts are counted as present.
    pub expired: u64,
    /// Counters this walk could not judge, never repaired nor reported as
    /// drift: writers moved them while they were measured, or records it
    /// could not read may count in them (see
    /// [`Unsettled`]). Run the walk again when the cause has passed.
    #[serde(default)]
    pub unsettled: Vec<Unsettled>,
    /// Writes the store left half done past their lease, one line each
    /// (Redis Cluster writes across hash slots whose writer died; see
    /// [`Store::unfinished_writes`]). `reconcile` finishes or undoes them
    /// first.
    #[serde(default)]
    pub unfinished: Vec<String>,
    /// Counters that keep the amounts of records that are gone, checked
    /// only against the lower bound the live records give (not drift; one
    /// below it is in [`Drift::counters`]).
    #[serde(default)]
    pub kept: Vec<KeptCounter>,
}

/// A counter a walk could not judge, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unsettled {
    /// Counter key (of a sharded counter: its first shard).
    pub key: String,
    /// Why it could not be judged.
    pub why: Unjudged,
}

/// Why a walk could not judge a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unjudged {
    /// Writes moved it while the walk measured it (on a store that can
    /// show no single instant: Redis, Redis Cluster). Nothing is lost: the
    /// next walk in a quieter moment judges it.
    Moved,
    /// Records of the entity could not be read (a newer version than this
    /// schema knows, or bytes that do not decode), so what they count in
    /// it is unknown: the counters of such an entity are left as they are.
    Unreadable,
    /// The store can neither show one instant nor stamp its counters.
    Unmeasurable,
}

impl Unjudged {
    /// What it means, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Unjudged::Moved => "writers moved it while it was measured; run again to judge it",
            Unjudged::Unreadable => {
                "records this schema cannot read may count in it, so it is left as it is"
            }
            Unjudged::Unmeasurable => {
                "this store shows no single instant and keeps no counter stamps, so it cannot \
                 be measured beside writers"
            }
        }
    }
}

impl Drift {
    /// True when every counter could be judged ([`Drift::unsettled`] is
    /// empty).
    pub fn is_settled(&self) -> bool {
        self.unsettled.is_empty()
    }

    /// True when nothing is out of step and everything was judged (records
    /// awaiting the expiry sweep are not drift).
    pub fn is_clean(&self) -> bool {
        self.missing_claims.is_empty()
            && self.conflicting_claims.is_empty()
            && self.missing_members.is_empty()
            && self.counters.is_empty()
            && self.undecodable.is_empty()
            && self.orphan_claims.is_empty()
            && self.orphan_members.is_empty()
            && self.receipts.is_empty()
            && self.unfinished.is_empty()
            && self.unsettled.is_empty()
    }

    /// Sorts every list and drops repeats (a scan may visit a key twice).
    pub(crate) fn tidy(&mut self) {
        self.kept.sort_by(|a, b| a.key.cmp(&b.key));
        self.kept.dedup();
        self.undecodable.sort_by(|a, b| a.key.cmp(&b.key));
        self.undecodable.dedup();
        self.orphan_claims.sort();
        self.orphan_claims.dedup();
        self.orphan_members.sort();
        self.orphan_members.dedup();
        self.receipts.sort();
        self.receipts.dedup();
        self.missing_claims.sort();
        self.missing_claims.dedup();
        self.missing_members.sort();
        self.missing_members.dedup();
    }
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Migrates one page of records: every record older than the current
    /// version is rewritten at it, and what the versions since added
    /// (`since: N`) is backfilled in the same commit. Records that cannot
    /// be read are reported in [`Progress::skipped`], duplicates of a
    /// unique index in [`Progress::duplicates`].
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_page", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_page(&self, page: PageRequest, progress: &mut Progress) -> Result<()> {
        let (all, page) = (E::all_key(), ListRequest::from(page));
        let range = page.range(&all)?;
        let mut run = MigrateState::after(range.after);
        let def = Typed::<E>::new();
        Walker::new(&def, self.store())
            .migrate_step(&mut run, range.limit)
            .await?;
        progress.visited += run.visited;
        progress.changed += run.rewritten;
        progress.skipped.append(&mut run.skipped);
        progress.duplicates.append(&mut run.duplicates);
        progress.next = run.cursor.map(|p| page.next_cursor(&all, p));
        Ok(())
    }

    /// Migrates every record, `page_size` at a time, reporting progress
    /// after each page, and when done records the outcome in the entity's
    /// index state: indexes, relations and counters added since become
    /// readable when no old record is left. Resume an interrupted run with
    /// `migrate_from`.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_all", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_all(
        &self,
        page_size: usize,
        on_progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress> {
        self.migrate_from(None, page_size, on_progress).await
    }

    /// Migrates every record from `cursor` on (a [`Progress::next`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_from", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_from(
        &self,
        cursor: Option<Cursor>,
        page_size: usize,
        mut on_progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress> {
        let all = E::all_key();
        let def = Typed::<E>::new();
        let walker = Walker::new(&def, self.store());
        let resumed = cursor.is_some();
        let first = match cursor {
            Some(c) => {
                ListRequest::from(PageRequest::new(1).after(c))
                    .range(&all)?
                    .after
            }
            None => None,
        };
        let mut run = MigrateState::after(first);
        let mut progress = Progress::default();
        loop {
            let before = (run.rewritten, run.skipped.len(), run.duplicates.len());
            run.visited = 0;
            walker.migrate_step(&mut run, page_size.max(1)).await?;
            progress.visited += run.visited;
            progress.changed += run.rewritten - before.0;
            progress.skipped.extend_from_slice(&run.skipped[before.1..]);
            progress
                .duplicates
                .extend_from_slice(&run.duplicates[before.2..]);
            progress.next = run
                .cursor
                .clone()
                .map(|p| Cursor::new(&all, Direction::Ascending, p));
            on_progress(&progress);
            if run.done {
                if !resumed {
                    let by = format!("migrate_all of {} to version {}", E::META.name, E::VERSION);
                    state::record_migration(self.store(), E::space(), E::VERSION, &run, &by)
                        .await?;
                }
                return Ok(progress);
            }
        }
    }

    /// Recomputes every claim, collection member and counter from the
    /// records, looks for derived entries no record implies, and reports
    /// what is out of step. Writes nothing.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "verify", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn verify(&self, page_size: usize) -> Result<Drift> {
        let def = Typed::<E>::new();
        Walker::new(&def, self.store()).run(false, page_size).await
    }

    /// Sweeps expired records, then does what [`verify`](Self::verify)
    /// does and repairs: missing claims and members are written (through
    /// the same transition as every write, with the record's remaining
    /// lifetime when it expires), receipts rewritten, orphaned claims and
    /// members removed, counters adjusted by the measured difference (a
    /// counter no record contributes to is deleted). Claims held by another
    /// record are reported, never taken; undecodable records are reported
    /// and left for `purge`. Before all that, the store finishes or undoes
    /// writes left half done ([`Store::recover`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "reconcile", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn reconcile(&self, page_size: usize) -> Result<Drift> {
        let def = Typed::<E>::new();
        Walker::new(&def, self.store()).run(true, page_size).await
    }
}

/// Whether `member` is in the collection under `sort`: one descending step
/// from just past its position, so the check costs one short range read
/// however large the collection is.
pub(crate) async fn is_member<S: Store>(
    store: &S,
    collection: &str,
    sort: &[u8],
    member: &[u8],
) -> Result<bool> {
    let mut past = encode_entry(sort, member);
    past.push(0);
    let req = RangeRequest {
        direction: Direction::Descending,
        after: Some(past),
        ..RangeRequest::all(1)
    };
    let found = store.range(collection, req).await?;
    Ok(found
        .members
        .first()
        .is_some_and(|m| m.sort == sort && m.member == member))
}
