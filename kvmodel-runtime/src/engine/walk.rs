//! The `verify` and `reconcile` walk, written once over an [`EntityDef`]:
//! generated repositories and the `kvmodel` command run the same code.
//!
//! A walk looks both ways. Outwards, from every record in the discovery set
//! (never a key scan): what each record implies must be there (its claims,
//! its collection members, its receipt), and its counter amounts are added
//! up. Inwards, from every derived key of the entity, which it enumerates
//! with the store's maintenance-only [`Store::scan`] (its `inward` module): what
//! is there must be implied by a record. Last, every counter met either way
//! is compared with what the records add up to.
//!
//! A walk moves in steps of one page, and its [`WalkState`] can be saved
//! between steps (it is serializable) and resumed later, by another
//! process: a step either completes or leaves the state as it was.
//! `reconcile` adjusts counters by the difference it measured, so run it
//! while writers are paused, or run `verify` again afterwards to confirm.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::engine::def::EntityDef;
use crate::engine::entity::{Facts, MemberFact};
use crate::engine::expiry::{Receipt, StoredReceipt, due, expire_receipt_in, move_receipt_in};
pub use crate::engine::maintenance::Drift;
use crate::engine::maintenance::{CounterDrift, is_member};
use crate::engine::repo::{ReceiptMove, transition_in};
use crate::engine::shards;
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};
use crate::store::counter::read_counter;
use crate::store::{RangeRequest, Store, encode_entry};

pub(crate) mod inward;
pub(crate) mod links;
pub(crate) mod wide;

/// Where a walk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Outwards from the records of the discovery set.
    #[default]
    Records,
    /// Inwards from the entity's derived keys.
    Derived,
    /// Comparing counters with what the records add up to.
    Counters,
    /// Finished.
    Done,
}

/// A walk in progress: where it is and what it found so far. Save it
/// between steps to resume the walk later.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WalkState {
    /// Whether the walk repairs (`reconcile`) or only reports (`verify`).
    pub repair: bool,
    /// The phase it is in.
    pub phase: Phase,
    /// Discovery members visited (records, and members whose record is gone).
    pub visited: u64,
    /// Derived keys examined in the inward phase.
    pub examined: u64,
    /// What it found (and, repairing, repaired).
    pub drift: Drift,
    /// Where the current phase resumes.
    #[serde(with = "wide::hex")]
    cursor: Option<Vec<u8>>,
    /// Counter key → what the records (and expired writes awaiting the
    /// sweep) add up to.
    #[serde(with = "wide::totals")]
    expected: BTreeMap<String, i128>,
    /// Record keys whose expired write was counted in `expected` already.
    pending: BTreeSet<String>,
}

impl WalkState {
    /// A walk from the start: `repair` for `reconcile`.
    pub fn new(repair: bool) -> Self {
        WalkState {
            repair,
            ..WalkState::default()
        }
    }

    /// Whether the walk is finished.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Counts the counter amounts of `facts`.
    pub(crate) fn count(&mut self, facts: &Facts) {
        for c in &facts.counters {
            *self.expected.entry(c.key.clone()).or_default() += c.delta;
        }
    }
}

/// Commits `batch` to `store`, traced as the engine's own commits are:
/// every commit of maintenance goes through here.
pub(crate) async fn commit<S: Store>(store: &S, batch: Batch) -> Result<Outcome> {
    #[cfg(feature = "tracing")]
    let summary = crate::engine::trace::CommitSummary::of(&batch);
    let outcome = store.commit(batch).await;
    #[cfg(feature = "tracing")]
    if let Some(summary) = summary {
        summary.record(store.backend(), &outcome);
    }
    outcome
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

/// Runs walks of the entity `def` on `store`.
#[derive(Debug)]
pub struct Walker<'a, D, S> {
    pub(crate) def: &'a D,
    pub(crate) store: &'a S,
}

impl<'a, D: EntityDef, S: Store> Walker<'a, D, S> {
    /// A walker of `def`'s records on `store`.
    pub fn new(def: &'a D, store: &'a S) -> Self {
        Walker { def, store }
    }

    /// A whole walk, `page` records or keys at a time; `reconcile` first
    /// sweeps expired records.
    pub async fn run(&self, repair: bool, page: usize) -> Result<Drift> {
        let mut state = WalkState::new(repair);
        self.start(&mut state).await?;
        while !state.is_done() {
            self.step(&mut state, page).await?;
        }
        Ok(state.drift)
    }

    /// What comes before the first step: `reconcile` has the store finish
    /// or undo writes left half done ([`Store::recover`]), then sweeps every
    /// expired record, so what remains is live; both note the writes still
    /// unfinished ([`Store::unfinished_writes`]).
    pub async fn start(&self, state: &mut WalkState) -> Result<()> {
        if state.repair {
            self.store.recover().await?;
        }
        state.drift.unfinished = self.store.unfinished_writes().await?;
        if state.repair && self.def.expiring() {
            loop {
                let sweep =
                    crate::engine::expiry::sweep_in(self.store, self.def.space(), 10_000).await?;
                if !sweep.more {
                    break;
                }
            }
        }
        Ok(())
    }

    /// One step: a page of `page` records, derived keys or counters.
    pub async fn step(&self, state: &mut WalkState, page: usize) -> Result<()> {
        let page = page.max(1);
        match state.phase {
            Phase::Records => self.records(state, page).await,
            Phase::Derived => self.derived(state, page).await,
            Phase::Counters => self.counters(state, page).await,
            Phase::Done => Ok(()),
        }
    }

    /// The record keys of one page of at most `page` members of the
    /// discovery set after `cursor`, and the cursor of the next page
    /// (`None` after the last): what every walk over all records reads.
    pub(crate) async fn discovery_page(
        &self,
        cursor: Option<Vec<u8>>,
        page: usize,
    ) -> Result<(Vec<String>, Option<Vec<u8>>)> {
        let mut req = RangeRequest::all(page.max(1));
        req.after = cursor;
        let range = self.store.range(&self.def.space().all_key(), req).await?;
        let keys = range
            .members
            .iter()
            .map(|m| String::from_utf8_lossy(&m.member).into_owned())
            .collect();
        Ok((keys, range.next))
    }

    /// A page of the discovery set.
    async fn records(&self, state: &mut WalkState, page: usize) -> Result<()> {
        let space = self.def.space();
        let (keys, next) = self.discovery_page(state.cursor.clone(), page).await?;
        let mut reads = keys.clone();
        if self.def.expiring() {
            reads.extend(keys.iter().map(|k| space.receipt_key(k)));
        }
        let mut values = self.store.get_many(&reads).await?;
        let mut receipts = values.split_off(keys.len()).into_iter();
        for (key, bytes) in keys.iter().zip(values) {
            let receipt = receipts
                .next()
                .flatten()
                .map(|b| StoredReceipt::new(&space.receipt_key(key), b));
            state.visited += 1;
            match bytes {
                Some(bytes) => self.visit(state, key, bytes, receipt).await?,
                None => self.visit_gone(state, key, receipt).await?,
            }
        }
        match next {
            Some(n) => state.cursor = Some(n),
            None => {
                state.phase = Phase::Derived;
                state.cursor = None;
            }
        }
        Ok(())
    }

    /// One live record of the discovery set: what it implies must be there.
    async fn visit(
        &self,
        state: &mut WalkState,
        key: &str,
        bytes: Vec<u8>,
        receipt: Option<StoredReceipt>,
    ) -> Result<()> {
        let facts = match self.def.stored_facts(key, &bytes) {
            Ok((_, facts)) => facts,
            Err(e) if about_the_record(&e) => {
                state.drift.undecodable.push(Skipped::new(key, e));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        state.drift.records += 1;
        state.count(&facts);
        if self.def.expiring() && !self.receipt_holds(key, &facts, receipt.as_ref()).await? {
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
        let holders = self.store.get_many(&claim_keys).await?;
        let mut have = Facts::default();
        let mut kept = Vec::with_capacity(want.claims.len());
        for (c, holder) in want.claims.drain(..).zip(holders) {
            match holder {
                Some(holder) if holder == key.as_bytes() => {
                    have.claims.push(c.clone());
                    kept.push(c);
                }
                Some(holder) => state.drift.conflicting_claims.push((
                    c.key,
                    key.to_owned(),
                    String::from_utf8_lossy(&holder).into_owned(),
                )),
                None => {
                    state
                        .drift
                        .missing_claims
                        .push((c.key.clone(), key.to_owned()));
                    kept.push(c);
                }
            }
        }
        want.claims = kept;
        for m in &want.members {
            if is_member(self.store, &m.collection, &m.sort, key.as_bytes()).await? {
                have.members.push(m.clone());
            } else if trimmed(self.store, m, key.as_bytes()).await? {
                // Trimmed from a capped collection: not drift.
                have.members.push(m.clone());
            } else {
                state
                    .drift
                    .missing_members
                    .push((m.collection.clone(), key.to_owned()));
            }
        }
        let missing =
            have.claims.len() < want.claims.len() || have.members.len() < want.members.len();
        if state.repair && missing {
            self.repair(key, bytes, &have, &want).await?;
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
            }) => state.drift.undecodable.push(Skipped::new(key, e)),
            Some(StoredReceipt {
                receipt: Ok(r),
                bytes,
            }) => self.pending(state, key, &bytes, &r).await?,
            None => {
                state
                    .drift
                    .orphan_members
                    .push((space.all_key(), key.to_owned()));
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
        if state.repair && expire_receipt_in(self.store, self.def.space(), key, bytes, r).await? {
            return Ok(());
        }
        state.drift.expired += 1;
        state.count(&r.facts);
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
        let ledger = self.def.space().ledger_key();
        Ok(r.facts.same_entries(facts)
            && is_member(self.store, &ledger, &due(r.at), key.as_bytes()).await?)
    }

    /// The remaining lifetime of the expiring record at `key`, or a fresh
    /// sample of the entity's TTL when the store cannot tell; `None` for a
    /// record that does not expire.
    pub(crate) async fn lifetime(&self, key: &str) -> Result<Option<std::time::Duration>> {
        match self.def.ttl() {
            Some(t) => Ok(Some(
                self.store
                    .time_to_live(key)
                    .await?
                    .unwrap_or_else(|| t.sample()),
            )),
            None => Ok(None),
        }
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
        let Some(left) = self.lifetime(key).await? else {
            return Ok(());
        };
        let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        let receipt = Receipt::new(now.saturating_add(ms), facts);
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
    async fn repair(&self, key: &str, bytes: Vec<u8>, have: &Facts, want: &Facts) -> Result<()> {
        let ttl = self.lifetime(key).await?;
        let mut fix = Batch::new();
        fix.equals(key, bytes);
        transition_in(
            self.def.space(),
            &mut fix,
            key,
            Some(have),
            Some(want),
            ttl,
            ReceiptMove::Untouched,
        )?;
        let _ = commit(self.store, fix).await?;
        Ok(())
    }

    /// A page of counters: each compared with what the records add up to
    /// and, repairing, adjusted (deleted when it should be 0).
    async fn counters(&self, state: &mut WalkState, page: usize) -> Result<()> {
        let after = state
            .cursor
            .as_deref()
            .map(|c| String::from_utf8_lossy(c).into_owned());
        let batch: Vec<(String, i128)> = state
            .expected
            .iter()
            .filter(|(k, _)| after.as_ref().is_none_or(|a| k.as_str() > a.as_str()))
            .take(page)
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let keys: Vec<String> = batch.iter().map(|(k, _)| k.clone()).collect();
        // Every shard of every counter of the page, in one read: a sharded
        // counter is its shards together.
        let shard_keys: Vec<Vec<String>> = keys
            .iter()
            .map(|k| shards::keys(k, shards::shards_of(self.def, k)))
            .collect();
        let flat: Vec<String> = shard_keys.iter().flatten().cloned().collect();
        let mut values = self.store.get_many(&flat).await?.into_iter();
        'counter: for ((key, want), shard_keys) in batch.iter().zip(&shard_keys) {
            // A link count must equal its collection's size, as it is now
            // (after the repairs of this walk).
            let want = &match crate::engine::links::collection_of_count(key) {
                Some(collection) => i128::from(self.store.collection_len(&collection).await?),
                None => *want,
            };
            // The shards that hold a value, and their sum.
            let mut held = Vec::new();
            let mut bad = None;
            for (shard, bytes) in shard_keys.iter().zip(values.by_ref()) {
                let Some(bytes) = bytes else { continue };
                match read_counter(shard, &bytes) {
                    Ok(v) => held.push((shard.clone(), v)),
                    Err(e @ Error::NotACounter { .. }) => bad = bad.or(Some((shard.clone(), e))),
                    Err(e) => return Err(e),
                }
            }
            if let Some((shard, e)) = bad {
                state.drift.undecodable.push(Skipped::new(shard, e));
                continue 'counter;
            }
            let total = shards::total(&held);
            if *want == total {
                continue;
            }
            // A sum no counter can hold is reported, not repaired.
            if state.repair && i64::try_from(*want).is_ok() {
                let mut b = Batch::new();
                if *want == 0 {
                    for (shard, v) in &held {
                        b.equals(shard, v.to_string().into_bytes()).delete(shard);
                    }
                } else {
                    b.incr_wide(key, want - total);
                }
                let _ = commit(self.store, b).await?;
            }
            let actual =
                i64::try_from(total).unwrap_or(if total < 0 { i64::MIN } else { i64::MAX });
            state.drift.counters.push(CounterDrift {
                key: key.clone(),
                expected: *want,
                actual,
            });
        }
        match keys.last() {
            Some(last) if keys.len() == page => state.cursor = Some(last.as_bytes().to_vec()),
            _ => {
                state.phase = Phase::Done;
                state.cursor = None;
                state.expected.clear();
                state.pending.clear();
                state.drift.tidy();
            }
        }
        Ok(())
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
