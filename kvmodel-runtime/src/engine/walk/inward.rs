//! The inward phase of a walk: derived entries no record implies, found by
//! walking the entity's derived key space.
//!
//! The derived keys of an entity all start with `{ns}:{key space}#`. Normal
//! operation never lists them (the discovery set lists records); a walk
//! enumerates them with the store's maintenance-only [`Store::scan`] and
//! checks each against the record it names:
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

use super::is_member;
use super::{Basis, Phase, WalkState, Walker, about_the_record};
use crate::codec::key::Derived;
use crate::engine::def::EntityDef;
use crate::engine::receipt::{Receipt, StoredReceipt, due};
use crate::engine::repo::commit;
use crate::engine::shards;
use crate::engine::skipped::Skipped;
use crate::error::Result;
use crate::store::batch::Batch;
use crate::store::{RangeRequest, RangeResult, Store};

/// Members per page of a collection walk.
const PAGE: usize = 500;

/// What a derived key of the entity is, as far as a walk judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Claim,
    Collection,
    Counter,
    Ledger,
    Receipt,
    /// A link collection.
    Link,
    /// A link count.
    LinkCount,
    /// A link edge.
    Edge,
    /// A record's link registry.
    Registry,
}

/// The kind of the derived key `key` of `def`, or `None` for the discovery
/// set (walked from the records), the index state, and keys of undeclared
/// names.
pub(crate) fn classify<D: EntityDef>(def: &D, key: &str) -> Option<Kind> {
    let (kind, name) = def.space().classify(key)?;
    match kind {
        Derived::Expiry if name.is_empty() => Some(Kind::Ledger),
        Derived::Receipt => Some(Kind::Receipt),
        Derived::Link => Some(Kind::Link),
        Derived::LinkCount => Some(Kind::LinkCount),
        Derived::Edge => Some(Kind::Edge),
        Derived::Registry => Some(Kind::Registry),
        Derived::Claim | Derived::Index | Derived::Relation | Derived::Counter => {
            def.since(kind, name)?;
            Some(match kind {
                Derived::Claim => Kind::Claim,
                Derived::Counter => Kind::Counter,
                _ => Kind::Collection,
            })
        }
        _ => None,
    }
}

/// The page of the sorted collection at `key` after `after`.
pub(crate) async fn page<S: Store>(
    store: &S,
    key: &str,
    after: Option<Vec<u8>>,
) -> Result<RangeResult> {
    let mut req = RangeRequest::all(PAGE);
    req.after = after;
    store.range(key, req).await
}

impl<D: EntityDef, S: Store> Walker<'_, D, S> {
    /// A scan page of the entity's derived keys, classified, and the cursor
    /// of the next.
    pub(crate) async fn scan_derived(
        &self,
        cursor: Option<Vec<u8>>,
        count: usize,
    ) -> Result<(Vec<(String, Kind)>, Option<Vec<u8>>)> {
        let page = self
            .reader()
            .scan(&self.def.space().derived_prefix(), cursor, count)
            .await?;
        let keys = page
            .keys
            .into_iter()
            .filter_map(|k| classify(self.def, &k).map(|kind| (k, kind)))
            .collect();
        Ok((keys, page.next))
    }

    /// One scan page of the inward phase: every derived key on it checked
    /// against the record it names.
    pub(crate) async fn derived(&self, state: &mut WalkState, count: usize) -> Result<()> {
        let (keys, next) = self.scan_derived(state.cursor.clone(), count).await?;
        let mut claims = Vec::new();
        let mut receipts = Vec::new();
        let (mut edges, mut registries) = (Vec::new(), Vec::new());
        for (key, kind) in keys {
            state.examined += 1;
            match kind {
                Kind::Claim => claims.push(key),
                Kind::Collection => self.walk_collection(state, &key).await?,
                // Counters no record contributes to must be 0 (the shards
                // of a sharded counter count as that counter).
                Kind::Counter => {
                    let counter = shards::counter_of(self.def, key);
                    state.expected.entry(counter).or_insert(0);
                }
                Kind::Ledger => self.walk_ledger(state).await?,
                Kind::Receipt => receipts.push(key),
                Kind::Link => {
                    let name = self.def.space().classify(&key).map(|(_, n)| n.to_owned());
                    self.walk_link_collection(state, &key, &name.unwrap_or_default())
                        .await?
                }
                // Checked with the counters against its collection's size.
                Kind::LinkCount => {
                    state.expected.entry(key).or_insert(0);
                }
                Kind::Edge => edges.push(key),
                Kind::Registry => registries.push(key),
            }
        }
        self.check_edges(state, &edges).await?;
        self.check_registries(state, &registries).await?;
        self.check_claims(state, &claims).await?;
        self.check_receipts(state, &receipts).await?;
        match next {
            Some(n) => state.cursor = Some(n),
            None => {
                state.phase = Phase::Records;
                state.cursor = None;
                // Before the first record (see the walk's basis).
                self.read_stamps(state).await?;
                self.count_deferred(state).await?;
            }
        }
        Ok(())
    }

    /// Reads record keys and, for an expiring entity, their receipts.
    pub(crate) async fn read_records(
        &self,
        keys: &[String],
    ) -> Result<(Vec<Option<Vec<u8>>>, Vec<Option<StoredReceipt>>)> {
        let space = self.def.space();
        let mut reads = keys.to_vec();
        if self.def.expiring() {
            reads.extend(keys.iter().map(|k| space.receipt_key(k)));
        }
        let mut records = self.reader().get_many(&reads).await?;
        let receipts = records
            .split_off(keys.len())
            .into_iter()
            .zip(keys)
            .map(|(b, k)| b.map(|b| StoredReceipt::new(&space.receipt_key(k), b)))
            .chain(std::iter::repeat_with(|| None))
            .take(keys.len())
            .collect();
        Ok((records, receipts))
    }

    /// Members of an index or relation collection that no record derives.
    async fn walk_collection(&self, state: &mut WalkState, collection: &str) -> Result<()> {
        let space = self.def.space();
        let mut after = None;
        loop {
            let range = page(&*self.reader(), collection, after.take()).await?;
            let keys: Vec<String> = range
                .members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.member).into_owned())
                .collect();
            let (records, receipts) = self.read_records(&keys).await?;
            let rows = range.members.iter().zip(&keys).zip(records).zip(receipts);
            for (((m, key), record), receipt) in rows {
                let mut fix = Batch::new();
                let read = if self.has_view() {
                    None
                } else {
                    record.clone()
                };
                let orphan = match (record, &receipt) {
                    (Some(bytes), _) => match self.def.stored_facts(key, &bytes) {
                        Ok((_, facts)) => {
                            fix.equals(key, bytes);
                            !facts.has_member(collection, &m.sort)
                        }
                        Err(e) if about_the_record(&e) => {
                            state.drift.undecodable.push(Skipped::new(key, e));
                            false
                        }
                        Err(e) => return Err(e),
                    },
                    (
                        None,
                        Some(StoredReceipt {
                            receipt: Ok(r),
                            bytes,
                        }),
                    ) => {
                        fix.absent(key)
                            .equals(space.receipt_key(key), bytes.clone());
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
                        if self.def.expiring() {
                            fix.absent(space.receipt_key(key));
                        }
                        true
                    }
                };
                if orphan
                    && self
                        .still_out_of_step(
                            &[(key, read.as_deref())],
                            Some((collection, &m.sort, &m.member)),
                        )
                        .await?
                {
                    state
                        .drift
                        .orphan_members
                        .push((collection.to_owned(), key.clone()));
                    if state.repair {
                        fix.remove(collection, m.sort.clone(), m.member.clone());
                        let _ = commit(self.store, fix).await?;
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
    async fn walk_ledger(&self, state: &mut WalkState) -> Result<()> {
        let space = self.def.space();
        let ledger = space.ledger_key();
        let mut after = None;
        loop {
            let range = page(&*self.reader(), &ledger, after.take()).await?;
            let keys: Vec<String> = range
                .members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.member).into_owned())
                .collect();
            let receipt_keys: Vec<String> = keys.iter().map(|k| space.receipt_key(k)).collect();
            let receipts = self.reader().get_many(&receipt_keys).await?;
            for ((m, key), stored) in range.members.iter().zip(&keys).zip(receipts) {
                let matches = stored
                    .as_deref()
                    .is_some_and(|b| Receipt::decode(key, b).is_ok_and(|r| due(r.at) == m.sort));
                if matches {
                    continue;
                }
                state
                    .drift
                    .orphan_members
                    .push((ledger.clone(), key.clone()));
                if state.repair {
                    let mut fix = Batch::new();
                    match stored {
                        Some(b) => fix.equals(space.receipt_key(key), b),
                        None => fix.absent(space.receipt_key(key)),
                    };
                    fix.remove(&ledger, m.sort.clone(), m.member.clone());
                    let _ = commit(self.store, fix).await?;
                }
            }
            match range.next {
                Some(n) => after = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// Claims whose holder is gone or does not derive them.
    async fn check_claims(&self, state: &mut WalkState, claims: &[String]) -> Result<()> {
        if claims.is_empty() {
            return Ok(());
        }
        let holders = self.reader().get_many(claims).await?;
        let owners: Vec<String> = holders
            .iter()
            .map(|h| String::from_utf8_lossy(h.as_deref().unwrap_or_default()).into_owned())
            .collect();
        let records = self.reader().get_many(&owners).await?;
        for (((claim, holder), owner), record) in
            claims.iter().zip(holders).zip(&owners).zip(records)
        {
            let Some(holder) = holder else { continue };
            let mut fix = Batch::new();
            fix.equals(claim, holder.clone());
            let read = if self.has_view() {
                None
            } else {
                record.clone()
            };
            let orphan = match record {
                _ if owner.as_bytes() != holder.as_slice() => true,
                None => {
                    fix.absent(owner);
                    true
                }
                Some(bytes) => match self.def.stored_facts(owner, &bytes) {
                    Ok((_, facts)) => {
                        fix.equals(owner, bytes);
                        !facts.has_claim(claim)
                    }
                    Err(e) if about_the_record(&e) => {
                        state.drift.undecodable.push(Skipped::new(owner, e));
                        false
                    }
                    Err(e) => return Err(e),
                },
            };
            if orphan
                && self
                    .still_out_of_step(&[(claim, Some(&holder)), (owner, read.as_deref())], None)
                    .await?
            {
                state
                    .drift
                    .orphan_claims
                    .push((claim.clone(), owner.clone()));
                if state.repair {
                    fix.delete(claim);
                    let _ = commit(self.store, fix).await?;
                }
            }
        }
        Ok(())
    }

    /// Receipts whose record is gone: expired writes, counted (or, by
    /// `reconcile`, swept); one whose ledger entry is missing is reported,
    /// since no sweep would find it.
    async fn check_receipts(&self, state: &mut WalkState, receipt_keys: &[String]) -> Result<()> {
        let space = self.def.space();
        let keys: Vec<String> = receipt_keys
            .iter()
            .filter_map(|r| space.record_of_receipt(r))
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        let mut reads = keys.clone();
        reads.extend(keys.iter().map(|k| space.receipt_key(k)));
        let mut records = self.reader().get_many(&reads).await?;
        let receipts = records.split_off(keys.len());
        for ((key, record), stored) in keys.iter().zip(records).zip(receipts) {
            let (None, Some(bytes)) = (record, stored) else {
                continue; // live records are checked from the discovery set
            };
            let r = match Receipt::decode(&space.receipt_key(key), &bytes) {
                Ok(r) => r,
                Err(e) => {
                    state.drift.undecodable.push(Skipped::new(key, e));
                    state.unreadable += 1;
                    continue;
                }
            };
            let ledger = space.ledger_key();
            if !is_member(&*self.reader(), &ledger, &due(r.at), key.as_bytes()).await? {
                state.drift.receipts.push(key.clone());
            }
            if state.basis == Basis::Stamps {
                // Counted once the stamps are read (see `count_deferred`).
                state.deferred.insert(key.clone());
            } else {
                self.pending(state, key, &bytes, &r).await?;
            }
        }
        Ok(())
    }

    /// Counts the expired writes the inward phase found by their receipts,
    /// as they are after the stamps were read: one the program's sweep
    /// took back meanwhile is no longer counted, as its counters no longer
    /// count it.
    pub(crate) async fn count_deferred(&self, state: &mut WalkState) -> Result<()> {
        let keys: Vec<String> = std::mem::take(&mut state.deferred).into_iter().collect();
        for page in keys.chunks(500) {
            let (records, receipts) = self.read_records(page).await?;
            for ((key, record), receipt) in page.iter().zip(records).zip(receipts) {
                if let (
                    None,
                    Some(StoredReceipt {
                        receipt: Ok(r),
                        bytes,
                    }),
                ) = (record, receipt)
                {
                    self.pending(state, key, &bytes, &r).await?;
                }
            }
        }
        Ok(())
    }
}
