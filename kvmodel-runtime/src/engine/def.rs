//! What maintenance needs of an entity, as a value: the one description
//! that both generated entities ([`Typed`]) and the run-time model
//! ([`EntityModel`]) give, so `verify`, `reconcile` and `migrate` are
//! written once for both and agree on every key, entry and counter.
//!
//! Layer: data: above [`entity`](crate::engine::entity), below the maintenance
//! walks that take an [`EntityDef`].

use std::marker::PhantomData;

use crate::codec::key::{Derived, RecordKeys, Space};
use crate::engine::entity::{self, CounterKeep, Entity, Facts, FeedMeta, Ttl};
use crate::engine::records::Records;
use crate::error::Result;
use crate::model::{EntityModel, Record};
use crate::store::Store;
use crate::time::Timestamp;

/// An entity as maintenance sees it.
pub trait EntityDef: Send + Sync {
    /// A record read from the store.
    type Record: Send + Sync;

    /// The entity's name, for messages.
    fn name(&self) -> &str;

    /// Its namespace and key space.
    fn space(&self) -> Space<'_>;

    /// Its record keys, as a range ([`Records`]).
    fn record_keys(&self) -> RecordKeys;

    /// Where its records are listed on `store`.
    fn records<S: Store>(&self, store: &S) -> Records
    where
        Self: Sized,
    {
        Records::on(store, self.space(), || self.record_keys())
    }

    /// The version records are written at.
    fn version(&self) -> u32;

    /// The record time to live.
    fn ttl(&self) -> Option<Ttl>;

    /// The field that sets each record's own expiry, if one does.
    fn expiry_field(&self) -> Option<&str> {
        None
    }

    /// The entity's change feed, if it keeps one: a sweep appends the
    /// `Expired` events of the records it takes back, and writes of
    /// expiring records keep their image for them.
    fn feed(&self) -> Option<FeedMeta> {
        None
    }

    /// When `record` expires by its expiry field (`None`: the entity has
    /// none, or the field is not set).
    fn expires_at(&self, record: &Self::Record) -> Option<Timestamp> {
        let _ = record;
        None
    }

    /// The version that introduced the index, relation or counter `name` of
    /// kind `kind` ([`Derived::Claim`] for a unique index); `None` when the
    /// entity declares no such thing.
    fn since(&self, kind: Derived, name: &str) -> Option<u32>;

    /// The `since` of every index, relation and counter the entity
    /// declares (1 for what the first version had).
    fn sinces(&self) -> Vec<u32>;

    /// Whether a record stored at `version` lacks the entries of something
    /// that is readable while the entity's index state is `complete`: an
    /// index, relation or counter introduced after `version` and at or
    /// before `complete`, whose reads miss the record until a migration
    /// rewrites it.
    fn behind(&self, version: u32, complete: u32) -> bool {
        self.sinces()
            .into_iter()
            .any(|since| version < since && since <= complete)
    }

    /// The keys the counter `name` is spread over (`shards: N`); 1 for a
    /// counter of one key, or a name the entity does not declare.
    fn counter_shards(&self, name: &str) -> u32 {
        let _ = name;
        1
    }

    /// Whether the counter `name` keeps the amounts of records that are
    /// gone (`keep: on_expiry | always`): then live records tell only a
    /// lower bound of it. [`CounterKeep::Follows`] for a name the entity
    /// does not declare.
    fn counter_keep(&self, name: &str) -> CounterKeep {
        let _ = name;
        CounterKeep::Follows
    }

    /// Reads the bytes stored at `key`: the version they are at, and the
    /// record (an older one migrated). Bytes that do not decode, of a newer
    /// version, or of another key are an error.
    fn read(&self, key: &str, bytes: &[u8]) -> Result<(u32, Self::Record)>;

    /// Every derived entry of the record at the current version.
    fn facts(&self, record: &Self::Record) -> Result<Facts>;

    /// The bytes of the record at the current version.
    fn encode(&self, key: &str, record: &Self::Record) -> Result<Vec<u8>>;

    /// The entries the record stored at `key` as `bytes` has at its stored
    /// version.
    fn stored_facts(&self, key: &str, bytes: &[u8]) -> Result<(u32, Facts)> {
        let (version, record) = self.read(key, bytes)?;
        let mut facts = self.facts(&record)?;
        facts.retain_since(version);
        Ok((version, facts))
    }

    /// Whether records may expire (by the entity's `ttl` or their own
    /// expiry field).
    fn expiring(&self) -> bool {
        self.ttl().is_some() || self.expiry_field().is_some()
    }
}

/// A generated entity `E` as an [`EntityDef`].
pub struct Typed<E>(PhantomData<fn() -> E>);

impl<E> Typed<E> {
    /// The description of `E`.
    pub const fn new() -> Self {
        Typed(PhantomData)
    }
}

impl<E> Default for Typed<E> {
    fn default() -> Self {
        Typed::new()
    }
}

impl<E> std::fmt::Debug for Typed<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Typed<{}>", std::any::type_name::<E>())
    }
}

impl<E: Entity> EntityDef for Typed<E> {
    type Record = E;

    fn name(&self) -> &str {
        E::META.name
    }

    fn space(&self) -> Space<'_> {
        E::space()
    }

    fn record_keys(&self) -> RecordKeys {
        E::record_keys()
    }

    fn version(&self) -> u32 {
        E::VERSION
    }

    fn ttl(&self) -> Option<Ttl> {
        E::META.ttl
    }

    fn feed(&self) -> Option<FeedMeta> {
        E::FEED
    }

    fn expiry_field(&self) -> Option<&str> {
        E::META.expiry
    }

    fn expires_at(&self, record: &E) -> Option<Timestamp> {
        record.expires_at()
    }

    fn since(&self, kind: Derived, name: &str) -> Option<u32> {
        E::declared()
            .iter()
            .find(|(k, n, _)| *k == kind && *n == name)
            .map(|(_, _, since)| *since)
    }

    fn sinces(&self) -> Vec<u32> {
        E::declared().iter().map(|(_, _, since)| *since).collect()
    }

    fn counter_shards(&self, name: &str) -> u32 {
        E::counter_shards(name)
    }

    fn counter_keep(&self, name: &str) -> CounterKeep {
        E::counter_keep(name)
    }

    fn read(&self, key: &str, bytes: &[u8]) -> Result<(u32, E)> {
        entity::decode_at::<E>(key, bytes)
    }

    fn facts(&self, record: &E) -> Result<Facts> {
        Ok(Facts::of(record))
    }

    fn encode(&self, key: &str, record: &E) -> Result<Vec<u8>> {
        entity::encode(key, record)
    }
}

/// The key space of a model entity, computed once.
#[derive(Debug, Clone)]
pub struct ModelDef {
    model: EntityModel,
    key_space: String,
}

impl ModelDef {
    /// The description of `model`.
    pub fn new(model: EntityModel) -> Self {
        ModelDef {
            key_space: model.key_space(),
            model,
        }
    }

    /// The model.
    pub fn model(&self) -> &EntityModel {
        &self.model
    }
}

impl EntityDef for ModelDef {
    type Record = Record;

    fn name(&self) -> &str {
        &self.model.name
    }

    fn space(&self) -> Space<'_> {
        Space::new(&self.model.namespace, &self.key_space)
    }

    fn record_keys(&self) -> RecordKeys {
        self.model.record_keys()
    }

    fn version(&self) -> u32 {
        self.model.version
    }

    fn ttl(&self) -> Option<Ttl> {
        self.model.ttl
    }

    fn expiry_field(&self) -> Option<&str> {
        self.model.expiry.as_deref()
    }

    fn feed(&self) -> Option<FeedMeta> {
        self.model.feed.map(|retain| FeedMeta { retain })
    }

    fn expires_at(&self, record: &Record) -> Option<Timestamp> {
        record.expires_at(&self.model)
    }

    fn since(&self, kind: Derived, name: &str) -> Option<u32> {
        self.model
            .declared()
            .iter()
            .find(|d| d.kind == kind && d.name == name)
            .map(|d| d.since)
    }

    fn sinces(&self) -> Vec<u32> {
        self.model.declared().iter().map(|d| d.since).collect()
    }

    fn counter_shards(&self, name: &str) -> u32 {
        self.model
            .counters
            .iter()
            .find(|c| c.name == name)
            .map_or(1, |c| c.shards)
    }

    fn counter_keep(&self, name: &str) -> CounterKeep {
        self.model
            .counters
            .iter()
            .find(|c| c.name == name)
            .map_or(CounterKeep::Follows, |c| c.keep)
    }

    fn read(&self, key: &str, bytes: &[u8]) -> Result<(u32, Record)> {
        let record = self.model.read(key, bytes)?;
        Ok((record.version, record))
    }

    fn facts(&self, record: &Record) -> Result<Facts> {
        self.model.facts(&record.value)
    }

    fn encode(&self, key: &str, record: &Record) -> Result<Vec<u8>> {
        self.model.encode(key, &record.value)
    }
}
