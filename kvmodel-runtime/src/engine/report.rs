//! What maintenance reports: how far a migration got ([`Progress`], its
//! [`Duplicate`]s) and what a `verify` or `reconcile` walk found
//! ([`Drift`], its counters and the ones it could not judge). Plain data,
//! serializable, shared by the walks that fill it in
//! ([`walk`](crate::engine::walk), [`migrate`](crate::engine::migrate))
//! and the repository methods that return it
//! ([`maintenance`](crate::engine::maintenance)).
//!
//! Layer: data, below the walks.

use serde::{Deserialize, Serialize};

use crate::engine::page::Cursor;
use crate::engine::skipped::Skipped;

/// A record whose value for a unique index another record holds, so the
/// migration could not give it its claim and left it at its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Duplicate {
    /// The unique index.
    pub index: String,
    /// The (normalized) value, as its claim key spells it.
    pub value: String,
    /// The claim key.
    pub claim: String,
    /// The record left unmigrated.
    pub record: String,
    /// The record that holds the claim.
    pub holder: String,
}

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
    #[serde(with = "crate::engine::wide::int")]
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
    #[serde(with = "crate::engine::wide::int")]
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
    /// [`Store::unfinished_writes`](crate::store::Store::unfinished_writes)).
    /// `reconcile` finishes or undoes them first.
    #[serde(default)]
    pub unfinished: Vec<String>,
    /// Records whose missing claims or members a repair did not write: a
    /// writer changed the record between the walk's read and the repair,
    /// which conditions on it. Run the walk again to judge them anew.
    #[serde(default)]
    pub unrepaired: Vec<String>,
    /// Counters that keep the amounts of records that are gone, checked
    /// only against the lower bound the live records give (not drift; one
    /// below it is in [`Drift::counters`]).
    #[serde(default)]
    pub kept: Vec<KeptCounter>,
    /// Live records stored at a version older than something the entity's
    /// index state already makes readable (an index, relation or counter
    /// with `since: N`, N above the record's version): they lack its
    /// entries, so its reads miss them. A writer of an older version wrote
    /// them after the state was established (a rolling deploy). `reconcile`
    /// leaves them as they are; `migrate` rewrites them at the current
    /// version and backfills their entries. The first 100 record keys;
    /// all are counted in [`Drift::behind_count`].
    #[serde(default)]
    pub behind: Vec<String>,
    /// How many records are [behind](Drift::behind).
    #[serde(default)]
    pub behind_count: u64,
}

/// The record keys a walk lists in [`Drift::behind`] (all are counted).
const BEHIND_KEPT: usize = 100;

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
            && self.unrepaired.is_empty()
            && self.unsettled.is_empty()
            && self.behind_count == 0
    }

    /// Notes the record at `key` as [behind](Drift::behind).
    pub(crate) fn note_behind(&mut self, key: &str) {
        self.behind_count += 1;
        if self.behind.len() < BEHIND_KEPT {
            self.behind.push(key.to_owned());
        }
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
        self.unrepaired.sort();
        self.unrepaired.dedup();
        self.behind.sort();
        self.behind.dedup();
        // Every record behind is listed: the count is exact too.
        if self.behind.len() < BEHIND_KEPT {
            self.behind_count = u64::try_from(self.behind.len()).unwrap_or(u64::MAX);
        }
        self.missing_claims.sort();
        self.missing_claims.dedup();
        self.missing_members.sort();
        self.missing_members.dedup();
    }
}
