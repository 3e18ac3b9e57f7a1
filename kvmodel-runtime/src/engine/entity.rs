//! The traits `#[derive(KvEntity)]` implements, and the facts an entity
//! derives from one record image (its claims, collection members, counters).
//!
//! Layer: data: the traits and facts every other layer builds on; below it only
//! [`relation`](crate::engine::relation).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::compress;
use crate::codec::key::{Derived, RecordKeys, Space};
use crate::codec::proto::ProtoMessage;
use crate::codec::record::{self, Encoding};
use crate::codec::storage::Storage;
use crate::engine::relation::{DependentFact, Kind, ParentFact};
use crate::error::{Error, Result};
use crate::schema::OnDelete;
use crate::store::Store;

pub use crate::schema::{ClaimFact, CounterKeep, Facts, MemberFact, Ttl};

/// A record type with a version, readable from any older version.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a versioned kvmodel record",
    note = "add `#[derive(kvmodel::KvEntity)]` with `#[kv(version = N)]` to `{Self}`"
)]
pub trait Versioned: DeserializeOwned + Sized {
    /// The version this type is written at.
    const VERSION: u32;

    /// Builds `Self` from the generic value of a record written at `version`
    /// (`version < VERSION`), running the declared migration steps.
    fn upcast(key: &str, version: u32, value: serde_json::Value) -> Result<Self>;

    /// The protobuf fields of this type when it is encoded with protobuf
    /// (`None` otherwise).
    const PROTO: Option<&'static ProtoMessage> = None;

    /// The protobuf fields a record written at `version` (at most
    /// [`VERSION`](Self::VERSION)) is read with: a `migrate_from` chain
    /// answers with the older type's.
    fn proto_at(version: u32) -> Option<&'static ProtoMessage> {
        let _ = version;
        Self::PROTO
    }
}

/// Static facts about an entity.
#[derive(Debug, Clone, Copy)]
pub struct EntityMeta {
    /// The Rust type name.
    pub name: &'static str,
    /// First segment of every key.
    pub namespace: &'static str,
    /// The entity's key space in derived keys: the literal segments of its
    /// key template (`user` for `user:{id}`), never its Rust type name.
    pub key_space: &'static str,
    /// The key template, `:`-separated, each placeholder as `{field}`
    /// (`user:{id}`): where a store that ranges over its keys finds the
    /// entity's records.
    pub key: &'static str,
    /// Payload encoding.
    pub encoding: Encoding,
    /// Record time to live.
    pub ttl: Option<Ttl>,
    /// The field that sets each record's own expiry (`expiry: true`,
    /// `#[kv(expiry)]`), if one does: a record whose field is set expires
    /// then; one whose field is `None` follows `ttl`.
    pub expiry: Option<&'static str>,
    /// The size limit applied to every record written.
    pub storage: Storage,
}

/// An entity's change feed: every commit that changes one of its records
/// appends an event to it in the same commit (`engine::feed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedMeta {
    /// How long events are kept: older ones are removed as new ones come.
    pub retain: std::time::Duration,
}

/// A stored entity: `#[derive(KvEntity)]` with a key template implements it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kvmodel entity",
    note = "add `#[derive(kvmodel::KvEntity)]` and `#[kv(namespace = \"…\", key = \"…\")]` to `{Self}`"
)]
pub trait Entity: Versioned + Serialize + Clone + Send + Sync + 'static {
    /// Static facts.
    const META: EntityMeta;

    /// The key of this record.
    fn record_key(&self) -> String;

    /// Every derived entry this record image has.
    fn facts(&self, facts: &mut Facts);

    /// When this record expires by its expiry field
    /// ([`EntityMeta::expiry`]); `None` when the entity has no such field
    /// or the field is `None`.
    fn expires_at(&self) -> Option<crate::time::Timestamp> {
        None
    }

    /// Whether this record's claim for the unique index `index` is
    /// `claim_key` (false when a field it needs is `None`).
    fn claims(&self, index: &str, claim_key: &str) -> bool;

    /// Whether this record, stored at `version`, has the membership
    /// `(collection, sort)`: what [`Facts::stored`] says, answered without
    /// building every fact (generated code matches keys segment by segment).
    fn derives_member(&self, version: u32, collection: &str, sort: &[u8]) -> bool {
        Facts::stored(self, version).has_member(collection, sort)
    }

    /// Whether `key` is this record's key (generated code matches it
    /// without building it).
    fn is_at(&self, key: &str) -> bool {
        self.record_key() == key
    }

    /// The declared indexes, relations and counters by kind, name and the
    /// record version that introduced them (unique indexes are
    /// [`Derived::Claim`]), so maintenance can tell the entity's own
    /// derived keys from those of another version of it. Generated code
    /// lists them; the default lists none, and maintenance then leaves such
    /// keys alone.
    fn declared() -> &'static [(Derived, &'static str, u32)] {
        &[]
    }

    /// The keys the counter `name` is spread over (`shards: N`); 1 for a
    /// counter of one key. Generated code lists the sharded ones.
    fn counter_shards(name: &str) -> u32 {
        let _ = name;
        1
    }

    /// Whether the counter `name` keeps the amounts of records that are
    /// gone (`keep: on_expiry | always`). Generated code lists the kept
    /// ones.
    fn counter_keep(name: &str) -> CounterKeep {
        let _ = name;
        CounterKeep::Follows
    }

    /// The entity's change feed (`feed: { retain: … }`), or `None` when it
    /// keeps none (the default).
    const FEED: Option<FeedMeta> = None;

    /// The fingerprint of the generated code that derives a record's keys
    /// and entries, which a record's delete plan carries
    /// ([`Store::delete_plans`]): a plan written under other code (another
    /// schema) is never used. 0, the default, keeps no plans.
    const PLAN_TAG: u64 = 0;

    /// Whether a relation of another entity to this one is
    /// `on_delete: cascade`: then a delete reads the record first, to find
    /// its children.
    const CASCADES: bool = false;

    /// The children's relations this entity's delete enforces, by child
    /// type name and relation (`dependent(…)`), for the compile-time check
    /// that parent and child agree.
    const DEPENDENTS: &'static [(&'static str, &'static str)] = &[];

    /// This entity's relations that enforce `on_delete`: name, parent type
    /// name and action, for the same check.
    const ENFORCED: &'static [(&'static str, &'static str, OnDelete)] = &[];

    /// The parents this record names in relations that enforce
    /// `on_delete`: a write that gives it one conditions on it existing.
    fn parents(&self) -> Vec<ParentFact> {
        Vec::new()
    }

    /// The relations of other entities to this record that its delete
    /// enforces, in `dependent(…)` order.
    fn dependents(&self) -> Vec<DependentFact> {
        Vec::new()
    }

    /// The entity of the children of dependent number `dependent` (of
    /// [`dependents`](Entity::dependents)), for a delete's worklist
    /// (`engine::on_delete`); `None` past the last.
    fn dependent_kind<S: Store>(dependent: usize) -> Option<Kind<S>> {
        let _ = dependent;
        None
    }

    /// The entity's derived key space: its discovery set, ledger, receipts
    /// and state are spelled there.
    fn space() -> Space<'static> {
        Space::new(Self::META.namespace, Self::META.key_space)
    }

    /// The discovery set listing every record of the entity, on a store
    /// that keeps one ([`Store::orders_keys`] is false).
    fn all_key() -> String {
        Self::space().all_key()
    }

    /// The entity's record keys, as a range.
    fn record_keys() -> RecordKeys {
        RecordKeys::new(Self::META.namespace, Self::META.key)
    }

    /// The expiry ledger: record keys under the time their last write is
    /// due to expire (only expiring entities write to it).
    fn ledger_key() -> String {
        Self::space().ledger_key()
    }

    /// The receipt of the record at `record_key`: what its last write
    /// contributed, kept while the record is live and until its expiry has
    /// been swept (only expiring entities write them).
    fn receipt_key(record_key: &str) -> String {
        Self::space().receipt_key(record_key)
    }

    /// The record key a receipt key belongs to (the inverse of
    /// [`receipt_key`](Entity::receipt_key)).
    fn record_of_receipt(receipt_key: &str) -> Option<String> {
        Self::space().record_of_receipt(receipt_key)
    }

    /// The prefix of every derived key of the entity.
    fn derived_prefix() -> String {
        Self::space().derived_prefix()
    }
}

/// The facts an entity's records derive, computed by its generated code.
impl Facts {
    /// The facts of `value`.
    pub fn of<E: Entity>(value: &E) -> Facts {
        let mut f = Facts::default();
        value.facts(&mut f);
        f
    }

    /// The facts a record stored at `version` has: those of `value` less
    /// what was introduced after `version`.
    pub fn stored<E: Entity>(value: &E, version: u32) -> Facts {
        let mut f = Facts::of(value);
        f.retain_since(version);
        f
    }
}

/// Decodes a stored record of `E`, migrating older versions; returns the
/// stored version too.
pub fn decode<E: Versioned>(key: &str, bytes: &[u8]) -> Result<(u32, E)> {
    // Decompressed once; the record functions read plain bytes as they are.
    let bytes = &*compress::open(key, bytes)?;
    if let Some(value) = record::decode_if_current(key, bytes, E::VERSION)? {
        return Ok((E::VERSION, value));
    }
    let header = record::header(key, bytes)?;
    if header.version == E::VERSION {
        return Ok((
            header.version,
            record::decode_current_with(key, E::PROTO, bytes)?,
        ));
    }
    if header.version > E::VERSION {
        return Err(Error::FutureVersion {
            key: key.to_owned(),
            found: header.version,
            supported: E::VERSION,
        });
    }
    if header.version == 0 {
        return Err(Error::decode(
            key,
            "its version is 0; versions start at 1",
            None,
        ));
    }
    let (version, value) = record::decode_value_with(key, E::proto_at(header.version), bytes)?;
    Ok((version, E::upcast(key, version, value)?))
}

/// Decodes the record stored at `key` like `decode`, and checks that it
/// is the record of that key: bytes copied under another key are not
/// that key's record.
pub fn decode_at<E: Entity>(key: &str, bytes: &[u8]) -> Result<(u32, E)> {
    let (version, value) = decode::<E>(key, bytes)?;
    if !value.is_at(key) {
        let own = value.record_key();
        return Err(Error::decode(
            key,
            format!(
                "it holds the record of `{own}`, not of this key; move it back or purge this key"
            ),
            None,
        ));
    }
    Ok((version, value))
}

/// Encodes `value` at its current version, as its entity stores it:
/// [`Error::ValueTooLarge`] when it is larger than the entity's limit.
pub fn encode<E: Entity>(key: &str, value: &E) -> Result<Vec<u8>> {
    let encoded = record::encode_with(key, E::META.encoding, E::PROTO, E::VERSION, value)?;
    E::META.storage.seal(E::META.name, key, encoded)
}
