//! An expiring record's receipt and ledger entry, as the writes of the
//! record keep them: what a write contributed and when it is due
//! ([`Receipt`]), how a write reads it with the record ([`Stored`],
//! [`stored_from`]), when a record expires ([`Lifetime`]), and the receipt
//! side of every write ([`move_receipt_in`]). The sweep that acts on them
//! is in [`expiry`](crate::engine::expiry), which explains the scheme.
//!
//! Layer: write support, below `transition`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::codec::key::Space;
use crate::engine::entity::{ClaimFact, Entity, Facts, Ttl};
use crate::engine::repo::Engine;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::Batch;
use crate::time::Timestamp;

/// What the last write of an expiring record contributed, and when it is
/// due to expire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Receipt {
    /// Due time, milliseconds since the Unix epoch on the store's clock.
    pub(crate) at: u64,
    /// The entries the write contributed.
    pub(crate) facts: Facts,
    /// The record as the write stored it, kept only for an entity with a
    /// change feed: the sweep's `Expired` event carries it, the record
    /// itself being gone by then.
    pub(crate) image: Option<Vec<u8>>,
}

/// The stored form: JSON, readable with `redis-cli GET`; sort keys in hex.
#[derive(Serialize, Deserialize)]
struct Wire {
    at: u64,
    claims: Vec<String>,
    members: Vec<(String, String)>,
    counters: Vec<(String, i64)>,
    /// The record's stored bytes in hex (entities with a feed only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    image: Option<String>,
}

impl Receipt {
    /// The receipt of a write contributing `facts`, due at `at`: it lists
    /// what the expiry takes back, so not the amounts of counters that keep
    /// them on expiry ([`Facts::owed_on_expiry`]); with the record's stored
    /// `image` when the entity has a change feed.
    pub(crate) fn new(at: u64, facts: &Facts, image: Option<&[u8]>) -> Receipt {
        Receipt {
            at,
            facts: facts.owed_on_expiry(),
            image: image.map(<[u8]>::to_vec),
        }
    }

    /// The stored bytes. Counter amounts beyond 64 bits are refused (the
    /// transition of the same write refuses them first).
    pub(crate) fn encode(&self, key: &str) -> Result<Vec<u8>> {
        let counters = self
            .facts
            .counters
            .iter()
            .map(|c| {
                i64::try_from(c.delta)
                    .map(|d| (c.key.clone(), d))
                    .map_err(|_| Error::Encode {
                        key: key.to_owned(),
                        reason: format!("the counter amount {} does not fit 64 bits", c.delta),
                    })
            })
            .collect::<Result<_>>()?;
        let wire = Wire {
            at: self.at,
            claims: self.facts.claims.iter().map(|c| c.key.clone()).collect(),
            members: self
                .facts
                .members
                .iter()
                .map(|m| (m.collection.clone(), crate::codec::hex::encode(&m.sort)))
                .collect(),
            counters,
            image: self.image.as_deref().map(crate::codec::hex::encode),
        };
        serde_json::to_vec(&wire).map_err(|e| Error::Encode {
            key: key.to_owned(),
            reason: e.to_string(),
        })
    }

    /// Reads stored bytes back.
    pub(crate) fn decode(key: &str, bytes: &[u8]) -> Result<Receipt> {
        let wire: Wire = serde_json::from_slice(bytes).map_err(|e| {
            Error::decode(key, "it is not a kvmodel expiry receipt", Some(Box::new(e)))
        })?;
        let mut facts = Facts::default();
        for c in wire.claims {
            facts.claims.push(ClaimFact {
                index: "",
                key: c,
                since: 1,
            });
        }
        for (collection, sort) in wire.members {
            let sort = crate::codec::hex::decode(&sort)
                .ok_or_else(|| Error::decode(key, "a sort key in the receipt is not hex", None))?;
            facts.member(1, collection, sort);
        }
        for (counter, delta) in wire.counters {
            facts.count(1, counter, i128::from(delta));
        }
        let image = match wire.image {
            Some(hex) => Some(crate::codec::hex::decode(&hex).ok_or_else(|| {
                Error::decode(key, "the record image in the receipt is not hex", None)
            })?),
            None => None,
        };
        Ok(Receipt {
            at: wire.at,
            facts,
            image,
        })
    }
}

/// A receipt as read: its bytes (what a write conditions on) and their
/// reading.
pub(crate) struct StoredReceipt {
    pub(crate) bytes: Vec<u8>,
    pub(crate) receipt: Result<Receipt>,
}

impl StoredReceipt {
    pub(crate) fn new(key: &str, bytes: Vec<u8>) -> StoredReceipt {
        let receipt = Receipt::decode(key, &bytes);
        StoredReceipt { bytes, receipt }
    }
}

/// A record as a write reads it: its bytes and, for an expiring entity,
/// its receipt (one round trip either way).
pub(crate) struct Stored {
    pub(crate) bytes: Option<Vec<u8>>,
    pub(crate) receipt: Option<StoredReceipt>,
}

/// The due time of a write made at `now` (the store's clock) with `ttl`.
pub(crate) fn due_at(now: u64, ttl: Option<Duration>) -> Option<u64> {
    let ttl = ttl?;
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    Some(now.saturating_add(ms))
}

/// When a record expires, as its entity declares: at the time its expiry
/// field names (`at`, exactly, without jitter) when that is set, else after
/// a sample of the entity's `ttl`, else never.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lifetime<'a> {
    /// The entity's name, for errors.
    pub(crate) entity: &'static str,
    /// The expiry field's name, if the entity has one.
    pub(crate) field: Option<&'a str>,
    /// The time the record's expiry field names.
    pub(crate) at: Option<Timestamp>,
    /// The entity's default time to live.
    pub(crate) ttl: Option<Ttl>,
}

impl<'a> Lifetime<'a> {
    /// The lifetime of `value`.
    pub(crate) fn of<E: Entity>(value: &E) -> Lifetime<'static> {
        Lifetime {
            entity: E::META.name,
            field: E::META.expiry,
            at: value.expires_at(),
            ttl: E::META.ttl,
        }
    }

    /// Whether a write of this record needs the store's clock.
    pub(crate) fn expires(&self) -> bool {
        self.at.is_some() || self.ttl.is_some()
    }

    /// The TTL to write the record at `key` with at `now` (the store's
    /// clock) and the due time of its receipt: `(None, None)` for a record
    /// that does not expire. An expiry field naming a time not after `now`
    /// is [`Error::ExpiryPassed`].
    pub(crate) fn at_now(&self, key: &str, now: u64) -> Result<(Option<Duration>, Option<u64>)> {
        if let Some(at) = self.at {
            let due = u64::try_from(at.as_unix_millis()).unwrap_or(0);
            if due <= now {
                return Err(Error::ExpiryPassed {
                    entity: self.entity,
                    key: key.to_owned(),
                    field: self.field.unwrap_or("expiry field").to_owned(),
                    at,
                    now: Timestamp::from_unix_millis(i64::try_from(now).unwrap_or(i64::MAX))
                        .unwrap_or(Timestamp::MAX),
                });
            }
            return Ok((Some(Duration::from_millis(due - now)), Some(due)));
        }
        let ttl = self.ttl.map(|t| t.sample());
        Ok((ttl, due_at(now, ttl)))
    }
}

/// The record at `key` as a write read it: the values at
/// [`Engine::stored_keys`], in order.
pub(crate) fn stored_from<E: Entity>(key: &str, mut values: Vec<Option<Vec<u8>>>) -> Stored {
    let receipt = if values.len() > 1 {
        values
            .pop()
            .flatten()
            .map(|b| StoredReceipt::new(&E::receipt_key(key), b))
    } else {
        None
    };
    Stored {
        bytes: values.pop().flatten(),
        receipt,
    }
}

/// The ledger sort key of a due time: big-endian, so byte order is time order.
pub(crate) fn due(at: u64) -> Vec<u8> {
    at.to_be_bytes().to_vec()
}

/// The due time a ledger sort key holds.
pub(crate) fn due_time(sort: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(sort.try_into().ok()?))
}

/// Adds the receipt side of a write of the record at `key` (of the entity
/// whose derived keys live in `space`) to `b`: a condition that its receipt
/// is still `old` (absent when `None`), the removal of the old ledger
/// entry, and while a record remains (`new`) the new receipt and its ledger
/// entry. [`transition`](crate::engine::transition::transition) calls it
/// for every write of a record
/// ([`ReceiptMove::Record`](crate::engine::transition::ReceiptMove::Record)).
pub(crate) fn move_receipt_in(
    space: Space<'_>,
    b: &mut Batch,
    key: &str,
    old: Option<&StoredReceipt>,
    new: Option<&Receipt>,
) -> Result<()> {
    let receipt_key = space.receipt_key(key);
    let member = key.as_bytes().to_vec();
    match old {
        Some(o) => {
            b.equals(&receipt_key, o.bytes.clone());
            if let Ok(r) = &o.receipt {
                b.remove(space.ledger_key(), due(r.at), member.clone());
            }
        }
        None => {
            b.absent(&receipt_key);
        }
    }
    match new {
        Some(r) => {
            b.put(&receipt_key, r.encode(&receipt_key)?, None);
            b.add(space.ledger_key(), due(r.at), member);
        }
        None if old.is_some() => {
            b.delete(&receipt_key);
        }
        None => {}
    }
    Ok(())
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Whether records of this entity expire.
    pub(crate) fn expiring() -> bool {
        E::META.ttl.is_some() || E::META.expiry.is_some()
    }

    /// The TTL a write of `value` at `key` made now is written with, and
    /// its receipt's due time, on the store's clock (`(None, None)` for a
    /// record that does not expire; see [`Lifetime::at_now`]).
    pub(crate) async fn lifetime_now(
        &self,
        key: &str,
        value: &E,
    ) -> Result<(Option<Duration>, Option<u64>)> {
        let lifetime = Lifetime::of(value);
        if !lifetime.expires() {
            return Ok((None, None));
        }
        lifetime.at_now(key, self.store().now_ms().await?)
    }

    /// Adds to a create of the record at `key` due at `due` the condition
    /// that no expired record left its receipt there, when the write's own
    /// receipt move does not: a record of an expiring entity written not to
    /// expire (its expiry field not set, and no `ttl`) moves no receipt, but
    /// must not take over the entries of an expired one all the same.
    pub(crate) fn require_no_leftover(b: &mut Batch, key: &str, due: Option<u64>) {
        if Self::expiring() && due.is_none() {
            b.absent(E::receipt_key(key));
        }
    }

    /// The keys a write of the record at `key` reads: the record and, when
    /// the entity expires, its receipt ([`stored_from`] reads them back).
    pub(crate) fn stored_keys(key: &str) -> Vec<String> {
        if Self::expiring() {
            vec![key.to_owned(), E::receipt_key(key)]
        } else {
            vec![key.to_owned()]
        }
    }

    /// Reads the record at `key` for a write: with its receipt when the
    /// entity expires.
    pub(crate) async fn read_stored(&self, key: &str) -> Result<Stored> {
        let keys = Self::stored_keys(key);
        let values = match keys.as_slice() {
            [one] => vec![self.store().get(one).await?],
            _ => self.store().get_many(&keys).await?,
        };
        Ok(stored_from::<E>(key, values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_round_trip() {
        let mut facts = Facts::default();
        facts.claim("by_x", 1, "ns:e#uniq:by_x:v".into());
        facts.member(1, "ns:e#idx:by_y:a".into(), vec![0, 1, 0xff]);
        facts.count(1, "ns:e#count:total".into(), -7);
        let r = Receipt::new(1_700_000_000_123, &facts, Some(b"\x01{}"));
        let bytes = r.encode("k").unwrap();
        let back = Receipt::decode("k", &bytes).unwrap();
        assert_eq!(back.at, r.at);
        assert_eq!(back.image.as_deref(), Some(&b"\x01{}"[..]));
        let plain = Receipt::new(7, &facts, None);
        let bytes = plain.encode("k").unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("image"));
        assert_eq!(Receipt::decode("k", &bytes).unwrap().image, None);
        // What keeping the image costs: twice its size, plus the field name.
        let image = vec![0xab; 100];
        let kept = Receipt::new(7, &facts, Some(&image)).encode("k").unwrap();
        assert_eq!(
            kept.len(),
            bytes.len() + 2 * image.len() + r#","image":"""#.len()
        );
        assert!(back.facts.same_entries(&facts));
        assert!(Receipt::decode("k", b"{}").is_err());
        assert!(Receipt::decode("k", b"\x00").is_err());
        assert_eq!(due_time(&due(42)), Some(42));
        assert_eq!(due_time(&[1, 2]), None);
    }
}
