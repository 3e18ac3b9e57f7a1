//! Standalone counters: a schema's namespace-level `counters:` (and
//! `#[derive(KvCounter)]`), counters that belong to no entity, as Redis
//! `INCR` or Spring's `RedisAtomicLong` keep them.
//!
//! They reuse the entity counters' machinery: the store's counter
//! operations ([`Op::Incr`](crate::store::Op::Incr) with a limit, so an
//! overflow fails the commit and writes nothing), the sharded layout of
//! `engine::shards` (a write goes to one shard at random, a read sums every
//! shard in one round trip) and one commit per write.
//!
//! Keys: `{ns}:{key space}#tally:{{c1:c2:…}}` for the template's components
//! (escaped as every key component is), or `{ns}:{key space}#tally` for a
//! template without placeholders. The `#` keeps them out of every entity's
//! record keys, the kind keeps them apart from every entity's derived keys,
//! and the braces put every shard of one counter in one Redis Cluster slot,
//! so that a write and its TTL, or a reset of every shard, is one script.
//!
//! Layer: write parts: above `engine::shards`.

use std::time::Duration;

use crate::codec::key::{Derived, KeyBuilder, KeyPart};
use crate::engine::shards;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome};

/// What a standalone counter is: where its keys live, how many keys each
/// counter is spread over, and how long it lives after its last increment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TallyDef {
    /// The Rust type name, for messages.
    pub name: &'static str,
    /// The first key segment.
    pub namespace: &'static str,
    /// The literal segments of its key template, joined by `:`.
    pub key_space: &'static str,
    /// Keys each counter is spread over (1: not sharded).
    pub shards: u32,
    /// Time to live after the last increment, in milliseconds.
    pub ttl_ms: Option<u64>,
}

/// Builds the key of one standalone counter: [`TallyKey::of`] (or
/// [`TallyKey::new`]), one [`part`](TallyKey::part) per placeholder in
/// template order, then [`finish`](TallyKey::finish).
#[derive(Debug, Clone)]
pub struct TallyKey {
    buf: String,
    parts: usize,
}

impl TallyKey {
    /// Starts the key of a counter in `namespace` whose template's literal
    /// segments are `key_space`.
    pub fn new(namespace: &str, key_space: &str) -> Self {
        TallyKey {
            buf: KeyBuilder::derived(namespace, key_space, Derived::Tally).finish(),
            parts: 0,
        }
    }

    /// Starts the key of a counter of `def`.
    pub fn of(def: &TallyDef) -> Self {
        TallyKey::new(def.namespace, def.key_space)
    }

    /// Appends an escaped component.
    pub fn part<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        self.buf.push_str(if self.parts == 0 { ":{" } else { ":" });
        part.write_key(&mut self.buf);
        self.parts += 1;
        self
    }

    /// The finished key.
    pub fn finish(mut self) -> String {
        if self.parts > 0 {
            self.buf.push('}');
        }
        self.buf
    }
}

/// Adds `by` to the counter at `key`, in one commit: to one shard picked
/// at random, and, when `def` has a TTL, setting every shard's time to
/// live to it again (so the counter expires as one, `ttl` after its last
/// increment). A sum that leaves the 64-bit range (for a sharded counter,
/// a shard's share of it) fails with [`Error::InvalidBatch`] and writes
/// nothing.
pub async fn incr<S: Store>(store: &S, def: &TallyDef, key: &str, by: i64) -> Result<()> {
    let mut batch = Batch::new();
    batch.incr_within(
        shards::pick(key, def.shards),
        i128::from(by),
        shards::limit(def.shards),
    );
    if let Some(ms) = def.ttl_ms {
        for shard in shards::keys(key, def.shards) {
            batch.expire(shard, Duration::from_millis(ms));
        }
    }
    applied(store, def, key, store.commit(batch).await?)
}

/// The value of the counter at `key`: the sum of its shards, read in one
/// round trip; 0 when it was never incremented, was reset or expired.
pub async fn get<S: Store>(store: &S, def: &TallyDef, key: &str) -> Result<i64> {
    shards::value(store, key, def.shards).await
}

/// Removes every shard of the counter at `key` in one commit: it reads 0
/// afterwards.
pub async fn reset<S: Store>(store: &S, def: &TallyDef, key: &str) -> Result<()> {
    let mut batch = Batch::new();
    for shard in shards::keys(key, def.shards) {
        batch.delete(shard);
    }
    applied(store, def, key, store.commit(batch).await?)
}

/// A batch without conditions is always applied; a store that says
/// otherwise is broken, and that is an error rather than a silent loss.
fn applied<S: Store>(store: &S, def: &TallyDef, key: &str, outcome: Outcome) -> Result<()> {
    match outcome {
        Outcome::Applied => Ok(()),
        Outcome::Failed { index } => Err(Error::backend(
            store.backend(),
            "write a standalone counter",
            format!(
                "the store reported condition {index} failed for `{}` at `{key}`, \
                 whose commit has no condition",
                def.name
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VIEWS: TallyDef = TallyDef {
        name: "PageViews",
        namespace: "site",
        key_space: "views",
        shards: 1,
        ttl_ms: None,
    };

    #[test]
    fn components_are_escaped_inside_one_hash_tag() {
        let key = |a: &str, b: &str| TallyKey::of(&VIEWS).part(a).part(b).finish();
        assert_eq!(key("home", "d1"), "site:views#tally:{home:d1}");
        assert_ne!(key("a:b", "c"), key("a", "b:c"));
        assert!(!key("}x{", "#").contains("}x{"));
        assert_eq!(TallyKey::of(&VIEWS).finish(), "site:views#tally");
    }
}
