//! Maintenance over every record of an entity: `migrate` (rewrite old
//! versions), `verify` (recompute index entries and counters, report drift)
//! and `reconcile` (the same, and repair it).
//!
//! All three walk the entity's discovery set page by page (never a key scan).
//! `migrate` is resumable from any page's cursor. `reconcile` adjusts counters
//! by the difference it measured, so run it while writers are paused, or run
//! `verify` again afterwards to confirm.

use std::collections::BTreeMap;

use crate::codec::record;
use crate::engine::entity::{self, Entity, Facts};
use crate::engine::page::{Cursor, ListRequest, PageRequest};
use crate::engine::repo::{Engine, transition};
use crate::error::Result;
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
}

/// A counter whose stored value differs from what the records add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterDrift {
    /// Counter key.
    pub key: String,
    /// What the records add up to (exactly; it may lie beyond what a 64-bit
    /// counter holds, and is then reported but not repaired).
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
    /// Counters that differ from the records.
    pub counters: Vec<CounterDrift>,
}

impl Drift {
    /// True when nothing is out of step.
    pub fn is_clean(&self) -> bool {
        self.missing_claims.is_empty()
            && self.conflicting_claims.is_empty()
            && self.missing_members.is_empty()
            && self.counters.is_empty()
    }
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Migrates one page of records: every record older than the current
    /// version is rewritten through `update` semantics, so indexes and
    /// counters introduced since (`since: N`) are filled in.
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
            if record::header(key, &bytes)?.version < E::VERSION {
                self.modify(key, |_| {}).await?;
                progress.changed += 1;
            }
        }
        progress.next = range.next.map(|p| page.next_cursor(&all, p));
        Ok(())
    }

    /// Migrates every record, `page_size` at a time, reporting progress
    /// after each page. Resume an interrupted run with `migrate_from`.
    pub async fn migrate_all(
        &self,
        page_size: usize,
        on_progress: impl FnMut(&Progress) + Send,
    ) -> Result<Progress> {
        self.migrate_from(None, page_size, on_progress).await
    }

    /// Migrates every record from `cursor` on (a [`Progress::next`]).
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
    /// records and reports what is out of step. Writes nothing.
    pub async fn verify(&self, page_size: usize) -> Result<Drift> {
        self.walk(page_size, false).await
    }

    /// Like [`verify`](Self::verify), then repairs: missing claims and
    /// members are written (through the same transition as every write,
    /// with the record's remaining lifetime when it expires), counters are
    /// adjusted by the measured difference. Claims held by another record
    /// are reported, never taken.
    pub async fn reconcile(&self, page_size: usize) -> Result<Drift> {
        self.walk(page_size, true).await
    }

    async fn walk(&self, page_size: usize, repair: bool) -> Result<Drift> {
        let store = self.store();
        let mut drift = Drift::default();
        let mut expected: BTreeMap<String, i128> = BTreeMap::new();
        let mut after = None;
        loop {
            let mut req = RangeRequest::all(page_size.max(1));
            req.after = after.take();
            let range = store.range(&E::all_key(), req).await?;
            let keys: Vec<String> = range
                .members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.member).into_owned())
                .collect();
            let values = store.get_many(&keys).await?;
            for (key, bytes) in keys.iter().zip(values) {
                let Some(bytes) = bytes else { continue };
                drift.records += 1;
                let (version, value) = entity::decode::<E>(key, &bytes)?;
                let mut facts = Facts::of(&value);
                facts.retain_since(version);
                for c in facts.counters.drain(..) {
                    *expected.entry(c.key).or_default() += c.delta;
                }
                // `want`: the entries the record implies, less claims another
                // record holds (reported, never taken); `have`: those found.
                let mut want = facts;
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
                        Some(holder) => drift.conflicting_claims.push((
                            c.key,
                            key.clone(),
                            String::from_utf8_lossy(&holder).into_owned(),
                        )),
                        None => {
                            drift.missing_claims.push((c.key.clone(), key.clone()));
                            kept.push(c);
                        }
                    }
                }
                want.claims = kept;
                for m in &want.members {
                    if is_member(store, &m.collection, &m.sort, key.as_bytes()).await? {
                        have.members.push(m.clone());
                    } else {
                        drift
                            .missing_members
                            .push((m.collection.clone(), key.clone()));
                    }
                }
                let missing = have.claims.len() < want.claims.len()
                    || have.members.len() < want.members.len();
                if repair && missing {
                    self.repair(key, bytes, &have, &want).await?;
                }
            }
            match range.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        for (key, want) in expected {
            let actual = store.counter(&key).await?;
            if want != i128::from(actual) {
                // A sum no counter can hold is reported, not repaired.
                if repair && i64::try_from(want).is_ok() {
                    let mut b = Batch::new();
                    b.incr_wide(&key, want - i128::from(actual));
                    let _ = store.commit(b).await?;
                }
                drift.counters.push(CounterDrift {
                    key,
                    expected: want,
                    actual,
                });
            }
        }
        Ok(drift)
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
        transition(&mut fix, key, Some(have), Some(want), ttl, &E::all_key())?;
        let _ = self.store().commit(fix).await?;
        Ok(())
    }
}

/// Whether `member` is in the collection under `sort`: one descending step
/// from just past its position, so the check costs one short range read
/// however large the collection is.
async fn is_member<S: Store>(
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
