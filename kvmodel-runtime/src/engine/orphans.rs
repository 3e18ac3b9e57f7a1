//! Derived entries no record implies, found by walking the entity's derived
//! key space inwards, and `purge` of a record that cannot be decoded.
//!
//! The derived keys of an entity all start with `{ns}:{key space}#`. Normal
//! operation never lists them (the discovery set lists records); `verify`,
//! `reconcile` and `purge` enumerate them with the store's maintenance-only
//! [`Store::scan`] and check each against the record it names:
//!
//! - a **claim** must be held by a record that derives it;
//! - an **index or relation member** must be derived by its record, or
//!   listed by the receipt of an expired write awaiting the sweep;
//! - a **counter** no record contributes to must be 0 (the walk's
//!   expected totals say what the others must hold);
//! - an **expiry ledger entry** must match its record's receipt;
//! - a **receipt** whose record is gone is an expired write: counted until
//!   the sweep takes it back (`reconcile` sweeps it at once).
//!
//! Only keys of the indexes, relations and counters this version of the
//! entity declares are judged, so maintenance run by an older version
//! never removes what a newer one added.

use crate::codec::key::Derived;
use crate::engine::entity::{Entity, Facts};
use crate::engine::expiry::{Receipt, StoredReceipt, due, move_receipt, read_record};
use crate::engine::maintenance::{Walk, is_member};
use crate::engine::repo::{Engine, MAX_ATTEMPTS, ReceiptMove, transition};
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::batch::Batch;
use crate::store::{RangeRequest, RangeResult, Store};

/// Keys per page of a scan, members per page of a collection walk.
const PAGE: usize = 500;

/// What a derived key of the entity is, as far as maintenance judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Claim,
    Collection,
    Counter,
    Ledger,
    Receipt,
}

/// The kind of the derived key `key` of `E`, or `None` for the discovery
/// set (walked from the records) and for keys of undeclared names.
fn classify<E: Entity>(key: &str) -> Option<Kind> {
    if key == E::ledger_key() {
        return Some(Kind::Ledger);
    }
    let rest = key.strip_prefix(&E::derived_prefix())?;
    let (kind, tail) = rest.split_once(':')?;
    let kind = Derived::ALL.into_iter().find(|k| k.as_str() == kind)?;
    if kind == Derived::Receipt {
        return Some(Kind::Receipt);
    }
    let name = tail.split(':').next().unwrap_or(tail);
    if !E::declared().contains(&(kind, name)) {
        return None;
    }
    match kind {
        Derived::Claim => Some(Kind::Claim),
        Derived::Index | Derived::Relation => Some(Kind::Collection),
        Derived::Counter => Some(Kind::Counter),
        _ => None,
    }
}

/// The page of the sorted collection at `key` after `after`.
async fn page<S: Store>(store: &S, key: &str, after: Option<Vec<u8>>) -> Result<RangeResult> {
    let mut req = RangeRequest::all(PAGE);
    req.after = after;
    store.range(key, req).await
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// A scan page of the entity's derived keys, classified, and the cursor
    /// of the next.
    async fn scan_derived(
        &self,
        cursor: Option<Vec<u8>>,
    ) -> Result<(Vec<(String, Kind)>, Option<Vec<u8>>)> {
        let page = self
            .store()
            .scan(&E::derived_prefix(), cursor, PAGE)
            .await?;
        let keys = page
            .keys
            .into_iter()
            .filter_map(|k| classify::<E>(&k).map(|kind| (k, kind)))
            .collect();
        Ok((keys, page.next))
    }

    /// The inward half of `verify` and `reconcile` (after the walk over the
    /// records): every derived key checked against the record it names.
    pub(crate) async fn walk_orphans(&self, walk: &mut Walk) -> Result<()> {
        let mut counters = Vec::new();
        let mut cursor = None;
        loop {
            let (keys, next) = self.scan_derived(cursor.take()).await?;
            let mut claims = Vec::new();
            let mut receipts = Vec::new();
            for (key, kind) in keys {
                match kind {
                    Kind::Claim => claims.push(key),
                    Kind::Collection => self.walk_collection(walk, &key).await?,
                    Kind::Counter => counters.push(key),
                    Kind::Ledger => self.walk_ledger(walk).await?,
                    Kind::Receipt => receipts.push(key),
                }
            }
            self.check_claims(walk, &claims).await?;
            self.check_receipts(walk, &receipts).await?;
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        // Counters no record contributes to must be 0.
        for key in counters {
            walk.expected.entry(key).or_insert(0);
        }
        Ok(())
    }

    /// Reads record keys and, for an expiring entity, their receipts.
    async fn read_records(
        &self,
        keys: &[String],
    ) -> Result<(Vec<Option<Vec<u8>>>, Vec<Option<StoredReceipt>>)> {
        let mut reads = keys.to_vec();
        if Self::expiring() {
            reads.extend(keys.iter().map(|k| E::receipt_key(k)));
        }
        let mut records = self.store().get_many(&reads).await?;
        let receipts = records
            .split_off(keys.len())
            .into_iter()
            .zip(keys)
            .map(|(b, k)| b.map(|b| StoredReceipt::new(&E::receipt_key(k), b)))
            .chain(std::iter::repeat_with(|| None))
            .take(keys.len())
            .collect();
        Ok((records, receipts))
    }

    /// Members of an index or relation collection that no record derives.
    async fn walk_collection(&self, walk: &mut Walk, collection: &str) -> Result<()> {
        let mut after = None;
        loop {
            let range = page(self.store(), collection, after.take()).await?;
            let keys: Vec<String> = range
                .members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.member).into_owned())
                .collect();
            let (records, receipts) = self.read_records(&keys).await?;
            let rows = range.members.iter().zip(&keys).zip(records).zip(receipts);
            for (((m, key), record), receipt) in rows {
                let mut fix = Batch::new();
                let orphan = match (record, &receipt) {
                    (Some(bytes), _) => match read_record::<E>(key, &bytes) {
                        Ok((_, facts)) => {
                            fix.equals(key, bytes);
                            !facts.has_member(collection, &m.sort)
                        }
                        Err(e) => {
                            walk.drift.undecodable.push(Skipped::new(key, e));
                            false
                        }
                    },
                    (
                        None,
                        Some(StoredReceipt {
                            receipt: Ok(r),
                            bytes,
                        }),
                    ) => {
                        fix.absent(key).equals(E::receipt_key(key), bytes.clone());
                        !r.facts.has_member(collection, &m.sort)
                    }
                    (
                        None,
                        Some(StoredReceipt {
                            receipt: Err(_), ..
                        }),
                    ) => false,
                    (None, None) => {
                        fix.absent(key);
                        if Self::expiring() {
                            fix.absent(E::receipt_key(key));
                        }
                        true
                    }
                };
                if orphan {
                    walk.drift
                        .orphan_members
                        .push((collection.to_owned(), key.clone()));
                    if walk.repair {
                        fix.remove(collection, m.sort.clone(), m.member.clone());
                        let _ = self.store().commit(fix).await?;
                    }
                }
            }
            match range.next {
                Some(n) => after = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// Expiry ledger entries that match no receipt.
    async fn walk_ledger(&self, walk: &mut Walk) -> Result<()> {
        let ledger = E::ledger_key();
        let mut after = None;
        loop {
            let range = page(self.store(), &ledger, after.take()).await?;
            let keys: Vec<String> = range
                .members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.member).into_owned())
                .collect();
            let receipt_keys: Vec<String> = keys.iter().map(|k| E::receipt_key(k)).collect();
            let receipts = self.store().get_many(&receipt_keys).await?;
            for ((m, key), stored) in range.members.iter().zip(&keys).zip(receipts) {
                let matches = stored
                    .as_deref()
                    .is_some_and(|b| Receipt::decode(key, b).is_ok_and(|r| due(r.at) == m.sort));
                if matches {
                    continue;
                }
                walk.drift
                    .orphan_members
                    .push((ledger.clone(), key.clone()));
                if walk.repair {
                    let mut fix = Batch::new();
                    match stored {
                        Some(b) => fix.equals(E::receipt_key(key), b),
                        None => fix.absent(E::receipt_key(key)),
                    };
                    fix.remove(&ledger, m.sort.clone(), m.member.clone());
                    let _ = self.store().commit(fix).await?;
                }
            }
            match range.next {
                Some(n) => after = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// Claims whose holder is gone or does not derive them.
    async fn check_claims(&self, walk: &mut Walk, claims: &[String]) -> Result<()> {
        if claims.is_empty() {
            return Ok(());
        }
        let holders = self.store().get_many(claims).await?;
        let owners: Vec<String> = holders
            .iter()
            .map(|h| String::from_utf8_lossy(h.as_deref().unwrap_or_default()).into_owned())
            .collect();
        let records = self.store().get_many(&owners).await?;
        for (((claim, holder), owner), record) in
            claims.iter().zip(holders).zip(&owners).zip(records)
        {
            let Some(holder) = holder else { continue };
            let mut fix = Batch::new();
            fix.equals(claim, holder.clone());
            let orphan = match record {
                _ if owner.as_bytes() != holder.as_slice() => true,
                None => {
                    fix.absent(owner);
                    true
                }
                Some(bytes) => match read_record::<E>(owner, &bytes) {
                    Ok((_, facts)) => {
                        fix.equals(owner, bytes);
                        !facts.has_claim(claim)
                    }
                    Err(e) => {
                        walk.drift.undecodable.push(Skipped::new(owner, e));
                        false
                    }
                },
            };
            if orphan {
                walk.drift
                    .orphan_claims
                    .push((claim.clone(), owner.clone()));
                if walk.repair {
                    fix.delete(claim);
                    let _ = self.store().commit(fix).await?;
                }
            }
        }
        Ok(())
    }

    /// Receipts whose record is gone: expired writes, counted (or, by
    /// `reconcile`, swept); one whose ledger entry is missing is reported,
    /// since no sweep would find it.
    async fn check_receipts(&self, walk: &mut Walk, receipt_keys: &[String]) -> Result<()> {
        let keys: Vec<String> = receipt_keys
            .iter()
            .filter_map(|r| E::record_of_receipt(r))
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        let mut reads = keys.clone();
        reads.extend(keys.iter().map(|k| E::receipt_key(k)));
        let mut records = self.store().get_many(&reads).await?;
        let receipts = records.split_off(keys.len());
        for ((key, record), stored) in keys.iter().zip(records).zip(receipts) {
            let (None, Some(bytes)) = (record, stored) else {
                continue; // live records are checked from the discovery set
            };
            let r = match Receipt::decode(&E::receipt_key(key), &bytes) {
                Ok(r) => r,
                Err(e) => {
                    walk.drift.undecodable.push(Skipped::new(key, e));
                    continue;
                }
            };
            if !is_member(self.store(), &E::ledger_key(), &due(r.at), key.as_bytes()).await? {
                walk.drift.receipts.push(key.clone());
            }
            self.pending(walk, key, &bytes, &r).await?;
        }
        Ok(())
    }

    /// Removes the record at `key` whatever its bytes hold, with the
    /// derived entries it can be shown to own; `false` if there was no
    /// record (nor an expired write awaiting the sweep) at `key`.
    ///
    /// A record that decodes is deleted as `delete` does. One that does not
    /// (or is of a newer version) is removed with its discovery member and:
    /// when its receipt can be read (expiring entities), exactly what the
    /// receipt lists (members, counter amounts, claims still held by it);
    /// otherwise every claim held by it and every index and relation member
    /// naming it, found by walking the entity's derived keys (a maintenance
    /// scan that reads every collection of the entity). Counter amounts
    /// of a record without a receipt cannot be known: run `reconcile`
    /// afterwards to correct the counters.
    pub async fn purge(&self, key: &str) -> Result<bool> {
        for _ in 0..MAX_ATTEMPTS {
            let receipt_key = E::receipt_key(key);
            let mut read = self
                .store()
                .get_many(&[key.to_owned(), receipt_key.clone()])
                .await?;
            let receipt = read
                .pop()
                .flatten()
                .map(|b| StoredReceipt::new(&receipt_key, b));
            let record = read.pop().flatten();
            match (&record, &receipt) {
                (None, None) => return Ok(false),
                (Some(bytes), _) if read_record::<E>(key, bytes).is_ok() => {
                    return self.delete(key).await;
                }
                (
                    None,
                    Some(StoredReceipt {
                        receipt: Ok(r),
                        bytes,
                    }),
                ) => {
                    self.expire_receipt(key, bytes, r).await?;
                    return Ok(true);
                }
                _ => {}
            }
            let mut b = Batch::new();
            match record {
                Some(bytes) => b.equals(key, bytes).delete(key),
                None => b.absent(key),
            };
            b.remove(E::all_key(), Vec::new(), key.as_bytes().to_vec());
            let owned = match &receipt {
                Some(StoredReceipt { receipt: Ok(r), .. }) => r.facts.clone(),
                _ => self.owned_entries(key).await?,
            };
            if let Some(stored) = &receipt {
                move_receipt::<E>(&mut b, key, Some(stored), None)?;
            }
            let claims: Vec<String> = owned.claims.iter().map(|c| c.key.clone()).collect();
            let holders = self.store().get_many(&claims).await?;
            for (claim, holder) in claims.iter().zip(holders) {
                if holder.as_deref() == Some(key.as_bytes()) {
                    b.equals(claim, key.as_bytes().to_vec()).delete(claim);
                }
            }
            let mut rest = owned;
            rest.claims.clear();
            transition::<E>(&mut b, key, Some(&rest), None, None, ReceiptMove::Untouched)?;
            if self.store().commit(b).await?.is_applied() {
                return Ok(true);
            }
        }
        Err(Error::Conflict {
            entity: E::META.name,
            key: key.to_owned(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// The claims held by `key` and the index and relation members naming
    /// it, found by walking every derived key of the entity.
    async fn owned_entries(&self, key: &str) -> Result<Facts> {
        let mut owned = Facts::default();
        let mut cursor = None;
        loop {
            let (keys, next) = self.scan_derived(cursor.take()).await?;
            let claims: Vec<String> = keys
                .iter()
                .filter(|(_, kind)| *kind == Kind::Claim)
                .map(|(k, _)| k.clone())
                .collect();
            let holders = self.store().get_many(&claims).await?;
            for (claim, holder) in claims.iter().zip(holders) {
                if holder.as_deref() == Some(key.as_bytes()) {
                    owned.claim("", 1, claim.clone());
                }
            }
            for (collection, _) in keys.iter().filter(|(_, kind)| *kind == Kind::Collection) {
                let mut after = None;
                loop {
                    let range = page(self.store(), collection, after.take()).await?;
                    for m in range.members {
                        if m.member == key.as_bytes() {
                            owned.member(1, collection.clone(), m.sort);
                        }
                    }
                    match range.next {
                        Some(n) => after = Some(n),
                        None => break,
                    }
                }
            }
            match next {
                Some(n) => cursor = Some(n),
                None => return Ok(owned),
            }
        }
    }
}
