//! The lints of `kvmodel check` a model may allow.

/// A lint of `kvmodel check` (and of a build script), which a schema may
/// allow where it knows better: on an entity, an index, a counter, or for
/// the whole file. Written by its code (`W002`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lint {
    /// W001: a counter without a group, one hot key written by every create.
    HotCounter,
    /// W002: an ordered index over a field with few values and no TTL.
    UnboundedIndex,
    /// W003: a key template with long literal segments.
    LongKey,
    /// W004: short-lived data (a session, a cache) without a TTL.
    EphemeralWithoutTtl,
    /// W005: fields that grow without bound and no `max_size`.
    BigRecord,
    /// W006: a write that cannot fit one DynamoDB transaction (more than
    /// 100 actions, or a record larger than an item holds).
    DynamoTransaction,
    /// I001 (information): a co-located entity whose claims, entries or
    /// counters still lie in other slots of a Redis Cluster.
    CrossSlot,
    /// I002 (information): collections and counters shared by the records
    /// of one parent (the value of a key field they are grouped by) lie in
    /// other slots of a Redis Cluster than those records, where
    /// `colocate` on that field would bring them together.
    HotCollections,
}
