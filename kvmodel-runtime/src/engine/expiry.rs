//! How expiry reaches derived data.
//!
//! A store expires a record by itself, without telling anyone, so the
//! derived entries of an expiring entity need bookkeeping that outlives the
//! record. Every write of an expiring record commits, with the record:
//!
//! - its **receipt** (`{ns}:{space}#rcpt:{record key}`, no TTL): what this
//!   write contributed (claim keys, collection memberships, counter amounts)
//!   and the time `at` it is due to expire, by the store's clock
//!   ([`Store::now_ms`]) plus the TTL it was written with, so never later
//!   than the record really expires;
//! - its **ledger entry**: the record key in the entity's expiry ledger
//!   (`{ns}:{space}#exp`, a sorted collection) under `at`, replacing the
//!   entry of the write before (whose `at` the old receipt tells).
//!
//! A **sweep** reads the ledger up to the store's "now" and, for each due
//! entry whose record is gone and whose receipt is still the one of that
//! entry, undoes exactly what the receipt lists, in one conditional commit
//! (the record still absent, the receipt unchanged): members removed,
//! counters decremented, the discovery member removed, receipt and ledger
//! entry deleted. Claims are left alone: they carry the record's TTL and
//! expire with it, and one may meanwhile belong to another record.
//!
//! A record whose key is written again after it expired cannot take over
//! the old write's entries unnoticed: `create` requires the receipt to be
//! absent, and when it is not, sweeps that one record first. Sweeps run
//! explicitly ([`Engine::sweep_expired`], `XRepo::sweep_expired`), inside
//! `reconcile`, and in small bounded steps after a share of the writes of
//! an expiring entity.

use std::ops::Bound;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::codec::key::Space;
use crate::engine::entity::{ClaimFact, Entity, Facts, Ttl};
use crate::engine::links::registry_key;
use crate::engine::repo::Engine;
use crate::engine::skipped::Skipped;
use crate::engine::transition::{ReceiptMove, Upkeep, transition};
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};
use crate::store::{Member, RangeRequest, Store};
use crate::time::Timestamp;

/// One in this many writes of an expiring entity is followed by a sweep
/// step of [`STEP`] due entries.
pub(crate) const STEP_ONE_IN: u32 = 8;

/// Due entries a sweep step after a write examines at most.
const STEP: usize = 32;

/// Due entries read per page of a sweep.
const PAGE: usize = 256;

/// What one call of `sweep_expired` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Due ledger entries examined.
    pub examined: u64,
    /// Expired records whose derived entries were removed and whose counter
    /// amounts were taken back.
    pub expired: u64,
    /// Records whose receipt could not be read; `purge` removes them.
    pub skipped: Vec<Skipped>,
    /// True when more due entries remain than the limit let it examine:
    /// call again.
    pub more: bool,
}

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
fn due_time(sort: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(sort.try_into().ok()?))
}

/// Adds the receipt side of a write of the record at `key` (of the entity
/// whose derived keys live in `space`) to `b`: a condition that its receipt
/// is still `old` (absent when `None`), the removal of the old ledger
/// entry, and while a record remains (`new`) the new receipt and its ledger
/// entry. [`transition`] calls it for every write of a record
/// ([`ReceiptMove::Record`]).
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

/// Adds to `b` the undoing of the expired write of the record at `key`
/// whose receipt is `stored` (read as `receipt`): conditional on the record
/// being absent and the receipt unchanged. On an entity with a change feed
/// it appends the record's `Expired` event, with the image the receipt
/// kept (a receipt written before the entity had a feed keeps none: that
/// record's expiry appends no event, as its writes appended none).
pub(crate) fn expire_ops(
    upkeep: Upkeep<'_>,
    b: &mut Batch,
    key: &str,
    stored: &[u8],
    receipt: &Receipt,
) -> Result<()> {
    b.absent(key);
    if let (Some(feed), Some(image)) = (upkeep.feed, &receipt.image) {
        crate::engine::feed::append_expired(upkeep.space, feed, upkeep.feeds, b, key, image)?;
    }
    let mut facts = receipt.facts.clone();
    // Claims carry the record's TTL and expired with it; one may belong to
    // another record by now.
    facts.claims.clear();
    transition(
        upkeep,
        b,
        key,
        Some(&facts),
        None,
        None,
        ReceiptMove::Untouched,
    )?;
    let old = StoredReceipt {
        bytes: stored.to_vec(),
        receipt: Ok(receipt.clone()),
    };
    move_receipt_in(upkeep.space, b, key, Some(&old), None)
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

    /// Undoes the expired write of the record at `key` if its record is
    /// gone and its receipt remains (a `create` of the key found it);
    /// whether it did. A receipt that cannot be read is an error naming the
    /// way out.
    pub(crate) async fn expire_leftover(&self, key: &str) -> Result<bool> {
        let stored = self.read_stored(key).await?;
        let (None, Some(r)) = (&stored.bytes, &stored.receipt) else {
            return Ok(false);
        };
        let receipt = r.receipt.as_ref().map_err(|e| {
            Error::decode(
                E::receipt_key(key),
                format!(
                    "{e}; the earlier record at `{key}` cannot be swept, so nothing can be \
                     created there until `purge` removes it"
                ),
                None,
            )
        })?;
        self.expire_receipt(key, &r.bytes, receipt).await
    }

    /// Undoes the expired write of the record at `key` whose receipt is
    /// stored as `bytes` (read as `receipt`), if the record is still absent
    /// and the receipt unchanged; whether it did.
    pub(crate) async fn expire_receipt(
        &self,
        key: &str,
        bytes: &[u8],
        receipt: &Receipt,
    ) -> Result<bool> {
        expire_receipt_in(
            self.store(),
            Upkeep::of::<E, S>(self.store()),
            key,
            bytes,
            receipt,
        )
        .await
    }

    /// A sweep step after a write of an expiring entity: one in
    /// [`STEP_ONE_IN`] writes examines up to [`STEP`] due entries. The write
    /// has succeeded already, so a failing step is left for the next one.
    pub(crate) async fn sweep_step(&self) {
        if Self::expiring() && fastrand::u32(..STEP_ONE_IN) == 0 {
            // Boxed: the write's own future stays small when it does not step.
            let _ = Box::pin(self.sweep_expired(STEP)).await;
        }
    }

    /// Lets expiry reach derived data: examines up to `limit` entries of
    /// the expiry ledger that are due by the store's clock and, for each
    /// record that is gone (and was not written again since), removes its
    /// collection and discovery members and takes its counter amounts back,
    /// in conditional commits. After a sweep that returns `more: false`,
    /// the counters of the entity equal its live records and no collection
    /// holds an expired member.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "sweep_expired", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn sweep_expired(&self, limit: usize) -> Result<Sweep> {
        sweep_in(self.store(), Upkeep::of::<E, S>(self.store()), limit).await
    }
}

/// Undoes the expired write of the record at `key` whose receipt is
/// stored as `bytes` (read as `receipt`), if the record is still absent
/// and the receipt unchanged; whether it did. `upkeep` names the entity's
/// key space and feed.
pub(crate) async fn expire_receipt_in<S: Store>(
    store: &S,
    upkeep: Upkeep<'_>,
    key: &str,
    bytes: &[u8],
    receipt: &Receipt,
) -> Result<bool> {
    let mut b = Batch::new();
    expire_ops(upkeep, &mut b, key, bytes, receipt)?;
    crate::engine::links::expiry::expire_links(store, upkeep.space, key, &mut b).await?;
    Ok(crate::engine::walk::commit(store, b).await?.is_applied())
}

/// [`expire_receipt_in`] for a record with links, whose commit also
/// conditions on its edges and the far registries: tried again while only
/// those changed meanwhile (an unlink or a far delete got there first), not
/// once the record is back or its receipt changed.
async fn expire_linked<S: Store>(
    store: &S,
    upkeep: Upkeep<'_>,
    key: &str,
    bytes: &[u8],
    receipt: &Receipt,
) -> Result<bool> {
    let reads = [key.to_owned(), upkeep.space.receipt_key(key)];
    for _ in 0..crate::engine::repo::MAX_ATTEMPTS {
        if expire_receipt_in(store, upkeep, key, bytes, receipt).await? {
            return Ok(true);
        }
        let now = store.get_many(&reads).await?;
        if now[0].is_some() || now[1].as_deref() != Some(bytes) {
            return Ok(false);
        }
    }
    Ok(false)
}

/// [`Engine::sweep_expired`] for the entity whose derived keys live in
/// `upkeep.space` (and whose feed, if any, is `upkeep.feed`).
pub(crate) async fn sweep_in<S: Store>(
    store: &S,
    upkeep: Upkeep<'_>,
    limit: usize,
) -> Result<Sweep> {
    let space = upkeep.space;
    let mut out = Sweep::default();
    let now = store.now_ms().await?;
    let ledger = space.ledger_key();
    let mut after = None;
    let mut left = limit;
    while left > 0 {
        let mut req = RangeRequest::all(left.min(PAGE));
        req.upper = Bound::Included(due(now));
        req.after = after.take();
        let range = store.range(&ledger, req).await?;
        left = left.saturating_sub(range.members.len());
        out.examined += range.members.len() as u64;
        sweep_entries(store, upkeep, &range.members, &mut out).await?;
        match range.next {
            Some(n) => after = Some(n),
            None => return Ok(out),
        }
    }
    out.more = true;
    Ok(out)
}

/// Sweeps one page of due ledger entries: one commit for the page, or,
/// when a condition of the page failed (another sweeper or a write got
/// there first), the entries still in the ledger one commit each, read
/// again.
async fn sweep_entries<S: Store>(
    store: &S,
    upkeep: Upkeep<'_>,
    entries: &[Member],
    out: &mut Sweep,
) -> Result<()> {
    let space = upkeep.space;
    let reported = out.skipped.len();
    if sweep_plans(store, upkeep, entries, out, true).await? {
        return Ok(());
    }
    // The entries are read again below: report what they hold once.
    out.skipped.truncate(reported);
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Ok(());
    };
    let req = RangeRequest {
        lower: Bound::Included(first.sort.clone()),
        upper: Bound::Included(last.sort.clone()),
        ..RangeRequest::all(entries.len().saturating_mul(2).max(1))
    };
    let now = store.range(&space.ledger_key(), req).await?;
    let left: Vec<Member> = entries
        .iter()
        .filter(|e| now.members.contains(e))
        .cloned()
        .collect();
    sweep_plans(store, upkeep, &left, out, false).await?;
    Ok(())
}

/// Sweeps `entries`, merged into one commit or (`merge` false) one commit
/// each; whether the merged commit went through.
async fn sweep_plans<S: Store>(
    store: &S,
    upkeep: Upkeep<'_>,
    entries: &[Member],
    out: &mut Sweep,
    merge: bool,
) -> Result<bool> {
    let space = upkeep.space;
    let ledger = space.ledger_key();
    let keys: Vec<String> = entries
        .iter()
        .map(|m| String::from_utf8_lossy(&m.member).into_owned())
        .collect();
    let mut reads: Vec<String> = keys.clone();
    reads.extend(keys.iter().map(|k| space.receipt_key(k)));
    reads.extend(keys.iter().map(|k| registry_key(space, k)));
    let mut values = store.get_many(&reads).await?;
    let registries = values.split_off(2 * keys.len());
    let receipts = values.split_off(keys.len());
    let mut plans: Vec<(Batch, bool)> = Vec::new();
    let rows = entries.iter().zip(&keys).zip(values).zip(receipts);
    for ((((entry, key), record), stored), registry) in rows.zip(registries) {
        let mut b = Batch::new();
        let stale = |b: &mut Batch, stored: &Option<Vec<u8>>| {
            match stored {
                Some(bytes) => b.equals(space.receipt_key(key), bytes.clone()),
                None => b.absent(space.receipt_key(key)),
            };
            b.remove(&ledger, entry.sort.clone(), entry.member.clone());
        };
        let receipt = match &stored {
            Some(bytes) => match Receipt::decode(&space.receipt_key(key), bytes) {
                Ok(r) => Some(r),
                Err(e) => {
                    out.skipped.push(Skipped::new(key.clone(), e));
                    continue;
                }
            },
            None => None,
        };
        match receipt {
            Some(r) if Some(r.at) == due_time(&entry.sort) => {
                if record.is_some() {
                    continue; // due by the estimate, not yet expired
                }
                let bytes = stored.as_deref().unwrap_or_default();
                if registry.is_some() {
                    // Linked: its links are read and removed in a commit
                    // of its own, so that two linked records expiring
                    // together each see the other's entries as they are.
                    match expire_linked(store, upkeep, key, bytes, &r).await {
                        Ok(true) => out.expired += 1,
                        Ok(false) => {}
                        Err(e @ Error::InvalidBatch { .. }) => {
                            out.skipped.push(Skipped::new(key.clone(), e));
                        }
                        Err(e) => return Err(e),
                    }
                    continue;
                }
                expire_ops(upkeep, &mut b, key, bytes, &r)?;
                plans.push((b, true));
            }
            // No receipt, or one of a later write: the entry is stale.
            _ => {
                stale(&mut b, &stored);
                plans.push((b, false));
            }
        }
    }
    if plans.is_empty() {
        return Ok(true);
    }
    if merge {
        let mut all = Batch::new();
        for (b, _) in &mut plans {
            for c in b.conditions() {
                all.condition(c.clone());
            }
            for op in b.ops() {
                all.op(op.clone());
            }
            // `Expired` events, in ledger order, stamped with the merged
            // commit's id.
            crate::engine::feed::carry(b, &mut all);
        }
        if let Ok(Outcome::Applied) = crate::engine::walk::commit(store, all).await {
            out.expired += plans.iter().filter(|(_, expires)| *expires).count() as u64;
            return Ok(true);
        }
        // Something changed meanwhile (or one entry cannot be applied).
        return Ok(false);
    }
    for (b, expires) in plans {
        match crate::engine::walk::commit(store, b).await {
            Ok(Outcome::Applied) if expires => out.expired += 1,
            Ok(_) => {}
            Err(e @ Error::InvalidBatch { .. }) => {
                let key = e_key(&e);
                out.skipped.push(Skipped::new(key, e));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The key an invalid batch names.
fn e_key(e: &Error) -> String {
    match e {
        Error::InvalidBatch { key, .. } => key.clone(),
        _ => String::new(),
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
