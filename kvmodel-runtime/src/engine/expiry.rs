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
//!
//! Layer: roles: the sweep, above `transition` and
//! `receipt`, below the maintenance walks.

use std::ops::Bound;

use crate::engine::entity::Entity;
use crate::engine::links::registry_key;
use crate::engine::receipt::{Receipt, StoredReceipt, due, due_time, move_receipt_in};
use crate::engine::repo::Engine;
use crate::engine::skipped::Skipped;
use crate::engine::transition::{ReceiptMove, Upkeep, transition};
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};
use crate::store::{Member, RangeRequest, Store};

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
    /// True when more due entries remain than the limit let it examine,
    /// and not every entry it examined had to stay for a reason reported
    /// in `skipped`: call again. Entries whose receipts do not decode stay
    /// until `purge`, so a loop that calls again while this is set ends
    /// even when `limit` of them come first; `reconcile` sweeps past them.
    pub more: bool,
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
    /// in conditional commits. After a sweep that returns `more: false`
    /// and nothing in `skipped`, the counters of the entity equal its live
    /// records and no collection holds an expired member.
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
    Ok(crate::engine::repo::commit(store, b).await?.is_applied())
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
    Ok(sweep_from(store, upkeep, limit, None).await?.0)
}

/// Sweeps up to `limit` due ledger entries after the ledger position
/// `after` (from the first when `None`); what it did, and the position the
/// next call resumes after (`None` when no due entry is left past it).
pub(crate) async fn sweep_from<S: Store>(
    store: &S,
    upkeep: Upkeep<'_>,
    limit: usize,
    mut after: Option<Vec<u8>>,
) -> Result<(Sweep, Option<Vec<u8>>)> {
    let space = upkeep.space;
    let mut out = Sweep::default();
    let now = store.now_ms().await?;
    let ledger = space.ledger_key();
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
            None => return Ok((out, None)),
        }
    }
    // Entries that stay for a reason `skipped` reports are met again by
    // a call from the start: a page of nothing else is no reason to call
    // again.
    out.more = (out.skipped.len() as u64) < out.examined;
    Ok((out, after))
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
        if let Ok(Outcome::Applied) = crate::engine::repo::commit(store, all).await {
            out.expired += plans.iter().filter(|(_, expires)| *expires).count() as u64;
            return Ok(true);
        }
        // Something changed meanwhile (or one entry cannot be applied).
        return Ok(false);
    }
    for (b, expires) in plans {
        match crate::engine::repo::commit(store, b).await {
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
