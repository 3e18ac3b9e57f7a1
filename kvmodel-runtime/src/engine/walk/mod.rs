//! The `verify` and `reconcile` walk, written once over an [`EntityDef`]:
//! generated repositories and the `kvmodel` command run the same code.
//!
//! A walk looks both ways. Inwards, from every derived key of the entity,
//! which it enumerates with the store's maintenance-only [`Store::scan`]
//! (its `inward` module): what is there must be implied by a record. Then
//! outwards, from every record in the discovery set (never a key scan):
//! what each record implies must be there (its claims, its collection
//! members, its receipt), and its counter amounts are added up. Last,
//! every counter met either way is compared with what the records add up
//! to.
//!
//! A walk moves in steps of one page, and its [`WalkState`] can be saved
//! between steps (it is serializable) and resumed later, by another
//! process: a step either completes or leaves the state as it was.
//!
//! # Beside live writers
//!
//! Every write moves a counter and the records it counts together, in one
//! commit, so a counter's drift (what it holds less what its records add up
//! to) is the same before and after any write: a walk only has to measure
//! it once, exactly, to repair it by that amount at any later time. What it
//! must not do is add up records read at one moment and compare them with
//! a counter read at another. So a walk measures on one of two bases
//! ([`Basis`]):
//!
//! - a **view**: a store that can show one instant ([`Store::snapshot`]:
//!   memory, redb) is read through that view from the first record to the
//!   last counter, and the measured drift is exact whatever writers do
//!   meanwhile;
//! - **stamps**: a store that cannot (Redis, Redis Cluster) raises a
//!   counter's change stamp in every commit that moves it
//!   ([`Store::change_stamps`]). The walk reads the stamps of every counter
//!   before its first record, and judges a counter only when its stamps
//!   have not moved by the time its value is read: then no write touched
//!   it, and the sum of its records is exact. The repair is conditional on
//!   the stamps still being those. A counter that moved is reported
//!   unsettled ([`Unjudged::Moved`]), never guessed; the next walk judges
//!   it.
//!
//! Claims and members are judged from the same reads, and every repair of
//! theirs is conditional on the record it was judged from being unchanged,
//! so a writer that came in between wins. On a store without a view, a
//! suspect entry is read again before it is reported, so `verify` does not
//! report a write in flight.
//!
//! # Records it cannot read
//!
//! A record at a newer version than the walking schema knows, or one that
//! does not decode, is reported ([`Drift::undecodable`]) and never judged:
//! its claims and members are left alone, and since what it counts is
//! unknown, no counter of the entity is repaired or removed while such a
//! record exists ([`Unjudged::Unreadable`]): maintenance run with an older
//! schema during a rolling deploy changes nothing it cannot judge.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use serde::{Deserialize, Serialize};

use crate::codec::key::Derived;
use crate::engine::def::EntityDef;
use crate::engine::entity::{Facts, MemberFact};
use crate::engine::expiry::{Receipt, StoredReceipt, due, expire_receipt_in, move_receipt_in};
pub use crate::engine::maintenance::Drift;
use crate::engine::maintenance::{CounterDrift, Unjudged, Unsettled, is_member};
use crate::engine::shards;
use crate::engine::skipped::Skipped;
use crate::engine::transition::{ReceiptMove, Upkeep, transition};
use crate::error::{Error, Result};
use crate::store::batch::{Batch, Outcome};
use crate::store::counter::{read_counter, stamp_key};
use crate::store::{RangeRequest, Store, encode_entry};

pub(crate) mod inward;
pub(crate) mod links;
pub(crate) mod wide;

/// Where a walk is. The phases run in the order declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Inwards from the entity's derived keys.
    #[default]
    Derived,
    /// Outwards from the records of the discovery set.
    Records,
    /// Comparing counters with what the records add up to.
    Counters,
    /// Finished.
    Done,
}

/// How a walk measures counters beside live writers (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Not chosen yet: the walk's first step chooses.
    #[default]
    Unchosen,
    /// Records and counters are read through one view of the store.
    View,
    /// Counters are judged by their change stamps.
    Stamps,
    /// The store offers neither: counters that differ are unsettled.
    Neither,
}

/// Views taken so far, to tell one from another.
static VIEWS: AtomicU64 = AtomicU64::new(1);

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
    /// How counters are measured.
    #[serde(default)]
    basis: Basis,
    /// Stamp key → the stamp read before the first record (on
    /// [`Basis::Stamps`]).
    #[serde(default)]
    stamps: BTreeMap<String, u64>,
    /// Records whose counter amounts are unknown (they could not be read):
    /// no counter is judged while there is one.
    #[serde(default)]
    unreadable: u64,
    /// Records whose expired write the inward phase found by its receipt,
    /// counted once the stamps are read (on [`Basis::Stamps`]).
    #[serde(default)]
    deferred: BTreeSet<String>,
    /// Whether the records were not all read through one view (a walk
    /// resumed by another walker, on [`Basis::View`]): its counters are
    /// added up again before they are judged.
    #[serde(default)]
    mixed: bool,
    /// The view the records were read through (not saved: a view lives in
    /// one walker).
    #[serde(skip)]
    view: u64,
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
    /// Where repairs are committed (and, without a view, what is read).
    pub(crate) store: &'a S,
    /// The view this walker reads through, and its number: taken by the
    /// first step of a walk on [`Basis::View`].
    view: RwLock<Option<Arc<(u64, S)>>>,
}

/// What a walk reads: the store, or the walker's view of it.
pub(crate) enum Reader<'a, S> {
    Store(&'a S),
    View(Arc<(u64, S)>),
}

impl<S> Deref for Reader<'_, S> {
    type Target = S;

    fn deref(&self) -> &S {
        match self {
            Reader::Store(s) => s,
            Reader::View(v) => &v.1,
        }
    }
}

impl<'a, D: EntityDef, S: Store> Walker<'a, D, S> {
    /// A walker of `def`'s records on `store`.
    pub fn new(def: &'a D, store: &'a S) -> Self {
        Walker {
            def,
            store,
            view: RwLock::new(None),
        }
    }

    /// The view, if the walker has one.
    fn view(&self) -> Option<Arc<(u64, S)>> {
        self.view
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the walk reads: its view of the store, or the store itself.
    pub(crate) fn reader(&self) -> Reader<'_, S> {
        match self.view() {
            Some(v) => Reader::View(v),
            None => Reader::Store(self.store),
        }
    }

    /// Chooses how the walk measures counters, and takes this walker's view
    /// on [`Basis::View`] if it has none yet.
    async fn prepare(&self, state: &mut WalkState) -> Result<()> {
        // A walk from its start takes a view of its own (a walker may run
        // several walks); a resumed one keeps the walker's, if it has one.
        let fresh = state.phase == Phase::Derived
            && state.cursor.is_none()
            && state.examined == 0
            && state.view == 0;
        let renew = state.basis == Basis::View && (fresh || self.view().is_none());
        if state.basis != Basis::Unchosen && !renew {
            return Ok(());
        }
        // The view a store gives, if any, is also what chooses the basis:
        // one snapshot, not one to ask and another to read.
        match self.store.snapshot().await? {
            Some(view) => {
                state.basis = Basis::View;
                let id = VIEWS.fetch_add(1, Ordering::Relaxed);
                *self.view.write().unwrap_or_else(PoisonError::into_inner) =
                    Some(Arc::new((id, view)));
            }
            None if state.basis == Basis::Unchosen => {
                state.basis = if self.store.change_stamps(&[]).await?.is_some() {
                    Basis::Stamps
                } else {
                    Basis::Neither
                };
            }
            None => {}
        }
        Ok(())
    }

    /// The number of this walker's view (0: none).
    fn view_id(&self) -> u64 {
        self.view().map_or(0, |v| v.0)
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
        self.prepare(state).await?;
        if state.basis == Basis::View {
            // Everything the counters are judged from must be read through
            // one view; a walk resumed by another walker was not.
            let fresh = state.phase == Phase::Derived && state.cursor.is_none();
            if fresh && state.examined == 0 && state.view == 0 {
                state.view = self.view_id();
            }
            if state.view != self.view_id() {
                state.mixed = true;
            }
        }
        match state.phase {
            Phase::Records => self.records(state, page).await,
            Phase::Derived => self.derived(state, page).await,
            Phase::Counters => self.counters(state, page).await,
            Phase::Done => Ok(()),
        }
    }

    /// The record keys of one page of at most `page` records after
    /// `cursor` (of the discovery set, or of the record keys' range:
    /// [`Records`]), and the cursor of the next page (`None` after the
    /// last): what every walk over all records reads.
    pub(crate) async fn discovery_page(
        &self,
        cursor: Option<Vec<u8>>,
        page: usize,
    ) -> Result<(Vec<String>, Option<Vec<u8>>)> {
        let reader = self.reader();
        self.def
            .records(&*reader)
            .keys(&*reader, cursor, page)
            .await
    }

    /// A page of the records.
    async fn records(&self, state: &mut WalkState, page: usize) -> Result<()> {
        let (keys, next) = self.discovery_page(state.cursor.clone(), page).await?;
        let (values, receipts) = self.read_records(&keys).await?;
        for ((key, bytes), receipt) in keys.iter().zip(values).zip(receipts) {
            state.visited += 1;
            match bytes {
                Some(bytes) => self.visit(state, key, bytes, receipt).await?,
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
                state.unreadable += 1;
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
        if sweep && expire_receipt_in(self.store, self.def.space(), key, bytes, r).await? {
            return Ok(());
        }
        state.drift.expired += 1;
        Ok(())
    }

    /// Counts the amounts an expiry receipt lists in the counters this
    /// schema declares (and link counts): a receipt lists what its writer
    /// declared, which may be another version's counters.
    fn count_receipt(&self, state: &mut WalkState, facts: &Facts) {
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
        transition(
            Upkeep::on(self.def.space(), self.store),
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
    /// and, repairing, adjusted by the difference — only where the walk's
    /// basis proves its measurement exact (see the module docs); the others
    /// are reported unsettled.
    async fn counters(&self, state: &mut WalkState, page: usize) -> Result<()> {
        if state.basis == Basis::View && state.mixed {
            self.recount(state).await?;
        }
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
        // On stamps, read them before the sizes and values too: a counter
        // in the middle of a write (a held lock on a cluster) or moved
        // between the two reads is not judged.
        let early = match state.basis {
            Basis::Stamps => Some(self.stamps_now(state, &flat).await?),
            _ => None,
        };
        // Link counts are measured against their collections' sizes, read
        // before the counters (and, on stamps, before the stamps).
        let mut sizes = Vec::with_capacity(keys.len());
        for key in &keys {
            sizes.push(match crate::engine::links::collection_of_count(key) {
                Some(c) => Some(i128::from(self.reader().collection_len(&c).await?)),
                None => None,
            });
        }
        let mut values = self.reader().get_many(&flat).await?.into_iter();
        let mut stamps = self.stamps_now(state, &flat).await?;
        if let Some(early) = early {
            for (now, before) in stamps.iter_mut().zip(early) {
                if *now != before {
                    *now = u64::MAX;
                }
            }
        }
        let mut stamps = stamps.into_iter();
        for (((key, want), shard_keys), size) in batch.iter().zip(&shard_keys).zip(sizes) {
            let want = size.unwrap_or(*want);
            let stamps: Vec<(String, u64)> = shard_keys
                .iter()
                .map(|k| stamp_key(k))
                .zip(stamps.by_ref())
                .collect();
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
                continue;
            }
            let total = shards::total(&held);
            // A total no read can return is drift even when the records
            // add up to it.
            let readable = i64::try_from(total).is_ok();
            if want == total && readable {
                continue;
            }
            let present: Vec<bool> = shard_keys
                .iter()
                .map(|k| held.iter().any(|(h, _)| h == k))
                .collect();
            if let Some(why) = self.unjudged(state, &stamps, &present) {
                state.drift.unsettled.push(Unsettled {
                    key: key.clone(),
                    why,
                });
                continue;
            }
            // A sum no counter can hold is reported, not repaired.
            if state.repair && i64::try_from(want).is_ok() {
                let done = self
                    .repair_counter(state, shard_keys, (want, total), &held, &stamps)
                    .await?;
                if !done.is_applied() {
                    // Something moved it after the measurement.
                    state.drift.unsettled.push(Unsettled {
                        key: key.clone(),
                        why: Unjudged::Moved,
                    });
                    continue;
                }
            }
            let actual =
                i64::try_from(total).unwrap_or(if total < 0 { i64::MIN } else { i64::MAX });
            state.drift.counters.push(CounterDrift {
                key: key.clone(),
                expected: want,
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
                state.stamps.clear();
                state.drift.tidy();
            }
        }
        Ok(())
    }

    /// Adds up the counter amounts of every record again, through this
    /// walker's view: what a walk resumed by another walker (whose records
    /// were read through other views) does before it judges counters, so
    /// that they are judged at one instant. Only counting: what the records
    /// imply otherwise was judged as they were walked.
    async fn recount(&self, state: &mut WalkState) -> Result<()> {
        for total in state.expected.values_mut() {
            *total = 0;
        }
        state.unreadable = 0;
        let mut cursor = None;
        loop {
            let (keys, next) = self.discovery_page(cursor, 500).await?;
            let (values, receipts) = self.read_records(&keys).await?;
            for ((key, bytes), receipt) in keys.iter().zip(values).zip(receipts) {
                let facts = match (bytes, receipt) {
                    (Some(bytes), _) => match self.def.stored_facts(key, &bytes) {
                        Ok((_, facts)) => facts,
                        Err(e) if about_the_record(&e) => {
                            state.unreadable += 1;
                            continue;
                        }
                        Err(e) => return Err(e),
                    },
                    (None, Some(StoredReceipt { receipt: Ok(r), .. })) => {
                        self.count_receipt(state, &r.facts);
                        continue;
                    }
                    (
                        None,
                        Some(StoredReceipt {
                            receipt: Err(_), ..
                        }),
                    ) => {
                        state.unreadable += 1;
                        continue;
                    }
                    (None, None) => continue,
                };
                state.count(&facts);
            }
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        state.view = self.view_id();
        state.mixed = false;
        Ok(())
    }

    /// On [`Basis::Stamps`], reads the stamps of every shard of every
    /// counter met so far: after the inward phase (whose repairs move
    /// counters: a link entry removed with its count) and before the first
    /// record.
    pub(crate) async fn read_stamps(&self, state: &mut WalkState) -> Result<()> {
        if state.basis != Basis::Stamps {
            return Ok(());
        }
        let shards: Vec<String> = state
            .expected
            .keys()
            .flat_map(|k| shards::keys(k, shards::shards_of(self.def, k)))
            .collect();
        for page in shards.chunks(1_000) {
            if let Some(stamps) = self.store.change_stamps(page).await? {
                for (shard, stamp) in page.iter().zip(stamps) {
                    state.stamps.insert(stamp_key(shard), stamp);
                }
            }
        }
        Ok(())
    }

    /// The stamps of the counter shards at `keys` as they are now: on
    /// [`Basis::Stamps`] the store's change stamps (read after the values);
    /// on a view, the stamps earlier repairs left (read through the view);
    /// otherwise zeros.
    async fn stamps_now(&self, state: &WalkState, keys: &[String]) -> Result<Vec<u64>> {
        let stamps = match state.basis {
            Basis::Stamps => self.store.change_stamps(keys).await?,
            Basis::View => {
                let stamp_keys: Vec<String> = keys.iter().map(|k| stamp_key(k)).collect();
                let values = self.reader().get_many(&stamp_keys).await?;
                Some(crate::store::counter::stamps_of(values))
            }
            _ => None,
        };
        Ok(stamps.unwrap_or_else(|| vec![0; keys.len()]))
    }

    /// Why a counter that differs from its records cannot be judged, if it
    /// cannot: `stamps` are its shards' stamps now, `present` whether each
    /// shard holds a value.
    fn unjudged(
        &self,
        state: &WalkState,
        stamps: &[(String, u64)],
        present: &[bool],
    ) -> Option<Unjudged> {
        if state.unreadable > 0 {
            return Some(Unjudged::Unreadable);
        }
        match state.basis {
            Basis::View => None,
            Basis::Stamps => {
                // A stamp not read before the records was of a shard that
                // did not exist then: one that still does not was moved by
                // no write (a write would have made it).
                let moved = stamps.iter().zip(present).any(|((k, now), present)| {
                    *now == u64::MAX
                        || match state.stamps.get(k) {
                            Some(before) => before != now,
                            None => *present,
                        }
                });
                moved.then_some(Unjudged::Moved)
            }
            Basis::Neither | Basis::Unchosen => Some(Unjudged::Unmeasurable),
        }
    }

    /// Moves the counter whose shards are `shards` (of which `held` hold
    /// values) from `total` to `want`, conditional on its shards' stamps
    /// being `stamps` still: a concurrent repair (or, on stamps, a write) in
    /// between fails it, and the next walk measures again. A counter no
    /// record counts in is deleted, if it still holds what was measured; a
    /// sharded one is spread evenly over its shards, so that each stays
    /// within its share. On a view the repair raises the stamps itself (on
    /// stamps the store does).
    async fn repair_counter(
        &self,
        state: &WalkState,
        shards: &[String],
        (want, total): (i128, i128),
        held: &[(String, i64)],
        stamps: &[(String, u64)],
    ) -> Result<Outcome> {
        let mut b = Batch::new();
        for (stamp, n) in stamps {
            match n {
                0 => b.absent(stamp),
                n => b.equals(stamp, n.to_string().into_bytes()),
            };
        }
        if want == 0 {
            for (shard, v) in held {
                b.equals(shard, v.to_string().into_bytes()).delete(shard);
                if state.basis == Basis::View {
                    b.incr(stamp_key(shard), 1);
                }
            }
            return commit(self.store, b).await;
        }
        if state.basis == Basis::View {
            // A shard the view holds that a writer deleted since (a link
            // count goes with its record) took its drift with it.
            for (shard, _) in held {
                b.present(shard);
            }
        }
        if let [key] = shards {
            b.incr_wide(key, want - total);
            if state.basis == Basis::View {
                b.incr(stamp_key(key), 1);
            }
        } else {
            let n = i128::try_from(shards.len()).unwrap_or(1).max(1);
            for (i, shard) in shards.iter().enumerate() {
                let target = want / n + if i == 0 { want % n } else { 0 };
                let now = held
                    .iter()
                    .find(|(k, _)| k == shard)
                    .map_or(0, |(_, v)| i128::from(*v));
                if target != now {
                    b.incr_wide(shard, target - now);
                    if state.basis == Basis::View {
                        b.incr(stamp_key(shard), 1);
                    }
                }
            }
        }
        commit(self.store, b).await
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
