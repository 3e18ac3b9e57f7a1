//! The outward half of a walk: every record of the entity, page by page,
//! judged against what it implies (claims, collection members, its
//! receipt), its counter amounts added up, and what a repair rewrites.

use super::is_member;
use crate::codec::key::Derived;
use crate::engine::def::EntityDef;
use crate::engine::entity::{Facts, MemberFact};
use crate::engine::expiry::expire_receipt_in;
use crate::engine::receipt::{Receipt, StoredReceipt, due, move_receipt_in};
use crate::engine::skipped::Skipped;
use crate::engine::transition::{ReceiptMove, Upkeep, transition};
use crate::error::{Error, Result};
use crate::store::batch::Batch;
use crate::store::{RangeRequest, Store, encode_entry};
use crate::time::Timestamp;

use super::{Basis, Phase, WalkState, Walker, about_the_record};
use crate::engine::repo::commit;

impl<'a, D: EntityDef, S: Store> Walker<'a, D, S> {
    /// A page of the records.
    pub(super) async fn records(&self, state: &mut WalkState, page: usize) -> Result<()> {
        let (keys, next) = self.discovery_page(state.cursor.clone(), page).await?;
        let (values, receipts) = self.read_records(&keys).await?;
        let complete = self.complete().await?;
        for ((key, bytes), receipt) in keys.iter().zip(values).zip(receipts) {
            state.visited += 1;
            match bytes {
                Some(bytes) => self.visit(state, key, bytes, receipt, complete).await?,
                None => self.visit_gone(state, key, receipt).await?,
            }
        }
        match next {
            Some(n) => state.cursor = Some(n),
            None => {
                state.phase = Phase::Counters;
                state.cursor = None;
            }
        }
        Ok(())
    }

    /// The version the entity's stored index state is complete through
    /// (`None`: no state is stored, so nothing added later is readable
    /// yet). A state that does not decode is left to the reads, which
    /// report it.
    async fn complete(&self) -> Result<Option<u32>> {
        match crate::engine::state::load(&*self.reader(), self.def.space()).await {
            Ok(state) => Ok(state.map(|s| s.complete)),
            Err(Error::Decode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One live record of the discovery set: what it implies must be there
    /// (at its stored version), and it must not be older than something
    /// the index state (`complete`) makes readable.
    async fn visit(
        &self,
        state: &mut WalkState,
        key: &str,
        bytes: Vec<u8>,
        receipt: Option<StoredReceipt>,
        complete: Option<u32>,
    ) -> Result<()> {
        let facts = match self.def.stored_facts(key, &bytes) {
            Ok((version, facts)) => {
                // Its entries of what it is older than are not owed (so not
                // missing, and never written here: `migrate` rewrites it).
                // Without a view, one rewritten since it was read is not.
                if complete.is_some_and(|c| self.def.behind(version, c))
                    && self.unchanged(key, Some(&bytes)).await?
                {
                    state.drift.note_behind(key);
                }
                facts
            }
            Err(e) if about_the_record(&e) => {
                state.drift.undecodable.push(Skipped::new(key, e));
                state.unreadable += 1;
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        state.drift.records += 1;
        state.count(&facts);
        // A record expires by the entity's `ttl` or by its own expiry
        // field; one that does neither owes no receipt.
        let expires = self.def.ttl().is_some()
            || (self.def.expiry_field().is_some() && self.expires_at(key, &bytes).is_some());
        // Without a view, a record rewritten since it was read moved its
        // receipt and ledger entry: not out of step.
        if expires
            && !self.receipt_holds(key, &facts, receipt.as_ref()).await?
            && self.unchanged(key, Some(&bytes)).await?
        {
            state.drift.receipts.push(key.to_owned());
            if state.repair {
                self.rewrite_receipt(key, &bytes, receipt.as_ref(), &facts)
                    .await?;
            }
        }
        // `want`: the entries the record implies, less claims another
        // record holds (reported, never taken); `have`: those found.
        let mut want = facts;
        want.counters.clear();
        let claim_keys: Vec<String> = want.claims.iter().map(|c| c.key.clone()).collect();
        let holders = self.reader().get_many(&claim_keys).await?;
        let mut have = Facts::default();
        let mut kept = Vec::with_capacity(want.claims.len());
        let (mut conflicting, mut missing_claims, mut missing_members) =
            (Vec::new(), Vec::new(), Vec::new());
        for (c, holder) in want.claims.drain(..).zip(holders) {
            match holder {
                Some(holder) if holder == key.as_bytes() => {
                    have.claims.push(c.clone());
                    kept.push(c);
                }
                Some(holder) => conflicting.push((
                    c.key,
                    key.to_owned(),
                    String::from_utf8_lossy(&holder).into_owned(),
                )),
                None => {
                    missing_claims.push((c.key.clone(), key.to_owned()));
                    kept.push(c);
                }
            }
        }
        want.claims = kept;
        for m in &want.members {
            if is_member(&*self.reader(), &m.collection, &m.sort, key.as_bytes()).await? {
                have.members.push(m.clone());
            } else if trimmed(&*self.reader(), m, key.as_bytes()).await? {
                // Trimmed from a capped collection: not drift.
                have.members.push(m.clone());
            } else {
                missing_members.push((m.collection.clone(), key.to_owned()));
            }
        }
        let suspect =
            !(conflicting.is_empty() && missing_claims.is_empty() && missing_members.is_empty());
        if suspect && !self.has_view() {
            // Without a view, a write may have come in between: read the
            // suspects again between two reads of the record, and report
            // only what is still out of step while the record is as read
            // (a write keeps its own record's entries in step).
            if !self.unchanged(key, Some(&bytes)).await? {
                return Ok(());
            }
            let keys: Vec<String> = conflicting
                .iter()
                .map(|(c, _, _)| c.clone())
                .chain(missing_claims.iter().map(|(c, _)| c.clone()))
                .collect();
            let mut now = self.store.get_many(&keys).await?.into_iter();
            conflicting.retain(|(_, _, holder)| {
                now.next().flatten().as_deref() == Some(holder.as_bytes())
            });
            missing_claims.retain(|_| now.next().flatten().is_none());
            let mut still = Vec::with_capacity(missing_members.len());
            for m in &want.members {
                if missing_members.iter().any(|(c, _)| *c == m.collection)
                    && !is_member(self.store, &m.collection, &m.sort, key.as_bytes()).await?
                {
                    still.push((m.collection.clone(), key.to_owned()));
                }
            }
            missing_members = still;
            if !self.unchanged(key, Some(&bytes)).await? {
                return Ok(());
            }
        }
        state.drift.conflicting_claims.append(&mut conflicting);
        state.drift.missing_claims.append(&mut missing_claims);
        state.drift.missing_members.append(&mut missing_members);
        let missing =
            have.claims.len() < want.claims.len() || have.members.len() < want.members.len();
        if state.repair && missing && !self.repair(key, bytes, &have, &want).await? {
            state.drift.unrepaired.push(key.to_owned());
        }
        Ok(())
    }

    /// A discovery member whose record is gone: an expired write awaiting
    /// the sweep (its receipt remains), or an orphan.
    async fn visit_gone(
        &self,
        state: &mut WalkState,
        key: &str,
        receipt: Option<StoredReceipt>,
    ) -> Result<()> {
        let space = self.def.space();
        match receipt {
            Some(StoredReceipt {
                receipt: Err(e), ..
            }) => {
                state.drift.undecodable.push(Skipped::new(key, e));
                state.unreadable += 1;
            }
            Some(StoredReceipt {
                receipt: Ok(r),
                bytes,
            }) => self.pending(state, key, &bytes, &r).await?,
            // An expired record whose key remains (no receipt: it never
            // had entries to undo); nothing lists it.
            None if !self.def.records(self.store).is_set() => {}
            None => {
                let all = space.all_key();
                let member = Some((all.as_str(), &[][..], key.as_bytes()));
                if !self.still_out_of_step(&[(key, None)], member).await? {
                    return Ok(()); // created or deleted meanwhile, or in flight
                }
                state.drift.orphan_members.push((all, key.to_owned()));
                if state.repair {
                    let mut b = Batch::new();
                    b.absent(key);
                    if self.def.expiring() {
                        b.absent(space.receipt_key(key));
                    }
                    b.remove(space.all_key(), Vec::new(), key.as_bytes().to_vec());
                    let _ = commit(self.store, b).await?;
                }
            }
        }
        Ok(())
    }

    /// Whether the walk reads through a view of the store.
    pub(crate) fn has_view(&self) -> bool {
        self.view().is_some()
    }

    /// Whether the record at `key` still holds `bytes` (`None`: nothing),
    /// as the walk read it: always on a view; otherwise read again, so that
    /// a suspect found beside a write in flight is not reported.
    pub(crate) async fn unchanged(&self, key: &str, bytes: Option<&[u8]>) -> Result<bool> {
        if self.has_view() {
            return Ok(true);
        }
        Ok(self.store.get(key).await?.as_deref() == bytes)
    }

    /// Whether what the walk found out of step still is: every key of
    /// `read` still holds what the walk read there, and `member` (a
    /// collection, sort and member), if given, is still in its collection.
    /// Always on a view. Otherwise they are read again, around a check that
    /// no unfinished write holds those keys, twice, 50 ms apart: on a Redis
    /// Cluster a write adds its claims and members before its record
    /// commits, and a write that gives up removes them a round trip after.
    pub(crate) async fn still_out_of_step(
        &self,
        read: &[(&str, Option<&[u8]>)],
        member: Option<(&str, &[u8], &[u8])>,
    ) -> Result<bool> {
        if self.has_view() {
            return Ok(true);
        }
        let keys: Vec<String> = read.iter().map(|(k, _)| (*k).to_owned()).collect();
        let as_read = |now: Vec<Option<Vec<u8>>>| {
            now.iter()
                .zip(read)
                .all(|(now, (_, then))| now.as_deref() == *then)
        };
        for wait in [0, 50] {
            if wait > 0 {
                crate::exec::sleep(std::time::Duration::from_millis(wait)).await;
            }
            if let Some((collection, sort, m)) = member {
                if !self.still_member(collection, sort, m).await? {
                    return Ok(false);
                }
            }
            if !as_read(self.store.get_many(&keys).await?)
                || self.in_flight(&keys).await?
                || !as_read(self.store.get_many(&keys).await?)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether an unfinished write holds any of `keys` (only a Redis
    /// Cluster can say: a cross-slot write adds its claims and members
    /// before its record), so that what looks out of step around them is a
    /// write in flight; never on a view.
    pub(crate) async fn in_flight(&self, keys: &[String]) -> Result<bool> {
        if self.has_view() {
            return Ok(false);
        }
        Ok(self
            .store
            .change_stamps(keys)
            .await?
            .is_some_and(|stamps| stamps.contains(&u64::MAX)))
    }

    /// Whether `member` is still in `collection` under `sort`: always on a
    /// view; otherwise read again.
    pub(crate) async fn still_member(
        &self,
        collection: &str,
        sort: &[u8],
        member: &[u8],
    ) -> Result<bool> {
        if self.has_view() {
            return Ok(true);
        }
        is_member(self.store, collection, sort, member).await
    }

    /// An expired write whose receipt remains: `verify` counts what it
    /// still contributes, `reconcile` sweeps it.
    pub(crate) async fn pending(
        &self,
        state: &mut WalkState,
        key: &str,
        bytes: &[u8],
        r: &Receipt,
    ) -> Result<()> {
        if !state.pending.insert(key.to_owned()) {
            return Ok(());
        }
        // Counted either way: the counters it is judged against are read as
        // they were before any sweep (through the view). Without a view the
        // walk leaves it to the sweep: its own sweep would move the
        // counters it measures.
        self.count_receipt(state, &r.facts);
        let sweep = state.repair && state.basis != Basis::Stamps;
        if sweep && expire_receipt_in(self.store, self.upkeep(), key, bytes, r).await? {
            return Ok(());
        }
        state.drift.expired += 1;
        Ok(())
    }

    /// Counts the amounts an expiry receipt lists in the counters this
    /// schema declares (and link counts): a receipt lists what its writer
    /// declared, which may be another version's counters.
    pub(super) fn count_receipt(&self, state: &mut WalkState, facts: &Facts) {
        let space = self.def.space();
        for c in &facts.counters {
            let declared = match space.classify(&c.key) {
                Some((Derived::Counter, name)) => self.def.since(Derived::Counter, name).is_some(),
                Some((Derived::LinkCount, _)) => true,
                _ => false,
            };
            if declared {
                *state.expected.entry(c.key.clone()).or_default() += c.delta;
            }
        }
    }

    /// Whether the receipt of the live record at `key` lists exactly
    /// `facts` and its ledger entry is there.
    async fn receipt_holds(
        &self,
        key: &str,
        facts: &Facts,
        receipt: Option<&StoredReceipt>,
    ) -> Result<bool> {
        let Some(Ok(r)) = receipt.map(|s| s.receipt.as_ref()) else {
            return Ok(false);
        };
        // The ledger read as the receipt was (through the view, where the
        // walk has one): a write since the view moves both.
        let ledger = self.def.space().ledger_key();
        Ok(r.facts.same_entries(&facts.owed_on_expiry())
            && is_member(&*self.reader(), &ledger, &due(r.at), key.as_bytes()).await?)
    }

    /// When the record at `key`, stored as `bytes`, expires by its expiry
    /// field (`None` when the entity has none, the field is not set, or
    /// the record does not decode).
    pub(crate) fn expires_at(&self, key: &str, bytes: &[u8]) -> Option<Timestamp> {
        self.def.expiry_field()?;
        let (_, record) = self.def.read(key, bytes).ok()?;
        self.def.expires_at(&record)
    }

    /// The remaining lifetime of the expiring record at `key` (whose expiry
    /// field names `at`): what the store tells, else the time left until
    /// `at`, else a fresh sample of the entity's TTL; `None` for a record
    /// that does not expire.
    pub(crate) async fn lifetime(
        &self,
        key: &str,
        at: Option<Timestamp>,
    ) -> Result<Option<std::time::Duration>> {
        let ttl = self.def.ttl();
        if at.is_none() && ttl.is_none() {
            return Ok(None);
        }
        if let Some(left) = self.store.time_to_live(key).await? {
            return Ok(Some(left));
        }
        Ok(Some(match (at, ttl) {
            (Some(at), _) => {
                let now = self.store.now_ms().await?;
                let due = u64::try_from(at.as_unix_millis()).unwrap_or(0);
                // Due already: the shortest lifetime, so it goes at once.
                std::time::Duration::from_millis(due.saturating_sub(now).max(1))
            }
            (None, Some(t)) => t.sample(),
            (None, None) => return Ok(None),
        }))
    }

    /// Writes the receipt (and ledger entry) of the live record at `key`,
    /// due when the record expires.
    async fn rewrite_receipt(
        &self,
        key: &str,
        bytes: &[u8],
        old: Option<&StoredReceipt>,
        facts: &Facts,
    ) -> Result<()> {
        // "Now" first, then the time left: their sum is never later than
        // the record's real expiry, so the sweep never comes too late.
        let now = self.store.now_ms().await?;
        let Some(left) = self.lifetime(key, self.expires_at(key, bytes)).await? else {
            return Ok(());
        };
        let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        let image = self.def.feed().map(|_| bytes);
        let receipt = Receipt::new(now.saturating_add(ms), facts, image);
        let mut b = Batch::new();
        b.equals(key, bytes.to_vec());
        move_receipt_in(self.def.space(), &mut b, key, old, Some(&receipt))?;
        let _ = commit(self.store, b).await?;
        Ok(())
    }

    /// Writes the entries of the record at `key` (stored as `bytes`) that
    /// `want` has and `have` lacks, conditional on the record being
    /// unchanged and the claims still free: a concurrent writer wins, and
    /// `verify` reports what is left.
    ///
    /// The entries of an expiring record get its remaining lifetime, so they
    /// expire with it. When the store cannot tell that lifetime, they get a
    /// fresh sample of the entity's TTL: never no expiry, but possibly up to
    /// one TTL more than the record, during which a repaired claim keeps its
    /// value taken.
    ///
    /// Whether the repair landed: `false` when the record changed since it
    /// was read (the repair conditions on it).
    async fn repair(&self, key: &str, bytes: Vec<u8>, have: &Facts, want: &Facts) -> Result<bool> {
        let ttl = self.lifetime(key, self.expires_at(key, &bytes)).await?;
        let mut fix = Batch::new();
        fix.equals(key, bytes);
        transition(
            Upkeep::on(self.def.space(), self.store),
            &mut fix,
            key,
            Some(have),
            Some(want),
            ttl,
            ReceiptMove::Untouched,
        )?;
        Ok(commit(self.store, fix).await?.is_applied())
    }
}

/// Whether the capped membership `m` of `member` is absent because its
/// collection was trimmed: the collection holds its `keep` members, all
/// greater than `m`'s entry.
async fn trimmed<S: Store>(store: &S, m: &MemberFact, member: &[u8]) -> Result<bool> {
    if m.keep == 0 || store.collection_len(&m.collection).await? < u64::from(m.keep) {
        return Ok(false);
    }
    let lowest = store.range(&m.collection, RangeRequest::all(1)).await?;
    Ok(lowest
        .members
        .first()
        .is_some_and(|l| encode_entry(&l.sort, &l.member) > encode_entry(&m.sort, member)))
}
