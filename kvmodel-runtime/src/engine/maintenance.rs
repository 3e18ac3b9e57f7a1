//! Maintenance over every record of an entity: `migrate` (rewrite old
//! versions), `verify` (recompute index entries and counters, report drift)
//! and `reconcile` (the same, and repair it).
//!
//! `migrate` walks the entity's discovery set page by page (never a key
//! scan) and is resumable from any page's cursor. `verify` and `reconcile`
//! look both ways: outwards from every record in the discovery set (what
//! each record implies must be there), then inwards from every derived key
//! of the entity (what is there must be implied by a record: orphaned
//! claims, members and counters), which they enumerate with the store's
//! maintenance-only [`Store::scan`] (see [`orphans`](crate::engine::orphans)).
//! A record that cannot be decoded is reported and passed over.
//! `reconcile` adjusts counters by the difference it measured, so run it
//! while writers are paused, or run `verify` again afterwards to confirm.

use std::collections::{BTreeMap, HashSet};

use crate::codec::record;
use crate::engine::entity::{Entity, Facts};
use crate::engine::expiry::{Receipt, StoredReceipt, due, move_receipt, read_record};
use crate::engine::page::{Cursor, ListRequest, PageRequest};
use crate::engine::repo::{Engine, ReceiptMove, transition};
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::batch::Batch;
use crate::store::{Direction, RangeRequest, Store, encode_entry};

/// How far a maintenance walk got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Records visited so far.
    pub visited: u64,
    /// Records rewritten (migrate) or repaired entries (reconcile) so far.
    pub changed: u64,
    /// Where to resume; `None` when the walk is complete.
    pub next: Option<Cursor>,
    /// Records that could not be read, so were not migrated.
    pub skipped: Vec<Skipped>,
}

/// A counter whose stored value differs from what the records add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterDrift {
    /// Counter key.
    pub key: String,
    /// What the records add up to (exactly; it may lie beyond what a 64-bit
    /// counter holds, and is then reported but not repaired). 0 for a
    /// counter no record contributes to.
    pub expected: i128,
    /// What the store holds.
    pub actual: i64,
}

/// Everything `verify` found out of step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drift {
    /// Records examined.
    pub records: u64,
    /// Unique claims that are missing (claim key, record key).
    pub missing_claims: Vec<(String, String)>,
    /// Unique claims held by another record (claim key, record key, holder).
    pub conflicting_claims: Vec<(String, String, String)>,
    /// Collection members that are missing (collection key, record key).
    pub missing_members: Vec<(String, String)>,
    /// Counters that differ from the records, including counters no record
    /// contributes to that are not 0.
    pub counters: Vec<CounterDrift>,
    /// Records (or expiry receipts) that could not be read: bytes that do
    /// not decode, a newer version, a record under a key not its own.
    /// `purge` removes such a record.
    pub undecodable: Vec<Skipped>,
    /// Unique claims that no record holds: the record they name is gone or
    /// does not have that value (claim key, the record key it holds).
    pub orphan_claims: Vec<(String, String)>,
    /// Collection members (of indexes, relations, the discovery set and the
    /// expiry ledger) whose record is gone or does not derive them
    /// (collection key, member).
    pub orphan_members: Vec<(String, String)>,
    /// Records of an expiring entity whose receipt or ledger entry is
    /// missing or out of step, so their expiry would not reach their
    /// derived entries (record keys).
    pub receipts: Vec<String>,
    /// Records that expired and whose entries the next sweep removes
    /// (`verify` only: `reconcile` sweeps them). Not drift: their entries
    /// and counter amounts are counted as present.
    pub expired: u64,
}

impl Drift {
    /// True when nothing is out of step (records awaiting the expiry sweep
    /// are not drift).
    pub fn is_clean(&self) -> bool {
        self.missing_claims.is_empty()
            && self.conflicting_claims.is_empty()
            && self.missing_members.is_empty()
            && self.counters.is_empty()
            && self.undecodable.is_empty()
            && self.orphan_claims.is_empty()
            && self.orphan_members.is_empty()
            && self.receipts.is_empty()
    }

    /// Sorts every list and drops repeats (a scan may visit a key twice).
    fn tidy(&mut self) {
        self.undecodable.sort_by(|a, b| a.key.cmp(&b.key));
        self.undecodable.dedup();
        self.orphan_claims.sort();
        self.orphan_claims.dedup();
        self.orphan_members.sort();
        self.orphan_members.dedup();
        self.receipts.sort();
        self.receipts.dedup();
    }
}

/// What a `verify` or `reconcile` walk carries from record to record.
#[derive(Default)]
pub(crate) struct Walk {
    pub(crate) repair: bool,
    pub(crate) drift: Drift,
    /// Counter key → what the records (and expired writes awaiting the
    /// sweep) add up to.
    pub(crate) expected: BTreeMap<String, i128>,
    /// Record keys whose expired write was counted in `expected` already.
    pub(crate) pending: HashSet<String>,
}

impl Walk {
    /// Counts the counter amounts of `facts`.
    pub(crate) fn count(&mut self, facts: &Facts) {
        for c in &facts.counters {
            *self.expected.entry(c.key.clone()).or_default() += c.delta;
        }
    }
}

/// Decode and version errors, and a record that would be rewritten larger
/// than its entity's `max_size`, are about one record; everything else (the
/// store failing) stops a walk.
pub(crate) fn about_the_record(e: &Error) -> bool {
    matches!(
        e,
        Error::Decode { .. } | Error::FutureVersion { .. } | Error::ValueTooLarge { .. }
    )
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Migrates one page of records: every record older than the current
    /// version is rewritten through `update` semantics, so indexes and
    /// counters introduced since (`since: N`) are filled in. Records that
    /// cannot be read are reported in [`Progress::skipped`].
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_page", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_page(&self, page: PageRequest, progress: &mut Progress) -> Result<()> {
        let (all, page) = (E::all_key(), ListRequest::from(page));
        let range = self.store().range(&all, page.range(&all)?).await?;
        let keys: Vec<String> = range
            .members
            .iter()
            .map(|m| String::from_utf8_lossy(&m.member).into_owned())
            .collect();
        // One batched read tells the versions; only old records are rewritten
        // (`modify` reads each again, as its optimistic commit needs).
        let values = self.store().get_many(&keys).await?;
        for (key, bytes) in keys.iter().zip(values) {
            progress.visited += 1;
            let Some(bytes) = bytes else { continue };
            let old = match record::header(key, &bytes) {
                Ok(h) => h.version < E::VERSION,
                Err(e) => {
                    progress.skipped.push(Skipped::new(key.clone(), e));
                    continue;
                }
            };
            if old {
                match self.modify(key, |_| {}).await {
                    Ok(_) => progress.changed += 1,
                    Err(Error::NotFound { .. }) => {}
                    Err(e) if about_the_record(&e) => {
                        progress.skipped.push(Skipped::new(key.clone(), e));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        progress.next = range.next.map(|p| page.next_cursor(&all, p));
        Ok(())
    }

    /// Migrates every record, `page_size` at a time, reporting progress
    /// after each page. Resume an interrupted run with `migrate_from`.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_all", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_all(
        &self,
        page_size: usize,
        on_progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress> {
        self.migrate_from(None, page_size, on_progress).await
    }

    /// Migrates every record from `cursor` on (a [`Progress::next`]).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "migrate_from", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn migrate_from(
        &self,
        cursor: Option<Cursor>,
        page_size: usize,
        mut on_progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress> {
        let mut progress = Progress {
            next: cursor,
            ..Progress::default()
        };
        loop {
            let mut page = PageRequest::new(page_size.max(1));
            if let Some(c) = progress.next.take() {
                page = page.after(c);
            }
            self.migrate_page(page, &mut progress).await?;
            on_progress(&progress);
            if progress.next.is_none() {
                return Ok(progress);
            }
        }
    }

    /// Recomputes every claim, collection member and counter from the
    /// records, looks for derived entries no record implies, and reports
    /// what is out of step. Writes nothing.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "verify", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn verify(&self, page_size: usize) -> Result<Drift> {
        self.walk(page_size, false).await
    }

    /// Sweeps expired records, then does what [`verify`](Self::verify)
    /// does and repairs: missing claims and members are written (through
    /// the same transition as every write, with the record's remaining
    /// lifetime when it expires), receipts rewritten, orphaned claims and
    /// members removed, counters adjusted by the measured difference (a
    /// counter no record contributes to is deleted). Claims held by another
    /// record are reported, never taken; undecodable records are reported
    /// and left for `purge`.
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "reconcile", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn reconcile(&self, page_size: usize) -> Result<Drift> {
        loop {
            let sweep = self.sweep_expired(10_000).await?;
            if !sweep.more {
                break;
            }
        }
        self.walk(page_size, true).await
    }

    async fn walk(&self, page_size: usize, repair: bool) -> Result<Drift> {
        let mut walk = Walk {
            repair,
            ..Walk::default()
        };
        let mut after = None;
        loop {
            let mut req = RangeRequest::all(page_size.max(1));
            req.after = after.take();
            let range = self.store().range(&E::all_key(), req).await?;
            let keys: Vec<String> = range
                .members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.member).into_owned())
                .collect();
            let mut reads = keys.clone();
            if Self::expiring() {
                reads.extend(keys.iter().map(|k| E::receipt_key(k)));
            }
            let mut values = self.store().get_many(&reads).await?;
            let mut receipts = values.split_off(keys.len()).into_iter();
            for (key, bytes) in keys.iter().zip(values) {
                let receipt = receipts
                    .next()
                    .flatten()
                    .map(|b| StoredReceipt::new(&E::receipt_key(key), b));
                match bytes {
                    Some(bytes) => self.visit(&mut walk, key, bytes, receipt).await?,
                    None => self.visit_gone(&mut walk, key, receipt).await?,
                }
            }
            match range.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        self.walk_orphans(&mut walk).await?;
        self.settle_counters(&mut walk).await?;
        walk.drift.tidy();
        Ok(walk.drift)
    }

    /// One live record of the discovery set: what it implies must be there.
    async fn visit(
        &self,
        walk: &mut Walk,
        key: &str,
        bytes: Vec<u8>,
        receipt: Option<StoredReceipt>,
    ) -> Result<()> {
        let store = self.store();
        let facts = match read_record::<E>(key, &bytes) {
            Ok((_, facts)) => facts,
            Err(e) => {
                walk.drift.undecodable.push(Skipped::new(key, e));
                return Ok(());
            }
        };
        walk.drift.records += 1;
        walk.count(&facts);
        if Self::expiring() && !self.receipt_holds(key, &facts, receipt.as_ref()).await? {
            walk.drift.receipts.push(key.to_owned());
            if walk.repair {
                self.rewrite_receipt(key, &bytes, receipt.as_ref(), &facts)
                    .await?;
            }
        }
        // `want`: the entries the record implies, less claims another
        // record holds (reported, never taken); `have`: those found.
        let mut want = facts;
        want.counters.clear();
        let claim_keys: Vec<String> = want.claims.iter().map(|c| c.key.clone()).collect();
        let holders = store.get_many(&claim_keys).await?;
        let mut have = Facts::default();
        let mut kept = Vec::with_capacity(want.claims.len());
        for (c, holder) in want.claims.drain(..).zip(holders) {
            match holder {
                Some(holder) if holder == key.as_bytes() => {
                    have.claims.push(c.clone());
                    kept.push(c);
                }
                Some(holder) => walk.drift.conflicting_claims.push((
                    c.key,
                    key.to_owned(),
                    String::from_utf8_lossy(&holder).into_owned(),
                )),
                None => {
                    walk.drift
                        .missing_claims
                        .push((c.key.clone(), key.to_owned()));
                    kept.push(c);
                }
            }
        }
        want.claims = kept;
        for m in &want.members {
            if is_member(store, &m.collection, &m.sort, key.as_bytes()).await? {
                have.members.push(m.clone());
            } else {
                walk.drift
                    .missing_members
                    .push((m.collection.clone(), key.to_owned()));
            }
        }
        let missing =
            have.claims.len() < want.claims.len() || have.members.len() < want.members.len();
        if walk.repair && missing {
            self.repair(key, bytes, &have, &want).await?;
        }
        Ok(())
    }

    /// A discovery member whose record is gone: an expired write awaiting
    /// the sweep (its receipt remains), or an orphan.
    async fn visit_gone(
        &self,
        walk: &mut Walk,
        key: &str,
        receipt: Option<StoredReceipt>,
    ) -> Result<()> {
        match receipt {
            Some(StoredReceipt {
                receipt: Err(e), ..
            }) => walk.drift.undecodable.push(Skipped::new(key, e)),
            Some(StoredReceipt {
                receipt: Ok(r),
                bytes,
            }) => self.pending(walk, key, &bytes, &r).await?,
            None => {
                walk.drift
                    .orphan_members
                    .push((E::all_key(), key.to_owned()));
                if walk.repair {
                    let mut b = Batch::new();
                    b.absent(key);
                    if Self::expiring() {
                        b.absent(E::receipt_key(key));
                    }
                    b.remove(E::all_key(), Vec::new(), key.as_bytes().to_vec());
                    let _ = self.commit(b).await?;
                }
            }
        }
        Ok(())
    }

    /// An expired write whose receipt remains: `verify` counts what it
    /// still contributes, `reconcile` sweeps it.
    pub(crate) async fn pending(
        &self,
        walk: &mut Walk,
        key: &str,
        bytes: &[u8],
        r: &Receipt,
    ) -> Result<()> {
        if !walk.pending.insert(key.to_owned()) {
            return Ok(());
        }
        if walk.repair && self.expire_receipt(key, bytes, r).await? {
            return Ok(());
        }
        walk.drift.expired += 1;
        walk.count(&r.facts);
        Ok(())
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
        Ok(r.facts.same_entries(facts)
            && is_member(self.store(), &E::ledger_key(), &due(r.at), key.as_bytes()).await?)
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
        let now = self.store().now_ms().await?;
        let left = match self.store().time_to_live(key).await? {
            Some(d) => d,
            None => match E::META.ttl {
                Some(t) => t.sample(),
                None => return Ok(()),
            },
        };
        let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        let receipt = Receipt::new(now.saturating_add(ms), facts);
        let mut b = Batch::new();
        b.equals(key, bytes.to_vec());
        move_receipt::<E>(&mut b, key, old, Some(&receipt))?;
        let _ = self.commit(b).await?;
        Ok(())
    }

    /// Compares every counter the walk met with what the records add up
    /// to, and with `repair` adjusts it (deleting one that should be 0).
    async fn settle_counters(&self, walk: &mut Walk) -> Result<()> {
        let store = self.store();
        for (key, want) in std::mem::take(&mut walk.expected) {
            let actual = match store.counter(&key).await {
                Ok(v) => v,
                Err(e @ Error::NotACounter { .. }) => {
                    walk.drift.undecodable.push(Skipped::new(key, e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            if want == i128::from(actual) {
                continue;
            }
            // A sum no counter can hold is reported, not repaired.
            if walk.repair && i64::try_from(want).is_ok() {
                let mut b = Batch::new();
                if want == 0 {
                    b.equals(&key, actual.to_string().into_bytes()).delete(&key);
                } else {
                    b.incr_wide(&key, want - i128::from(actual));
                }
                let _ = self.commit(b).await?;
            }
            walk.drift.counters.push(CounterDrift {
                key,
                expected: want,
                actual,
            });
        }
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
    async fn repair(&self, key: &str, bytes: Vec<u8>, have: &Facts, want: &Facts) -> Result<()> {
        let ttl = match E::META.ttl {
            Some(t) => Some(
                self.store()
                    .time_to_live(key)
                    .await?
                    .unwrap_or_else(|| t.sample()),
            ),
            None => None,
        };
        let mut fix = Batch::new();
        fix.equals(key, bytes);
        transition::<E>(
            &mut fix,
            key,
            Some(have),
            Some(want),
            ttl,
            ReceiptMove::Untouched,
        )?;
        let _ = self.commit(fix).await?;
        Ok(())
    }
}

/// Whether `member` is in the collection under `sort`: one descending step
/// from just past its position, so the check costs one short range read
/// however large the collection is.
pub(crate) async fn is_member<S: Store>(
    store: &S,
    collection: &str,
    sort: &[u8],
    member: &[u8],
) -> Result<bool> {
    let mut past = encode_entry(sort, member);
    past.push(0);
    let req = RangeRequest {
        direction: Direction::Descending,
        after: Some(past),
        ..RangeRequest::all(1)
    };
    let found = store.range(collection, req).await?;
    Ok(found
        .members
        .first()
        .is_some_and(|m| m.sort == sort && m.member == member))
}
