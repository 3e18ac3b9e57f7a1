//! `migrate`, written once over an [`EntityDef`]: every record older than
//! the current version is rewritten at it, page by page, whatever the
//! index state says (so a record an older writer created after the state
//! became complete, one `verify` reports behind, is rewritten too), and what the
//! versions since added (indexes, relations and counters with `since: N`)
//! is backfilled in the same commit as the rewrite.
//!
//! A rewrite is conditional on the record being unchanged, so a record is
//! backfilled exactly once: a migration resumed after an interruption
//! finds the records it rewrote at the current version and passes them
//! over, and never counts one twice. A record whose value for a unique
//! index is held by another record is a **duplicate**: it is left at its
//! version (its entries stay what they were), recorded with the holder,
//! and the migration goes on. The walk's [`MigrateState`] can be saved
//! between pages and resumed.
//!
//! Layer: maintenance (the top layer): above [`walk`](crate::engine::walk).

use serde::{Deserialize, Serialize};

use crate::codec::key::{Derived, derived_parts};
use crate::codec::record;
use crate::engine::def::EntityDef;
use crate::engine::receipt::StoredReceipt;
use crate::engine::repo::commit;
use crate::engine::repo::{MAX_ATTEMPTS, backoff};
use crate::engine::report::Duplicate;
use crate::engine::skipped::Skipped;
use crate::engine::transition::{ReceiptMove, Upkeep, transition};
use crate::engine::walk::{Walker, about_the_record};
use crate::error::Result;
use crate::store::Store;
use crate::store::batch::{Batch, Outcome};

/// A migration in progress: where it is and what it did so far. Save it
/// between pages to resume the migration later.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MigrateState {
    /// Report what would be rewritten, and the duplicates, without writing.
    pub dry_run: bool,
    /// Discovery members visited.
    pub visited: u64,
    /// Records rewritten at the current version (with `dry_run`: that
    /// would be).
    pub rewritten: u64,
    /// Records that could not be read (see `purge`).
    pub skipped: Vec<Skipped>,
    /// Records left unmigrated because another record holds their value
    /// of a unique index.
    pub duplicates: Vec<Duplicate>,
    /// Records left unmigrated because writers kept changing them.
    pub conflicts: Vec<String>,
    /// The lowest version of a record left older than the current one
    /// (duplicates, conflicts and records that could not be rewritten), if
    /// any.
    pub oldest_left: Option<u32>,
    /// Where the walk resumes; `None` at the start or when done.
    #[serde(with = "crate::engine::wide::hex")]
    pub(crate) cursor: Option<Vec<u8>>,
    /// Whether the walk is finished.
    pub done: bool,
    /// With `dry_run`: the claims the rewrites would take, and by which
    /// record, so two old records with one new unique value are reported.
    #[serde(skip)]
    would_claim: std::collections::HashMap<String, String>,
}

impl MigrateState {
    /// A migration from the start.
    pub fn new(dry_run: bool) -> Self {
        MigrateState {
            dry_run,
            ..MigrateState::default()
        }
    }

    /// A migration resuming after the discovery position `cursor`.
    pub fn after(cursor: Option<Vec<u8>>) -> Self {
        MigrateState {
            cursor,
            ..MigrateState::default()
        }
    }

    /// The discovery position the walk resumes after.
    pub fn cursor(&self) -> Option<&[u8]> {
        self.cursor.as_deref()
    }

    fn left_at(&mut self, version: u32) {
        self.oldest_left = Some(self.oldest_left.map_or(version, |v| v.min(version)));
    }
}

/// What became of one old record.
enum Rewrite {
    Done,
    Gone,
    Current,
    Duplicate(Duplicate, u32),
    Conflict(u32),
}

impl<D: EntityDef, S: Store> Walker<'_, D, S> {
    /// One page of `page` records of a migration.
    pub async fn migrate_step(&self, state: &mut MigrateState, page: usize) -> Result<()> {
        let (keys, next) = self.discovery_page(state.cursor.clone(), page).await?;
        // One batched read tells the versions; only old records are read
        // again, for their conditional rewrite.
        let values = self.store.get_many(&keys).await?;
        for (key, bytes) in keys.iter().zip(values) {
            state.visited += 1;
            let Some(bytes) = bytes else { continue };
            let version = match record::header(key, &bytes) {
                Ok(h) if h.version < self.def.version() => h.version,
                Ok(_) => continue,
                Err(e) => {
                    state.skipped.push(Skipped::new(key.clone(), e));
                    continue;
                }
            };
            let outcome = if state.dry_run {
                self.check_rewrite(key, &mut state.would_claim).await
            } else {
                self.rewrite(key).await
            };
            match outcome {
                Ok(Rewrite::Done) => state.rewritten += 1,
                Ok(Rewrite::Gone | Rewrite::Current) => {}
                Ok(Rewrite::Duplicate(d, version)) => {
                    state.left_at(version);
                    state.duplicates.push(d);
                }
                Ok(Rewrite::Conflict(version)) => {
                    state.left_at(version);
                    state.conflicts.push(key.clone());
                }
                // Left at its version (it cannot be rewritten: grown past
                // `max_size`, say), so what the versions since added is not
                // complete.
                Err(e) if about_the_record(&e) => {
                    state.left_at(version);
                    state.skipped.push(Skipped::new(key.clone(), e));
                }
                Err(e) => return Err(e),
            }
        }
        match next {
            Some(n) => state.cursor = Some(n),
            None => {
                state.cursor = None;
                state.done = true;
            }
        }
        Ok(())
    }

    /// The record at `key` with its receipt (expiring entities), in one read.
    async fn read_stored(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<StoredReceipt>)> {
        if !self.def.expiring() {
            return Ok((self.store.get(key).await?, None));
        }
        let receipt_key = self.def.space().receipt_key(key);
        let mut values = self
            .store
            .get_many(&[key.to_owned(), receipt_key.clone()])
            .await?;
        let receipt = values
            .pop()
            .flatten()
            .map(|b| StoredReceipt::new(&receipt_key, b));
        Ok((values.pop().flatten(), receipt))
    }

    /// The duplicate a claim condition at `claim` met: the record holding it.
    async fn duplicate(&self, index: &str, claim: &str, key: &str) -> Result<Duplicate> {
        let holder = self.store.get(claim).await?.unwrap_or_default();
        Ok(Duplicate {
            index: index.to_owned(),
            value: derived_parts(claim, Derived::Claim, index)
                .map_or_else(|| claim.to_owned(), |p| p.join(", ")),
            claim: claim.to_owned(),
            record: key.to_owned(),
            holder: String::from_utf8_lossy(&holder).into_owned(),
        })
    }

    /// Rewrites the old record at `key` at the current version, with the
    /// entries of the versions since, in one conditional commit; an
    /// expiring record keeps its remaining lifetime.
    async fn rewrite(&self, key: &str) -> Result<Rewrite> {
        let space = self.def.space();
        let mut version = 0;
        for attempt in 0..MAX_ATTEMPTS {
            let (bytes, receipt) = self.read_stored(key).await?;
            let Some(old_bytes) = bytes else {
                return Ok(Rewrite::Gone);
            };
            let (stored, record) = self.def.read(key, &old_bytes)?;
            version = stored;
            if stored >= self.def.version() {
                return Ok(Rewrite::Current);
            }
            let new = self.def.facts(&record)?;
            let mut old = new.clone();
            old.retain_since(stored);
            let encoded = self.def.encode(key, &record)?;
            let now = self.store.now_ms().await?;
            let ttl = self.lifetime(key, self.def.expires_at(&record)).await?;
            let due =
                ttl.map(|t| now.saturating_add(u64::try_from(t.as_millis()).unwrap_or(u64::MAX)));
            let mut b = Batch::new();
            b.equals(key, old_bytes).put(key, encoded, ttl);
            let moved = ReceiptMove::Record {
                old: receipt.as_ref(),
                due,
            };
            let checked = transition(
                Upkeep::rewrite(space, self.def.feed(), self.store),
                &mut b,
                key,
                Some(&old),
                Some(&new),
                ttl,
                moved,
            )?;
            match commit(self.store, b).await? {
                Outcome::Applied => return Ok(Rewrite::Done),
                Outcome::Failed { index } => match checked.claim(index) {
                    Some(c) => {
                        let name = claim_index(self.def, &c.key).unwrap_or(c.index);
                        let d = self.duplicate(name, &c.key, key).await?;
                        return Ok(Rewrite::Duplicate(d, stored));
                    }
                    None => backoff(attempt).await,
                },
            }
        }
        Ok(Rewrite::Conflict(version))
    }

    /// What [`rewrite`](Self::rewrite) would do, without writing: the claims
    /// the rewrite would take, checked against their holders and against
    /// the claims earlier rewrites of the dry run would take.
    async fn check_rewrite(
        &self,
        key: &str,
        would_claim: &mut std::collections::HashMap<String, String>,
    ) -> Result<Rewrite> {
        let Some(bytes) = self.store.get(key).await? else {
            return Ok(Rewrite::Gone);
        };
        let (stored, record) = self.def.read(key, &bytes)?;
        if stored >= self.def.version() {
            return Ok(Rewrite::Current);
        }
        let new = self.def.facts(&record)?;
        let claims: Vec<_> = new.claims.iter().filter(|c| c.since > stored).collect();
        let keys: Vec<String> = claims.iter().map(|c| c.key.clone()).collect();
        let holders = self.store.get_many(&keys).await?;
        for (c, holder) in claims.iter().zip(holders) {
            let name = claim_index(self.def, &c.key).unwrap_or(c.index);
            if holder.as_deref().is_some_and(|h| h != key.as_bytes()) {
                let d = self.duplicate(name, &c.key, key).await?;
                return Ok(Rewrite::Duplicate(d, stored));
            }
            if let Some(first) = would_claim.get(&c.key).filter(|r| *r != key) {
                let mut d = self.duplicate(name, &c.key, key).await?;
                d.holder = first.clone();
                return Ok(Rewrite::Duplicate(d, stored));
            }
        }
        for c in claims {
            would_claim.insert(c.key.clone(), key.to_owned());
        }
        Ok(Rewrite::Done)
    }
}

/// The unique index a claim key belongs to.
fn claim_index<'d, D: EntityDef>(def: &'d D, claim: &'d str) -> Option<&'d str> {
    let (kind, name) = def.space().classify(claim)?;
    (kind == Derived::Claim).then_some(name)
}
