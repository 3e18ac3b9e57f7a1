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
//!   unsettled ([`Unjudged::Moved`](crate::engine::report::Unjudged::Moved)), never guessed; the next walk judges
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
//! record exists ([`Unjudged::Unreadable`](crate::engine::report::Unjudged::Unreadable)): maintenance run with an older
//! schema during a rolling deploy changes nothing it cannot judge.
//!
//! # Records behind the index state
//!
//! A record stored at a version older than an index, relation or counter
//! the entity's [index state](crate::engine::state) already makes readable
//! lacks that entry (an older writer wrote it after the state was
//! established), so reads of it miss the record. Its entries are judged at
//! its own version, and it is reported ([`Drift::behind`]). A repair
//! leaves it to `migrate`, which rewrites it at the current version and
//! backfills it: rewriting it here would move the counters the walk is
//! measuring, and writing only its new entries would leave it at its old
//! version, so its next update, which computes the entries it had at that
//! version (without them), would add them again: counted twice.
//!
//! Layer: maintenance (the top layer): above the roles (it sweeps through
//! [`expiry`](crate::engine::expiry)); its reports are data below it
//! ([`report`](crate::engine::report)).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use serde::{Deserialize, Serialize};

use crate::engine::def::EntityDef;
use crate::engine::entity::Facts;
pub use crate::engine::report::Drift;
use crate::error::{Error, Result};
use crate::store::{Direction, RangeRequest, Store, encode_entry};

mod counters;
pub(crate) mod inward;
pub(crate) mod links;
mod records;

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
    #[serde(with = "crate::engine::wide::hex")]
    cursor: Option<Vec<u8>>,
    /// Counter key → what the records (and expired writes awaiting the
    /// sweep) add up to.
    #[serde(with = "crate::engine::wide::totals")]
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
    /// When the stamps were read, by the store's clock ([`Store::now_ms`]:
    /// on Redis, this process's; milliseconds since the Unix epoch): they prove nothing once half of
    /// [`STAMP_AFTERLIFE`](crate::store::counter::STAMP_AFTERLIFE) has
    /// passed since.
    #[serde(default)]
    stamps_at: Option<u64>,
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

    /// The upkeep of the walked entity's sweeps: its key space and feed,
    /// so a record the walk sweeps has its `Expired` event.
    pub(crate) fn upkeep(&self) -> crate::engine::transition::Upkeep<'_> {
        crate::engine::transition::Upkeep {
            feed: self.def.feed(),
            ..crate::engine::transition::Upkeep::on(self.def.space(), self.store)
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
            // Through the ledger once, past the entries that have to stay.
            let mut after = None;
            loop {
                let upkeep = self.upkeep();
                let (sweep, next) =
                    crate::engine::expiry::sweep_from(self.store, upkeep, 10_000, after).await?;
                state.drift.undecodable.extend(sweep.skipped);
                match next {
                    Some(n) => after = Some(n),
                    None => break,
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
