//! The derived entries of one record image: its unique claims, collection
//! memberships and counter contributions. Generated code and the run-time
//! model both compute them; the engine writes them.

use super::CounterKeep;

/// A unique claim: `key` holds the owning record's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimFact {
    /// Index name.
    pub index: &'static str,
    /// Claim key.
    pub key: String,
    /// The record version that introduced the index.
    pub since: u32,
}

/// Membership of the record's key in a sorted collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberFact {
    /// Collection key.
    pub collection: String,
    /// Sort key.
    pub sort: Vec<u8>,
    /// The record version that introduced the index or relation.
    pub since: u32,
    /// The members the collection keeps (`keep: N`), 0 for no cap: a write
    /// that adds this member trims the collection to its `keep` greatest.
    pub keep: u32,
}

/// A contribution to a counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterFact {
    /// Counter key.
    pub key: String,
    /// Amount this record contributes, exactly as the record holds it (a
    /// `u64` field may exceed `i64`); writes refuse a contribution that a
    /// 64-bit counter cannot hold.
    pub delta: i128,
    /// The record version that introduced the counter.
    pub since: u32,
    /// The keys the counter is spread over (`shards: N`; 1 for one key):
    /// a write adds to one of them, a read sums them all
    /// ([`shard_key`](crate::codec::key::shard_key)).
    pub shards: u32,
    /// Whether the counter keeps this amount when the record expires or
    /// is deleted (`keep: on_expiry | always`).
    pub keep: CounterKeep,
}

/// The derived entries of one record image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Unique claims.
    pub claims: Vec<ClaimFact>,
    /// Collection memberships.
    pub members: Vec<MemberFact>,
    /// Counter contributions.
    pub counters: Vec<CounterFact>,
}

impl Facts {
    /// Records a unique claim.
    pub fn claim(&mut self, index: &'static str, since: u32, key: String) {
        self.claims.push(ClaimFact { index, key, since });
    }

    /// Records a collection membership.
    pub fn member(&mut self, since: u32, collection: String, sort: Vec<u8>) {
        self.member_capped(since, 0, collection, sort);
    }

    /// Records a membership of a collection that keeps its `keep`
    /// greatest members (0: all).
    pub fn member_capped(&mut self, since: u32, keep: u32, collection: String, sort: Vec<u8>) {
        self.members.push(MemberFact {
            collection,
            sort,
            since,
            keep,
        });
    }

    /// Records a counter contribution.
    pub fn count(&mut self, since: u32, key: String, delta: i128) {
        self.count_sharded(since, 1, key, delta);
    }

    /// Records a contribution to a counter spread over `shards` keys
    /// (`key` is its shard 0).
    pub fn count_sharded(&mut self, since: u32, shards: u32, key: String, delta: i128) {
        self.count_kept(since, shards, CounterKeep::Follows, key, delta);
    }

    /// Records a contribution to a counter spread over `shards` keys that
    /// keeps it as `keep` says when the record is gone.
    pub fn count_kept(
        &mut self,
        since: u32,
        shards: u32,
        keep: CounterKeep,
        key: String,
        delta: i128,
    ) {
        self.counters.push(CounterFact {
            key,
            delta,
            since,
            shards: shards.max(1),
            keep,
        });
    }

    /// The entries an expiry takes back: these less the counter amounts
    /// kept on expiry (what an expiry receipt lists).
    pub fn owed_on_expiry(&self) -> Facts {
        let mut f = self.clone();
        f.counters.retain(|c| !c.keep.on_expiry());
        f
    }

    /// Drops what a record stored at `version` never had.
    pub fn retain_since(&mut self, version: u32) {
        self.claims.retain(|f| f.since <= version);
        self.members.retain(|f| f.since <= version);
        self.counters.retain(|f| f.since <= version);
    }

    /// Whether these facts hold the membership `(collection, sort)`.
    pub fn has_member(&self, collection: &str, sort: &[u8]) -> bool {
        self.members
            .iter()
            .any(|m| m.collection == collection && m.sort == sort)
    }

    /// Whether these facts hold the claim `key`.
    pub fn has_claim(&self, key: &str) -> bool {
        self.claims.iter().any(|c| c.key == key)
    }

    /// Whether both hold the same entries (claim keys, memberships and
    /// counter amounts), whatever their order and `since`.
    pub fn same_entries(&self, other: &Facts) -> bool {
        fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
            v.sort();
            v
        }
        let claims = |f: &Facts| sorted(f.claims.iter().map(|c| c.key.clone()).collect());
        let members = |f: &Facts| {
            sorted(
                f.members
                    .iter()
                    .map(|m| (m.collection.clone(), m.sort.clone()))
                    .collect(),
            )
        };
        let counters = |f: &Facts| {
            let mut net = std::collections::BTreeMap::<&str, i128>::new();
            for c in &f.counters {
                *net.entry(&c.key).or_default() += c.delta;
            }
            net.retain(|_, d| *d != 0);
            net.into_iter()
                .map(|(k, d)| (k.to_owned(), d))
                .collect::<Vec<_>>()
        };
        claims(self) == claims(other)
            && members(self) == members(other)
            && counters(self) == counters(other)
    }
}
