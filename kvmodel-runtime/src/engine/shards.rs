//! Sharded counters (`shards: N`): a counter spread over N keys so that
//! concurrent writers of one hot group do not all write one key. Each write
//! adds to one shard, picked at random; a read sums every shard in one
//! round trip ([`Store::get_many`]); `verify` and `reconcile` treat the
//! shards as the one counter they are. Shard 0 is the counter key itself
//! ([`shard_key`]), so declaring `shards` on an existing counter keeps its
//! count.
//!
//! Layer: write parts: above the core, below
//! `transition` and
//! [`tally`](crate::engine::tally).

use crate::codec::key::{Derived, shard_key, shard_of};
use crate::engine::def::EntityDef;
use crate::engine::entity::{CounterKeep, Entity};
use crate::engine::repo::Engine;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::counter::read_counter;

/// The key a write of `delta` to the counter at `key` (spread over
/// `shards` keys) goes to: one shard at random.
pub(crate) fn pick(key: &str, shards: u32) -> String {
    if shards <= 1 {
        key.to_owned()
    } else {
        shard_key(key, fastrand::u32(0..shards))
    }
}

/// How far each shard of a counter spread over `shards` keys may go from
/// 0: its share of what a 64-bit total holds, so that the shards' total is
/// always readable. A write that would take a shard past it is refused.
pub(crate) fn limit(shards: u32) -> i64 {
    i64::MAX / i64::from(shards.max(1))
}

/// The keys of every shard of the counter at `key`, shard 0 first.
pub fn keys(key: &str, shards: u32) -> Vec<String> {
    (0..shards.max(1)).map(|i| shard_key(key, i)).collect()
}

/// How many keys the counter at `key` (a derived counter key of `def`) is
/// spread over: what `def` declares for its counter, or 1 for a key that is
/// itself a shard or names no declared counter.
pub(crate) fn shards_of<D: EntityDef>(def: &D, key: &str) -> u32 {
    if shard_of(key).1 != 0 {
        return 1;
    }
    match def.space().classify(key) {
        Some((Derived::Counter, name)) => def.counter_shards(name).max(1),
        _ => 1,
    }
}

/// Whether the counter at `key` (a derived counter key of `def`, or a
/// shard of one) keeps the amounts of records that are gone. A shard
/// beyond the declared number of a kept counter is kept too: nothing
/// lowers what such a counter counted.
pub(crate) fn keep_of<D: EntityDef>(def: &D, key: &str) -> CounterKeep {
    match def.space().classify(shard_of(key).0) {
        Some((Derived::Counter, name)) => def.counter_keep(name),
        _ => CounterKeep::Follows,
    }
}

/// The key a counter key met by the inward walk stands for: a shard
/// within the declared number stands for its counter; a shard beyond it
/// (left after lowering `shards`) is read by nobody and stands for itself.
pub(crate) fn counter_of<D: EntityDef>(def: &D, key: String) -> String {
    let (base, shard) = shard_of(&key);
    if shard != 0 && shard < shards_of(def, base) {
        base.to_owned()
    } else {
        key
    }
}

/// The value of every shard of the counter at `key`, read in one round
/// trip: `(shard key, value)` for the shards that hold one (a counter of
/// one key is read as [`Store::counter`] reads it, 0 when absent).
pub async fn read<S: Store>(store: &S, key: &str, shards: u32) -> Result<Vec<(String, i64)>> {
    if shards <= 1 {
        return Ok(vec![(key.to_owned(), store.counter(key).await?)]);
    }
    let keys = keys(key, shards);
    let values = store.get_many(&keys).await?;
    let mut out = Vec::new();
    for (k, v) in keys.into_iter().zip(values) {
        if let Some(bytes) = v {
            let n = read_counter(&k, &bytes)?;
            out.push((k, n));
        }
    }
    Ok(out)
}

/// The sum of shard values, exact.
pub(crate) fn total(values: &[(String, i64)]) -> i128 {
    values.iter().map(|(_, v)| i128::from(*v)).sum()
}

/// The value of the counter at `key` spread over `shards` keys, as the
/// repository's `count_*` and `sum_*` read it: the sum of its shards, read
/// in one round trip ([`read`]). A sum beyond 64 bits is an error
/// (`reconcile` brings such a counter back in step with the records).
pub async fn value<S: Store>(store: &S, key: &str, shards: u32) -> Result<i64> {
    sum(key, shards, &read(store, key, shards).await?)
}

/// The value of the counter at `key` whose shards hold `values` (as
/// [`read`] returns them); an error when they add up to more than 64 bits
/// hold.
pub fn sum(key: &str, shards: u32, values: &[(String, i64)]) -> Result<i64> {
    let sum = total(values);
    i64::try_from(sum).map_err(|_| {
        Error::decode(
            key,
            format!(
                "its {shards} shards add up to {sum}, more than a 64-bit counter holds; \
                 run `reconcile` to bring it back in step with the records"
            ),
            None,
        )
    })
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// The counter at `key` spread over `shards` keys: the sum of its
    /// shards, read in one round trip ([`value`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "count", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn count_sharded(&self, key: &str, shards: u32) -> Result<i64> {
        value(self.store(), key, shards).await
    }
}
