//! What each access pattern of a generated repository sends to DynamoDB
//! (`DynamoStore`): its requests, the items of its transaction, and the
//! capacity units they consume.
//!
//! The companion of [`cost`](super::cost) for DynamoDB: `kvmodel keys
//! --store dynamodb` prints it, `kvmodel check` warns (W006) where an
//! entity's largest write needs more actions than one transaction holds,
//! and a test counts the requests and actions of each pattern on the
//! DynamoDB emulator against it.
//!
//! Capacity units assume items of at most 1 KB (records, claims, member
//! items, counters): a strongly consistent read is 1 RCU per 4 KB of item,
//! a transactional read (and a transaction's `ConditionCheck`) 2 RCU per
//! 4 KB, a transactional write 2 WCU per 1 KB.
//!
//! Layer: maintenance (the top layer): above [`cost`](crate::engine::cost).

use super::cost::Access;

/// DynamoDB's limit on the actions of one `TransactWriteItems`.
pub const MAX_ACTIONS: usize = 100;

/// DynamoDB's limit on the size of one item, in bytes.
pub const MAX_ITEM_BYTES: u64 = 400 * 1024;

/// How many collections a discovery set is kept over.
pub const DISCOVERY_SHARDS: usize = 8;

/// The parts of an entity that decide what its writes send to DynamoDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DynamoShape {
    /// Unique indexes (one claim item each).
    pub claims: usize,
    /// Ordered indexes and relations: collections a record is a member of
    /// (the discovery set apart).
    pub collections: usize,
    /// Of those, the ones whose key holds a field of the record (a
    /// relation, an index with `fields`): an update can move the record
    /// from one such collection to another.
    pub grouped: usize,
    /// Of those, the capped ones (`keep: N`): an add to a full one also
    /// deletes the member it trims.
    pub capped: usize,
    /// Counters the record moves (declared counters and the children's
    /// counts of enforced relations); each has a change stamp.
    pub counters: usize,
    /// Of those, counters with `keep: always`, which a delete leaves.
    pub kept_on_delete: usize,
    /// Counter keys an update can move: two per counter with `group_by`
    /// (the old group's and the new one's), one per sum without.
    pub moving_counters: usize,
    /// Relations with an enforced `on_delete`: a write that names a parent
    /// checks the parent record.
    pub parents: usize,
    /// Relations of other entities that name this one with an enforced
    /// `on_delete`: a delete removes each count of children (conditioned
    /// on it being 0) and raises its stamp.
    pub dependents: usize,
    /// Records expire: writes keep a receipt item and a ledger entry.
    pub expires: bool,
}

/// Requests sent, by operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Requests {
    /// `GetItem`.
    pub get_item: u32,
    /// `BatchGetItem`.
    pub batch_get_item: u32,
    /// `Query`.
    pub query: u32,
    /// `TransactGetItems`.
    pub transact_get_items: u32,
    /// `TransactWriteItems`.
    pub transact_write_items: u32,
}

impl Requests {
    /// Every request.
    pub fn total(&self) -> u32 {
        self.get_item
            + self.batch_get_item
            + self.query
            + self.transact_get_items
            + self.transact_write_items
    }

    /// Each operation sent at least once, with its count, in a fixed order:
    /// `("GetItem", 1)`, … (the names `X-Amz-Target` gives them).
    pub fn by_operation(&self) -> Vec<(&'static str, u32)> {
        [
            ("GetItem", self.get_item),
            ("BatchGetItem", self.batch_get_item),
            ("Query", self.query),
            ("TransactGetItems", self.transact_get_items),
            ("TransactWriteItems", self.transact_write_items),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }
}

/// What one access pattern sends to DynamoDB when no other writer
/// interferes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DynamoCost {
    /// Requests, for the pattern's fixed part (a page: of one page).
    pub requests: Requests,
    /// Items read with plain (strongly consistent) reads: 1 RCU each.
    pub reads: u32,
    /// Heads read in the commit's `TransactGetItems`: 2 RCU each.
    pub transact_reads: u32,
    /// Actions of the `TransactWriteItems` that write an item (`Put`,
    /// `Update`, `Delete`): 2 WCU each.
    pub writes: u32,
    /// Its `ConditionCheck` actions: 2 RCU each.
    pub checks: u32,
    /// What the numbers leave out, or where they depend on the data.
    pub note: &'static str,
}

impl DynamoCost {
    /// Read capacity units, items of at most 4 KB.
    pub fn rcu(&self) -> u32 {
        self.reads + 2 * (self.transact_reads + self.checks)
    }

    /// Write capacity units, items of at most 1 KB.
    pub fn wcu(&self) -> u32 {
        2 * self.writes
    }

    /// Actions of its `TransactWriteItems` (at most [`MAX_ACTIONS`]).
    pub fn actions(&self) -> u32 {
        self.writes + self.checks
    }
}

fn n(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

impl DynamoShape {
    /// Collections a create adds the record to: its indexes and relations,
    /// one shard of the discovery set, and the ledger when it expires.
    fn added_to(&self) -> u32 {
        n(self.collections) + 1 + u32::from(self.expires)
    }

    /// A create: the record (and receipt), each claim, each collection's
    /// head and new member item, each counter and its change stamp, and a
    /// check of each parent.
    pub fn create(&self) -> DynamoCost {
        let e = u32::from(self.expires);
        let heads = 1 + e + n(self.claims) + self.added_to() + n(self.parents);
        DynamoCost {
            requests: Requests {
                batch_get_item: 1,
                transact_get_items: 1,
                transact_write_items: 1,
                ..Requests::default()
            },
            reads: self.added_to(),
            transact_reads: heads,
            writes: 1 + e + n(self.claims) + 2 * self.added_to() + 2 * n(self.counters),
            checks: n(self.parents),
            note: "",
        }
    }

    /// An update that moves every derived item it can (every unique
    /// value, collection entry and counter group changes): the record (and
    /// receipt), a new claim and the old one's deletion each; per
    /// collection its member items, old and new, and its head (two heads
    /// when the record moves to another collection); per counter key moved
    /// the counter and its stamp; the discovery member and its shard's head
    /// checked; each new parent checked. One that moves nothing derived
    /// writes the record and checks the discovery member and head.
    pub fn update(&self) -> DynamoCost {
        let e = u32::from(self.expires);
        let colls = n(self.collections) + e;
        let heads = colls + n(self.grouped);
        DynamoCost {
            requests: Requests {
                get_item: 1 - e,
                batch_get_item: 1 + e,
                transact_get_items: 1,
                transact_write_items: 1,
                ..Requests::default()
            },
            reads: 1 + e + 2 * colls + 1,
            transact_reads: 1 + e + 2 * n(self.claims) + heads + 1 + n(self.parents),
            writes: 1
                + e
                + 2 * n(self.claims)
                + heads
                + 2 * colls
                + n(self.capped)
                + 2 * n(self.moving_counters),
            checks: 2 + n(self.parents),
            note: "every derived value moved; with none moved: the record written, the discovery member and head checked",
        }
    }

    /// A delete: the record (and receipt), its claims, its member items and
    /// their heads, its counters (but those kept on delete) and their
    /// stamps; each dependent's count of children, deleted on the condition
    /// that it is 0, and its stamp; a check of its link registry.
    pub fn delete(&self) -> DynamoCost {
        let e = u32::from(self.expires);
        let registry = 1;
        let counters = n(self.counters - self.kept_on_delete.min(self.counters));
        DynamoCost {
            requests: Requests {
                batch_get_item: 2,
                transact_get_items: 1,
                transact_write_items: 1,
                ..Requests::default()
            },
            reads: 2 + self.added_to(),
            transact_reads: 1
                + e
                + registry
                + n(self.claims)
                + self.added_to()
                + n(self.dependents),
            writes: 1
                + e
                + n(self.claims)
                + 2 * self.added_to()
                + 2 * counters
                + 2 * n(self.dependents),
            checks: registry,
            note: "",
        }
    }

    /// What `access` sends, for a page of `page` records where it lists.
    pub fn cost(&self, access: Access, page: u32) -> DynamoCost {
        let read = |requests: Requests, reads: u32, note: &'static str| DynamoCost {
            requests,
            reads,
            note,
            ..DynamoCost::default()
        };
        match access {
            Access::Create => self.create(),
            Access::Update => self.update(),
            Access::Delete => self.delete(),
            Access::Get | Access::ReadCounter | Access::CountLinked => read(
                Requests {
                    get_item: 1,
                    ..Requests::default()
                },
                1,
                "",
            ),
            Access::GetMany | Access::ReadShardedCounter => read(
                Requests {
                    batch_get_item: 1,
                    ..Requests::default()
                },
                page,
                "1 BatchGetItem per 100 keys, 1 RCU per key",
            ),
            Access::FindUnique => read(
                Requests {
                    get_item: 2,
                    ..Requests::default()
                },
                2,
                "the claim, then the record",
            ),
            Access::ListCollection => read(
                Requests {
                    get_item: 1,
                    query: 1,
                    batch_get_item: 1,
                    ..Requests::default()
                },
                1 + 1 + page,
                "the head, a Query of the page's member items (1 RCU per 4 KB of them), the records",
            ),
            Access::ListAll => read(
                Requests {
                    batch_get_item: 2,
                    query: n(DISCOVERY_SHARDS),
                    ..Requests::default()
                },
                n(DISCOVERY_SHARDS) * 2 + page,
                "the 8 shard heads, a Query per live shard (up to 8, sent at once), the records",
            ),
            Access::SweepExpired | Access::Link | Access::Unlink | Access::ListLinked => {
                read(Requests::default(), 0, "depends on the data")
            }
        }
    }
}
