//! The discovery set of an entity (`{ns}:{space}#all`), which every create
//! and delete of the entity writes, kept over [`SHARDS`] partitions
//! `{ns}:{space}#all:{i}` ([`spread`](crate::store::spread)): a member goes
//! to the partition a hash of its bytes picks, so concurrent writers of one
//! entity spread over as many head items and partitions. A range reads
//! every shard from the same position (concurrently) and merges them.

use crate::error::Result;
use crate::store::spread::{Spread, is_discovery, merge};
use crate::store::{RangeRequest, RangeResult, bounds_empty, entry_bounds};

use super::{DynamoStore, Head, Kind, io};

/// How many partitions each discovery set is kept over.
pub(crate) const SHARDS: u16 = 8;

impl Spread for DynamoStore {
    fn stored(&self, key: &str) -> String {
        key.to_owned()
    }

    fn shard_count(&self) -> u16 {
        SHARDS
    }

    fn shard_key(&self, key: &str, i: u16) -> String {
        format!("{key}:{i}")
    }

    fn shard_for(&self, key: &str, member: &[u8]) -> String {
        // FNV-1a: stable across builds and platforms, so a member is
        // always looked for where it was put.
        let hash = crate::codec::fnv1a(member);
        let i = u16::try_from(hash % u64::from(SHARDS)).unwrap_or(0);
        self.shard_key(key, i)
    }
}

/// The key a stored partition key stands for: a shard of a discovery set
/// stands for the set.
pub(super) fn logical(pk: &str) -> &str {
    match pk.rsplit_once(':') {
        Some((set, i)) if is_discovery(set) && i.parse::<u16>().is_ok_and(|i| i < SHARDS) => set,
        _ => pk,
    }
}

impl DynamoStore {
    /// The live shards of a collection kept over `shards`, with their
    /// generation and member count (one `BatchGetItem`).
    async fn live_shards(&self, shards: &[String]) -> Result<Vec<(String, u64, u64)>> {
        let now = self.clock.now_ms();
        let heads = self.heads(shards).await?;
        Ok(shards
            .iter()
            .zip(heads)
            .filter_map(|(k, h)| match h {
                Some(Head {
                    kind: Kind::Collection { count, generation },
                    exp,
                    ..
                }) if exp.is_none_or(|at| at > now) => Some((k.clone(), generation, count)),
                _ => None,
            })
            .collect())
    }

    /// How many members a collection kept over `shards` holds.
    pub(super) async fn shards_len(&self, shards: &[String]) -> Result<u64> {
        let live = self.live_shards(shards).await?;
        Ok(live.iter().map(|(_, _, n)| n).sum())
    }

    /// A page of a collection kept over `shards`: every live shard read
    /// from the same position at once (a `Query` each), merged in entry
    /// order.
    pub(super) async fn shards_range(
        &self,
        shards: &[String],
        req: &RangeRequest,
    ) -> Result<RangeResult> {
        let (lower, upper) = entry_bounds(req);
        if bounds_empty(&lower, &upper) {
            return Ok(RangeResult::default());
        }
        let reads: Vec<_> = self
            .live_shards(shards)
            .await?
            .into_iter()
            .map(|(key, generation, _)| {
                let store = self.clone();
                let (lower, upper, direction, limit) =
                    (lower.clone(), upper.clone(), req.direction, req.limit);
                io().spawn(async move {
                    store
                        .entries(&key, generation, &lower, &upper, direction, limit)
                        .await
                })
            })
            .collect();
        let mut pages = Vec::with_capacity(reads.len());
        for read in reads {
            match read.await {
                Ok(page) => pages.push(page?),
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
        merge(pages, req.limit, req.direction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_stands_for_its_discovery_set() {
        assert_eq!(logical("shop:user#all:3"), "shop:user#all");
        assert_eq!(logical("shop:user#all"), "shop:user#all");
        assert_eq!(logical("shop:user#all:99"), "shop:user#all:99");
        assert_eq!(logical("shop:user:3"), "shop:user:3");
        assert_eq!(logical("shop:user#idx:all:3"), "shop:user#idx:all:3");
    }
}
