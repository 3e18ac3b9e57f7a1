//! What each access pattern of a generated repository asks of its store: the
//! store calls it makes, in words, and how many round trips they take.
//!
//! This table is the one place these costs are written down. `kvmodel keys`
//! prints it for a model, and a test counts the store calls of every access
//! pattern on every backend against it, so the report cannot drift from
//! what the engine does.
//!
//! Layer: maintenance (the top layer): a static report, which reads the sweep's
//! rate from [`expiry`](crate::engine::expiry).

/// The parts of an entity that decide what its writes touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    /// Unique indexes (one claim each).
    pub claims: usize,
    /// Sorted collections a record is a member of: ordered indexes,
    /// relations and the discovery set.
    pub members: usize,
    /// Counters (count or sum).
    pub counters: usize,
    /// Whether records expire (a TTL): writes keep a receipt and a ledger entry.
    pub expires: bool,
    /// Whether a delete needs only the record's entries (records that do
    /// not expire, keep no change feed, and whose delete enforces no
    /// `on_delete`): on a Redis store built with `delete_plans(true)`
    /// every write then stores the record's delete plan beside it, and a
    /// delete is one script.
    pub planned: bool,
}

/// An access pattern of a generated repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `create`.
    Create,
    /// `get`.
    Get,
    /// `get_many`.
    GetMany,
    /// `update` and `modify`.
    Update,
    /// `delete`.
    Delete,
    /// `find_<unique index>`.
    FindUnique,
    /// A page of `list_<index>` or `list_by_<relation>`.
    ListCollection,
    /// `count_<counter>` or `sum_<counter>`.
    ReadCounter,
    /// `count_<counter>` or `sum_<counter>` of a counter with `shards`.
    ReadShardedCounter,
    /// A page of `list_all`.
    ListAll,
    /// One page of `sweep_expired`.
    SweepExpired,
    /// `link_<link>` (either record may be on either side).
    Link,
    /// `unlink_<link>`.
    Unlink,
    /// A page of `list_<link>` or `list_<inverse>`.
    ListLinked,
    /// `count_<link>` or `count_<inverse>`.
    CountLinked,
}

impl Access {
    /// Store calls when no other writer interferes and nothing stale is
    /// met: what a store wrapper counts, the same on every backend. A write
    /// that reads first is one call ([`Store::commit_after_read`]), a
    /// unique lookup one ([`Store::get_via`]), a page one
    /// ([`Store::range_values`]).
    ///
    /// [`Store::commit_after_read`]: crate::Store::commit_after_read
    /// [`Store::get_via`]: crate::Store::get_via
    /// [`Store::range_values`]: crate::Store::range_values
    pub fn calls(self) -> u32 {
        match self {
            Access::SweepExpired => 3,
            Access::ListLinked => 2,
            _ => 1,
        }
    }

    /// Round trips on Redis, under the same assumptions: each call is one,
    /// except a write that reads first, which reads, then commits
    /// (optimistically: it retries when another writer came in between).
    /// Memory and redb make [`calls`](Access::calls) in process, and read,
    /// compute and write such a write in one transaction. (Redis adds one
    /// round trip the first time a server runs each of its scripts: the
    /// first unique lookup or page, and the first delete by a plan.)
    pub fn round_trips(self) -> u32 {
        match self {
            Access::Update | Access::Delete | Access::Link | Access::Unlink => 2,
            other => other.calls(),
        }
    }

    /// The store calls, in words, for an entity of `shape`.
    pub fn operations(self, shape: &Shape) -> String {
        let write = format!(
            "{} claim(s), {} member(s), {} counter(s)",
            shape.claims, shape.members, shape.counters
        );
        let (absent, put, read, unchanged, moved, gone) = if shape.expires {
            (
                "record and receipt absent",
                "put record and receipt, add ledger entry",
                "get_many of record and receipt",
                "record and receipt unchanged",
                "; replace receipt and ledger entry",
                "; delete receipt and ledger entry",
            )
        } else {
            (
                "record absent",
                "put record",
                "get record",
                "record unchanged",
                "",
                "",
            )
        };
        let plan = if shape.planned {
            ", put delete plan (Redis with delete plans)"
        } else {
            ""
        };
        match self {
            Access::Create => format!("commit: {absent} + claims free; {put}{plan}, add {write}"),
            Access::Get => "get record (migrated on read if older)".into(),
            Access::GetMany => "get_many (MGET on Redis)".into(),
            Access::Update => format!(
                "{read}; commit: {unchanged}; move {write}{moved}{plan} (one write transaction \
                 on memory and redb)"
            ),
            Access::Delete if shape.planned => format!(
                "on Redis with delete plans, one script: the record's delete plan, if written \
                 for the bytes it holds and no link registry is there, removes record, plan and \
                 {write}; otherwise, and elsewhere, get_many of record and link registry; commit: \
                 record \
                 and link registry unchanged; remove {write}, and the link registry with the \
                 link collections and counts it names (one write transaction on memory and redb)"
            ),
            // A record that does not expire may be linked: its delete reads
            // its link registry with it and removes what the registry names.
            Access::Delete if !shape.expires => format!(
                "get_many of record and link registry; commit: record and link registry \
                 unchanged; remove {write}, and the link registry with the link collections and \
                 counts it names (one write transaction on memory and redb)"
            ),
            Access::Delete => format!(
                "{read}; commit: {unchanged}; remove {write}{gone} (one write transaction on \
                 memory and redb)"
            ),
            Access::FindUnique => {
                "get claim and the record it names (one script on Redis, one read transaction \
                 on redb)"
                    .into()
            }
            Access::ListCollection => "range and the records of its members (one script on \
                                       Redis, one read transaction on redb)"
                .into(),
            Access::ReadCounter => "get counter".into(),
            Access::ReadShardedCounter => "get_many of every shard, summed (MGET on Redis)".into(),
            Access::ListAll => "range over the discovery set and its records, together".into(),
            Access::SweepExpired => "range over the ledger up to now; get_many of records and \
                                     receipts; commit (per page of due entries)"
                .into(),
            Access::Link => "get_many of both records, both link registries and the edge; \
                             commit: both records and registries unchanged, edge as read; put \
                             edge (and a registry that lacks the link), add each missing \
                             entry and count it (one write transaction on memory and redb)"
                .into(),
            Access::Unlink => "get_many of both link registries and the edge; commit: all \
                               three as read; delete edge, remove each entry and uncount it \
                               (one write transaction on memory and redb)"
                .into(),
            Access::ListLinked => "range of the link collection and its records, together; \
                                   get_many of the edges and far link registries (and the \
                                   record itself when its entity expires; a stale entry \
                                   met adds a conditional commit removing it)"
                .into(),
            Access::CountLinked => "get link count".into(),
        }
    }
}

/// Store calls of the first read a repository makes of something added
/// after version 1: the read of its state.
pub const STATE_CHECK: u32 = 1;

/// Store calls that establish an entity's index state where none is
/// recorded, for an entity of at most 1000 records: a page of the discovery
/// set, the versions of its records, and the write of the state.
pub const STATE_FIRST_LOOK: u32 = 3;

/// What the report says about retries, the occasional extra commit and
/// the state checks, which the per-access counts leave out.
pub fn footnote() -> String {
    format!(
        "On Redis, updates and deletes retry their read and commit when another writer changed \
         the record meanwhile (memory and redb never retry: one write transaction); the first \
         commit, the first unique lookup or page, and the first delete by a plan, on a Redis \
         server that has not run the script yet take one round trip more; with delete plans \
         (RedisStoreBuilder::delete_plans), a delete is one round trip, and one whose plan does \
         not apply (a record with links, or one rewritten by a writer that keeps no plans) goes \
         the usual way after it; listings add one commit when they remove entries of expired records or \
         entries their records no longer derive; one write in {} of an expiring entity is \
         followed by a sweep step. The first read a repository makes of an index, relation or \
         counter added after version 1 also reads its state ({} round trip; {} more, once per \
         store, where none is recorded yet).",
        super::expiry::STEP_ONE_IN,
        STATE_CHECK,
        STATE_FIRST_LOOK,
    )
}
