//! `purge` of a record that cannot be decoded: it is removed with the
//! derived entries it can be shown to own, found through its expiry
//! receipt or by walking the entity's derived keys (see
//! the inward phase of a walk, `engine::walk::inward`).
//!
//! Written once over an [`EntityDef`]: the generated `XRepo::purge` and
//! `kvmodel purge` (through the run-time model) plan with [`plan`] and
//! commit with [`Purge::apply`].
//!
//! Layer: maintenance (the top layer): above [`walk`](crate::engine::walk) and
//! [`expiry`](crate::engine::expiry).

use crate::engine::def::{EntityDef, Typed};
use crate::engine::entity::{Entity, Facts};
use crate::engine::expiry::expire_ops;
use crate::engine::receipt::{StoredReceipt, move_receipt_in};
use crate::engine::repo::{Engine, MAX_ATTEMPTS};
use crate::engine::transition::{ReceiptMove, Upkeep, transition};
use crate::engine::walk::inward::{Kind, page};
use crate::engine::walk::{Walker, about_the_record};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::Batch;

/// Keys per page of a scan.
const PAGE: usize = 500;

/// What [`plan`] found at a record key.
#[derive(Debug)]
pub enum Found {
    /// No record, nor an expired write awaiting the sweep.
    Nothing,
    /// A record that reads, stored at `version`: a purge leaves it
    /// (`XRepo::purge` deletes it as `delete` does, with its relations'
    /// `on_delete` rules).
    Readable {
        /// The version the record is stored at.
        version: u32,
    },
    /// What cannot be read, and what removing it takes.
    Unreadable(Box<Purge>),
}

/// A planned purge of one record key: what it removes, and the one
/// conditional commit that removes it ([`Purge::apply`]).
#[derive(Debug)]
pub struct Purge {
    /// The record key.
    pub key: String,
    /// Why the record cannot be read (bytes that do not decode, a newer
    /// version, another key's record); `None` when no record is left, only
    /// the receipt of an expired write awaiting the sweep.
    pub error: Option<Error>,
    /// Whether a record is removed (with its discovery member).
    pub record: bool,
    /// Whether its expiry receipt (and ledger entry) is removed.
    pub receipt: bool,
    /// The derived entries removed: claims held by the record, index and
    /// relation members naming it, and the counter amounts taken back.
    pub removed: Facts,
    /// Whether the counter amounts are known (from the receipt). A record
    /// without a readable receipt contributed amounts nobody can read:
    /// `reconcile` brings its counters back in step afterwards.
    pub counters_known: bool,
    batch: Batch,
}

impl Purge {
    /// Commits the purge; `false` when the record, its receipt or a claim
    /// changed since it was planned (nothing was written: plan again).
    pub async fn apply<S: Store>(&self, store: &S) -> Result<bool> {
        Ok(crate::engine::repo::commit(store, self.batch.clone())
            .await?
            .is_applied())
    }

    /// The version of a record newer than the schema reads, if that is why
    /// it cannot be read.
    pub fn newer(&self) -> Option<u32> {
        match &self.error {
            Some(Error::FutureVersion { found, .. }) => Some(*found),
            _ => None,
        }
    }
}

/// Reads the record at `key` of `def` and plans its purge: the record (or
/// an expired write's leftovers) with what it can be shown to own. When its
/// receipt can be read (expiring entities), exactly what the receipt lists
/// (members, counter amounts, claims still held by it); otherwise every
/// claim held by it and every index and relation member naming it, found by
/// walking the entity's derived keys (a maintenance scan that reads every
/// collection of the entity). Writes nothing.
pub async fn plan<D: EntityDef, S: Store>(def: &D, store: &S, key: &str) -> Result<Found> {
    let space = def.space();
    let upkeep = Upkeep::on(space, store);
    let receipt_key = space.receipt_key(key);
    let mut read = store
        .get_many(&[key.to_owned(), receipt_key.clone()])
        .await?;
    let receipt = read
        .pop()
        .flatten()
        .map(|b| StoredReceipt::new(&receipt_key, b));
    let record = read.pop().flatten();
    let error = match &record {
        Some(bytes) => match def.read(key, bytes) {
            Ok((version, _)) => return Ok(Found::Readable { version }),
            Err(e) => Some(e),
        },
        None => None,
    };
    let mut b = Batch::new();
    let (removed, counters_known) = match (&record, &receipt) {
        (None, None) => return Ok(Found::Nothing),
        // An expired write awaiting the sweep: undo what its receipt lists.
        (
            None,
            Some(StoredReceipt {
                receipt: Ok(r),
                bytes,
            }),
        ) => {
            expire_ops(upkeep, &mut b, key, bytes, r)?;
            crate::engine::links::expiry::expire_links(store, space, key, &mut b).await?;
            let mut facts = r.facts.clone();
            facts.claims.clear();
            (facts, true)
        }
        _ => {
            match &record {
                Some(bytes) => b.equals(key, bytes.clone()).delete(key),
                None => b.absent(key),
            };
            if upkeep.discovery {
                b.remove(space.all_key(), Vec::new(), key.as_bytes().to_vec());
            }
            // Its links go as an expired record's do, far entries and
            // counts with them: a record made again at this key must not
            // find them (its registry would give it the old incarnation).
            match crate::engine::links::expiry::expire_links(store, space, key, &mut b).await {
                Ok(()) => {}
                // A registry that does not decode names nothing to follow.
                Err(e) if about_the_record(&e) => {
                    b.delete(crate::engine::links::registry_key(space, key));
                }
                Err(e) => return Err(e),
            }
            let (mut owned, known) = match &receipt {
                Some(StoredReceipt { receipt: Ok(r), .. }) => (r.facts.clone(), true),
                _ => (owned_entries(def, store, key).await?, false),
            };
            if let Some(stored) = &receipt {
                move_receipt_in(space, &mut b, key, Some(stored), None)?;
            }
            let claims: Vec<String> = owned.claims.iter().map(|c| c.key.clone()).collect();
            let holders = store.get_many(&claims).await?;
            owned.claims.clear();
            for (claim, holder) in claims.into_iter().zip(holders) {
                if holder.as_deref() == Some(key.as_bytes()) {
                    b.equals(&claim, key.as_bytes().to_vec()).delete(&claim);
                    owned.claim("", 1, claim);
                }
            }
            let mut rest = owned.clone();
            rest.claims.clear();
            transition(
                upkeep,
                &mut b,
                key,
                Some(&rest),
                None,
                None,
                ReceiptMove::Untouched,
            )?;
            (owned, known)
        }
    };
    Ok(Found::Unreadable(Box::new(Purge {
        key: key.to_owned(),
        error,
        record: record.is_some(),
        receipt: receipt.is_some(),
        removed,
        counters_known,
        batch: b,
    })))
}

/// The claims held by `key` and the index and relation members naming
/// it, found by walking every derived key of the entity.
async fn owned_entries<D: EntityDef, S: Store>(def: &D, store: &S, key: &str) -> Result<Facts> {
    let walker = Walker::new(def, store);
    let mut owned = Facts::default();
    let mut cursor = None;
    loop {
        let (keys, next) = walker.scan_derived(cursor.take(), PAGE).await?;
        let claims: Vec<String> = keys
            .iter()
            .filter(|(_, kind)| *kind == Kind::Claim)
            .map(|(k, _)| k.clone())
            .collect();
        let holders = store.get_many(&claims).await?;
        for (claim, holder) in claims.iter().zip(holders) {
            if holder.as_deref() == Some(key.as_bytes()) {
                owned.claim("", 1, claim.clone());
            }
        }
        for (collection, _) in keys.iter().filter(|(_, kind)| *kind == Kind::Collection) {
            let mut after = None;
            loop {
                let range = page(store, collection, after.take()).await?;
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

impl<E: Entity, S: Store> Engine<E, S> {
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
        let def = Typed::<E>::new();
        for _ in 0..MAX_ATTEMPTS {
            match plan(&def, self.store(), key).await? {
                Found::Nothing => return Ok(false),
                Found::Readable { .. } => return self.delete(key).await,
                Found::Unreadable(p) => {
                    let expired_write = !p.record;
                    // An expired write swept by someone else meanwhile is
                    // gone all the same.
                    if p.apply(self.store()).await? || expired_write {
                        return Ok(true);
                    }
                }
            }
        }
        Err(Self::gave_up(key))
    }
}
