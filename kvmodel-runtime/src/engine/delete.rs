//! Deleting a record: its derived entries, its link collections and the
//! referential actions of the relations that name it, in one commit (a
//! cascade first deletes the children, each in a commit of its own).

use crate::engine::entity::{self, Entity, Facts};
use crate::engine::expiry::stored_from;
use crate::engine::on_delete::{CASCADE_PAGE, DependentFact, OnDelete};
use crate::engine::repo::{Engine, MAX_ATTEMPTS, ReceiptMove, backoff, purge_hint, transition};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome, Planned};

impl<E: Entity, S: Store> Engine<E, S> {
    /// Deletes a record and every derived entry; `false` if it did not exist.
    /// A record that cannot be decoded is an error pointing to `purge`.
    ///
    /// When other entities' relations to this one enforce `on_delete`, the
    /// delete conditions on each count of children being zero: a
    /// `restrict` one fails with [`Error::Restricted`], writing nothing; a
    /// `cascade` one first deletes the children, a page at a time, each in
    /// its own commit ([`on_delete`](crate::engine::on_delete)).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "delete", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend())))]
    pub async fn delete(&self, key: &str) -> Result<bool> {
        /// What a delete found.
        enum Found {
            Record,
            Nothing,
            /// No record, but the receipt of an expired one.
            Leftover,
        }
        // The record's link registry is read with it (an expiring entity
        // takes part in no link): its link collections go in the same commit.
        let linked = !Self::expiring();
        let mut keys = Self::stored_keys(key);
        if linked {
            keys.push(crate::engine::links::registry_key(E::space(), key));
        }
        // Whether expired children of a restricted relation were swept
        // since its count last failed the delete.
        let mut swept = false;
        for attempt in 0..MAX_ATTEMPTS {
            if E::CASCADES {
                self.cascade(key).await?;
            }
            let (outcome, (found, guards)) = self
                .commit_after_read(&keys, |mut values, _| {
                    let registry = if linked { values.pop().flatten() } else { None };
                    let mut stored = stored_from::<E>(key, values);
                    let Some(old_bytes) = stored.bytes.take() else {
                        let found = match stored.receipt {
                            Some(_) => Found::Leftover,
                            None => Found::Nothing,
                        };
                        return Ok(Planned::Skip((found, Vec::new())));
                    };
                    let (stored_version, old_value) =
                        entity::decode_at::<E>(key, &old_bytes).map_err(|e| purge_hint(key, e))?;
                    let mut old = Facts::of(&old_value);
                    old.retain_since(stored_version);
                    let mut b = Batch::new();
                    b.equals(key, old_bytes).delete(key);
                    let receipt = ReceiptMove::Record {
                        old: stored.receipt.as_ref(),
                        due: None,
                    };
                    transition::<E>(&mut b, key, Some(&old), None, None, receipt)?;
                    if linked {
                        crate::engine::links::delete_links(&mut b, E::space(), key, registry)?;
                    }
                    let mut guards = Vec::new();
                    for (i, d) in old_value.dependents().into_iter().enumerate() {
                        guards.push((b.conditions().len(), i, d.clone()));
                        // No child left: the count goes with its parent
                        // (a child that comes later finds no parent).
                        b.absent_or_equals(d.children.clone(), b"0".to_vec());
                        b.delete(d.children);
                    }
                    Ok(Planned::Commit(b, (Found::Record, guards)))
                })
                .await?;
            match (outcome, found) {
                (Outcome::Applied, Found::Record) => {
                    self.sweep_step().await;
                    return Ok(true);
                }
                (_, Found::Nothing) => return Ok(false),
                (_, Found::Leftover) => {
                    // Expired, not yet swept: sweep it now.
                    Box::pin(self.expire_leftover(key)).await?;
                    return Ok(false);
                }
                (Outcome::Failed { index }, Found::Record) => {
                    match guards.into_iter().find(|(at, _, _)| *at == index) {
                        Some((_, i, d)) if d.on_delete == OnDelete::Restrict => {
                            if swept {
                                return Err(self.restricted(key, &d));
                            }
                            // Children it counts may have expired: sweep
                            // them, then look again once.
                            swept = true;
                            E::dependent_step(self.store(), i, &d.collection, CASCADE_PAGE, false)
                                .await?;
                        }
                        // A child came meanwhile: cascade again.
                        _ => backoff(attempt).await,
                    }
                }
            }
        }
        Err(Self::gave_up(key))
    }

    /// Deletes the children of every `cascade` dependent of the record at
    /// `key`, a page at a time; nothing when there is no such record.
    async fn cascade(&self, key: &str) -> Result<()> {
        let Some(bytes) = self.store().get(key).await? else {
            return Ok(());
        };
        let (_, value) = entity::decode_at::<E>(key, &bytes).map_err(|e| purge_hint(key, e))?;
        for (i, d) in value.dependents().iter().enumerate() {
            if d.on_delete != OnDelete::Cascade {
                continue;
            }
            while E::dependent_step(self.store(), i, &d.collection, CASCADE_PAGE, true).await? > 0 {
            }
        }
        Ok(())
    }

    fn restricted(&self, key: &str, d: &DependentFact) -> Error {
        Error::Restricted {
            entity: E::META.name,
            key: key.to_owned(),
            child: d.entity,
            relation: d.relation,
        }
    }
}
