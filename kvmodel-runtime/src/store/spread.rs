//! Discovery sets kept over several keys (Redis Cluster, DynamoDB).
//!
//! Every create and delete of an entity adds to or removes from its
//! discovery set (`{ns}:{space}#all`). Kept as one collection, it is one
//! key every writer of the entity meets: one cluster node, one DynamoDB
//! partition and head item. These stores keep it as one logical
//! collection over N stored collections, its *shards*: a member goes to the
//! shard its bytes pick, a range reads every shard from the same position
//! and merges them in entry order (so pages and cursors work as on one
//! key), a length sums them, a delete or an expiry reaches them all. The
//! repository code does not know; it names the logical key, as on every
//! store.

use crate::codec::key::{Derived, DerivedKey};
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Condition, Op};
use crate::store::{Direction, RangeResult, page_from_entries};

/// Whether `key` names a discovery set (`{ns}:{space}#all`).
pub(crate) fn is_discovery(key: &str) -> bool {
    DerivedKey::parse(key).is_some_and(|d| d.kind == Derived::Discovery)
        && key.ends_with(Derived::Discovery.as_str())
}

/// Where a store keeps keys, and the shards of discovery sets.
pub(crate) trait Spread {
    /// The stored form of a key that is not a discovery set.
    fn stored(&self, key: &str) -> String;
    /// How many shards a discovery set has.
    fn shard_count(&self) -> u16;
    /// The stored key of shard `i` of the discovery set `key`.
    fn shard_key(&self, key: &str, i: u16) -> String;
    /// The stored key of the shard of the discovery set `key` that holds
    /// `member`.
    fn shard_for(&self, key: &str, member: &[u8]) -> String;

    /// The stored keys of the shards of `key` when it is a discovery set.
    fn shards_of(&self, key: &str) -> Option<Vec<String>> {
        is_discovery(key).then(|| {
            (0..self.shard_count())
                .map(|i| self.shard_key(key, i))
                .collect()
        })
    }
}

/// `batch` with stored keys ([`Spread::stored`]), and each discovery-set
/// operation sent to its shard (or, for a delete or an expiry, to every
/// shard). A condition, put, trim or increment on a discovery set is
/// refused: no repository writes one.
pub(crate) fn spread(batch: Batch, store: &impl Spread) -> Result<Batch> {
    let refuse = |key: &str, what: &str| Error::InvalidBatch {
        key: key.to_owned(),
        reason: format!(
            "{what} meets a discovery set, which this store keeps as a sharded sorted \
             collection; only add, remove, delete and expire apply to it"
        ),
    };
    let (conditions, ops) = batch.into_parts();
    let mut out = Batch::with_capacity(conditions.len(), ops.len());
    for c in conditions {
        if is_discovery(c.key()) {
            return Err(refuse(c.key(), "a condition"));
        }
        out.condition(match c {
            Condition::Absent(k) => Condition::Absent(store.stored(&k)),
            Condition::Equals(k, v) => Condition::Equals(store.stored(&k), v),
            Condition::AbsentOrEquals(k, v) => Condition::AbsentOrEquals(store.stored(&k), v),
            Condition::Present(k) => Condition::Present(store.stored(&k)),
        });
    }
    for op in ops {
        let key = op.key().to_owned();
        if !is_discovery(&key) {
            out.op(match op {
                Op::Put { value, ttl, .. } => Op::Put {
                    key: store.stored(&key),
                    value,
                    ttl,
                },
                Op::Delete { .. } => Op::Delete {
                    key: store.stored(&key),
                },
                Op::DeleteIfEquals { value, .. } => Op::DeleteIfEquals {
                    key: store.stored(&key),
                    value,
                },
                Op::Incr { delta, limit, .. } => Op::Incr {
                    key: store.stored(&key),
                    delta,
                    limit,
                },
                Op::Add { sort, member, .. } => Op::Add {
                    key: store.stored(&key),
                    sort,
                    member,
                },
                Op::Remove { sort, member, .. } => Op::Remove {
                    key: store.stored(&key),
                    sort,
                    member,
                },
                Op::Trim { keep, .. } => Op::Trim {
                    key: store.stored(&key),
                    keep,
                },
                Op::Expire { ttl, .. } => Op::Expire {
                    key: store.stored(&key),
                    ttl,
                },
            });
            continue;
        }
        match op {
            Op::Add { sort, member, .. } => {
                out.add(store.shard_for(&key, &member), sort, member);
            }
            Op::Remove { sort, member, .. } => {
                out.remove(store.shard_for(&key, &member), sort, member);
            }
            Op::Delete { .. } => {
                for i in 0..store.shard_count() {
                    out.delete(store.shard_key(&key, i));
                }
            }
            Op::Expire { ttl, .. } => {
                for i in 0..store.shard_count() {
                    out.expire(store.shard_key(&key, i), ttl);
                }
            }
            Op::Put { .. } => return Err(refuse(&key, "a put")),
            Op::DeleteIfEquals { .. } => return Err(refuse(&key, "a conditional delete")),
            Op::Trim { .. } => return Err(refuse(&key, "a trim")),
            Op::Incr { .. } => return Err(refuse(&key, "an increment")),
        }
    }
    Ok(out)
}

/// A page of a collection kept over shards, from the entries each shard
/// gave for the same request (up to `limit + 1` each, in `direction`
/// order): merged in entry order.
pub(crate) fn merge(
    shards: impl IntoIterator<Item = Vec<Vec<u8>>>,
    limit: usize,
    direction: Direction,
) -> Result<RangeResult> {
    let mut all: Vec<Vec<u8>> = shards.into_iter().flatten().collect();
    all.sort();
    if direction == Direction::Descending {
        all.reverse();
    }
    all.dedup();
    all.truncate(limit.saturating_add(1));
    page_from_entries(all, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_keys_are_recognised_by_their_marker() {
        assert!(is_discovery("shop:user#all"));
        assert!(!is_discovery("shop:user#idx:all"));
        assert!(!is_discovery("shop:user:all"));
        assert!(!is_discovery("shop:user#x#all"));
    }
}
