//! How the keys a repository names are stored on a cluster.
//!
//! Every key is stored under the store's prefix. Two kinds of derived key
//! are laid out for the cluster; the repository code does not know, it
//! names the logical key, as on every store, and `scan` gives logical keys:
//!
//! - The **discovery set** of an entity (`{ns}:{space}#all`): on one
//!   server one sorted set, but on a cluster one key lives on one node, so
//!   a big entity would put all its discovery traffic there. It is kept
//!   over N keys `{ns}:{space}#all:{tag}` ([`spread`](crate::store::spread)),
//!   whose hash tags spread them over the slot space; a member goes to the
//!   shard its slot picks.
//! - The **expiry receipt** of a record (`{ns}:{space}#rcpt:{rest}` for
//!   the record `{ns}:{rest}`) is stored as `{ns}:{space}#rcpt:{tag}:{rest}`
//!   with the hash tag of the record's slot: every write of an expiring
//!   record conditions on its receipt, so the two share a slot, are read
//!   together in one step and locked together.

use crate::codec::key::{Derived, DerivedKey};
use crate::error::Result;
use crate::store::batch::Batch;
use crate::store::redis::cluster::RedisClusterStore;
use crate::store::redis::cluster::slots::{SLOTS, slot_of, tag};
use crate::store::redis::wire::range_cmd;
use crate::store::spread::{Spread, is_discovery, merge, spread};
use crate::store::{RangeRequest, RangeResult};

/// The record key a receipt key names (`{ns}:{rest}` for
/// `{ns}:{space}#rcpt:{rest}`), with the position of `{rest}`.
fn receipt_record(key: &str) -> Option<(String, usize)> {
    let d = DerivedKey::parse(key).filter(|d| d.kind == Derived::Receipt)?;
    if d.rest_at(key) == key.len() && !key.ends_with(':') {
        return None; // `#rcpt` without its `:`
    }
    Some((format!("{}:{}", d.namespace, d.rest), d.rest_at(key)))
}

impl RedisClusterStore {
    /// The stored form of `key`: under the prefix, and a receipt in its
    /// record's slot.
    pub(crate) fn phys(&self, key: &str) -> String {
        let prefix = &self.inner.prefix;
        // A counter's change stamp (`~{counter}`, or `~counter` for a
        // counter with a hash tag) keeps its counter's slot: the prefix goes
        // inside.
        if let Some(rest) = key.strip_prefix('~') {
            return match rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                Some(counter) if crate::store::counter::stamp_key(counter) == key => {
                    format!("~{{{}}}", self.phys(counter))
                }
                _ => format!("~{}", self.phys(rest)),
            };
        }
        match receipt_record(key) {
            Some((record, at)) => {
                let slot = slot_of(&format!("{prefix}{record}"));
                format!("{prefix}{}{{{}}}:{}", &key[..at], tag(slot), &key[at..])
            }
            None => format!("{prefix}{key}"),
        }
    }

    /// Whether the stored key `stored` is this store's: under its prefix,
    /// or the change stamp of a counter under it (`~{prefix…}`,
    /// `~prefix…`, as [`phys`](Self::phys) lays them out): what the test
    /// cluster removes when a test is done with it.
    #[cfg(feature = "conformance")]
    pub(crate) fn owns(&self, stored: &str) -> bool {
        let key = match stored.strip_prefix('~') {
            Some(stamp) => stamp.strip_prefix('{').unwrap_or(stamp),
            None => stored,
        };
        key.starts_with(self.inner.prefix.as_str())
    }

    /// The logical key of a stored key (prefix removed, shard folded into
    /// its discovery set), or `None` for a key outside the prefix.
    pub(crate) fn logical(&self, stored: &str) -> Option<String> {
        let key = stored.strip_prefix(self.inner.prefix.as_str())?;
        if let Some((set, shard)) = key.rsplit_once(':') {
            if is_discovery(set) && shard.starts_with('{') && shard.ends_with('}') {
                return Some(set.to_owned());
            }
        }
        if let Some((_, at)) = receipt_record(key) {
            if let Some(close) = key[at..].strip_prefix('{').and_then(|r| r.find("}:")) {
                return Some(format!("{}{}", &key[..at], &key[at + close + 3..]));
            }
        }
        Some(key.to_owned())
    }

    /// `batch` with stored keys: prefixed, and each discovery-set operation
    /// sent to its shard (or, for a delete or an expiry, to every shard).
    /// A feed's stream is one key under the prefix, like any other.
    pub(crate) fn physical(&self, mut batch: Batch) -> Result<Batch> {
        let appends = batch.take_appends();
        let mut out = spread(batch, self)?;
        for a in appends {
            out.append(self.phys(&a.feed), a.entry, a.retain);
        }
        Ok(out)
    }

    /// Up to `limit + 1` raw entries of the sorted set at the stored key
    /// `key`, in scan order.
    pub(crate) async fn entries(&self, key: &str, req: RangeRequest) -> Result<Vec<Vec<u8>>> {
        self.query(&range_cmd(key, &req), "read a sorted collection")
            .await
    }

    /// A page of the logical collection over `shards`: each read from the
    /// same position, merged in entry order.
    pub(crate) async fn merged_range(
        &self,
        shards: &[String],
        req: RangeRequest,
    ) -> Result<RangeResult> {
        let (limit, direction) = (req.limit, req.direction);
        let reads = shards.iter().map(|k| self.entries(k, req.clone()));
        let pages = futures_util::future::join_all(reads)
            .await
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        merge(pages, limit, direction)
    }
}

impl Spread for RedisClusterStore {
    fn stored(&self, key: &str) -> String {
        self.phys(key)
    }

    fn shard_count(&self) -> u16 {
        self.inner.shards
    }

    /// Its hash tag puts shard `i` of `n` at slot `i × 16384 / n`.
    fn shard_key(&self, key: &str, i: u16) -> String {
        let n = u32::from(self.inner.shards);
        let slot = u32::from(i) * u32::from(SLOTS) / n;
        let slot = u16::try_from(slot).unwrap_or(0);
        self.phys(&format!("{key}:{{{}}}", tag(slot)))
    }

    fn shard_for(&self, key: &str, member: &[u8]) -> String {
        let slot = slot_of(&String::from_utf8_lossy(member));
        self.shard_key(key, slot % self.inner.shards)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_name_their_record() {
        assert_eq!(
            receipt_record("shop:session#rcpt:session:1"),
            Some(("shop:session:1".to_owned(), 18))
        );
        assert_eq!(receipt_record("shop:session#idx:rcpt:x"), None);
        assert_eq!(receipt_record("shop:session:rcpt:x"), None);
    }
}
