//! What each access pattern of a generated repository asks of its store: the
//! store calls it makes, in words, and how many round trips they take.
//!
//! This table is the one place these costs are written down. `kvmodel keys`
//! prints it for a model, and a test counts the store calls of every access
//! pattern on every backend against it, so the report cannot drift from
//! what the engine does.

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
    /// A page of `list_all`.
    ListAll,
    /// One page of `sweep_expired`.
    SweepExpired,
}

impl Access {
    /// Store calls, and so round trips on a networked store, when no other
    /// writer interferes and nothing stale is met. Memory and redb make the
    /// same calls in process. (Redis adds one round trip for loading its
    /// script the first time a connection commits.)
    pub fn round_trips(self) -> u32 {
        match self {
            Access::Create | Access::Get | Access::GetMany | Access::ReadCounter => 1,
            Access::Update
            | Access::Delete
            | Access::FindUnique
            | Access::ListCollection
            | Access::ListAll => 2,
            Access::SweepExpired => 3,
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
        match self {
            Access::Create => format!("commit: {absent} + claims free; {put}, add {write}"),
            Access::Get => "get record (migrated on read if older)".into(),
            Access::GetMany => "get_many (MGET on Redis)".into(),
            Access::Update => format!("{read}; commit: {unchanged}; move {write}{moved}"),
            Access::Delete => format!("{read}; commit: {unchanged}; remove {write}{gone}"),
            Access::FindUnique => "get claim; get record".into(),
            Access::ListCollection => "range (ZRANGEBYLEX on Redis); get_many".into(),
            Access::ReadCounter => "get counter".into(),
            Access::ListAll => "range over the discovery set; get_many".into(),
            Access::SweepExpired => "range over the ledger up to now; get_many of records and \
                                     receipts; commit (per page of due entries)"
                .into(),
        }
    }
}

/// What the report says about retries and the occasional extra commit,
/// which the per-access counts leave out.
pub fn footnote() -> String {
    format!(
        "Updates and deletes retry their read and commit when another writer changed the record \
         meanwhile; listings add one commit when they remove entries of expired records or \
         entries their records no longer derive; one write in {} of an expiring entity is \
         followed by a sweep step.",
        super::expiry::STEP_ONE_IN
    )
}
