//! `purge` of a record that cannot be decoded: it is removed with the
//! derived entries it can be shown to own, found through its expiry
//! receipt or by walking the entity's derived keys (see
//! the inward phase of a walk, `engine::walk::inward`).

use crate::engine::def::Typed;
use crate::engine::entity::{Entity, Facts};
use crate::engine::expiry::{StoredReceipt, move_receipt, read_record};
use crate::engine::repo::{Engine, MAX_ATTEMPTS, ReceiptMove, transition};
use crate::engine::walk::Walker;
use crate::engine::walk::inward::{Kind, page};
use crate::error::Result;
use crate::store::Store;
use crate::store::batch::Batch;

/// Keys per page of a scan.
const PAGE: usize = 500;

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
            if self.commit(b).await?.is_applied() {
                return Ok(true);
            }
        }
        Err(Self::gave_up(key))
    }

    /// The claims held by `key` and the index and relation members naming
    /// it, found by walking every derived key of the entity.
    async fn owned_entries(&self, key: &str) -> Result<Facts> {
        let def = Typed::<E>::new();
        let walker = Walker::new(&def, self.store());
        let mut owned = Facts::default();
        let mut cursor = None;
        loop {
            let (keys, next) = walker.scan_derived(cursor.take(), PAGE).await?;
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
