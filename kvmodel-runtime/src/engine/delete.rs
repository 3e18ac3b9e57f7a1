//! Deleting a record: its derived entries, its link collections and the
//! referential actions of the relations that name it, in one commit (a
//! cascade first deletes the children, each in a commit of its own: the
//! worklist of [`on_delete`](crate::engine::on_delete)).
//!
//! Layer: roles: above `transition` and
//! [`on_delete`](crate::engine::on_delete).

use crate::engine::entity::{self, Entity, Facts};
use crate::engine::on_delete;
use crate::engine::receipt::stored_from;
use crate::engine::relation::{Kind, OnPath, Own};
use crate::engine::repo::Engine;
use crate::engine::transition::{ReceiptMove, Upkeep, planned, transition};
use crate::error::Result;
use crate::store::batch::{Batch, Outcome, Planned};
use crate::store::{PlannedDelete, Store};

/// A boxed future of a delete step.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

impl<E: Entity, S: Store> Engine<E, S> {
    /// Deletes a record and every derived entry; `false` if it did not exist.
    /// A record that cannot be decoded is an error pointing to `purge`.
    ///
    /// When other entities' relations to this one enforce `on_delete`, the
    /// delete conditions on each count of children: a `restrict` one fails
    /// with [`Error::Restricted`], writing
    /// nothing; a `cascade` one first deletes the children, depth first,
    /// each in its own commit, without recursion and through cycles
    /// ([`on_delete`](crate::engine::on_delete)).
    #[cfg_attr(feature = "tracing", tracing::instrument(target = "kvmodel", name = "delete", level = "debug", skip_all, fields(entity = E::META.name, backend = self.store().backend(), key = crate::engine::trace::key(|| key.to_owned()))))]
    pub async fn delete(&self, key: &str) -> Result<bool> {
        if let Some(planned) = self.delete_by_plan(key)
            && let Some(existed) = planned.await?
        {
            return Ok(existed);
        }
        // Boxed: what awaits a delete keeps a small frame (a deep cascade
        // may run on a small stack).
        Box::pin(on_delete::delete_tree(
            self.store(),
            Kind::<S>::of::<E>(),
            key,
        ))
        .await
    }

    /// Deletes the record at `key` by the plan its last write stored
    /// beside it, on a store that keeps plans, in one round trip:
    /// whether there was a record, or `None` when the plan does not apply
    /// (the entity's records keep none, the record has none, or another
    /// writer changed it since, or it has links) and nothing was written.
    /// `None` at once where no plan is kept.
    ///
    /// Boxed, and built outside the delete's own future, which stays small
    /// (a cascade may run on a small stack).
    fn delete_by_plan<'a>(&'a self, key: &'a str) -> Option<BoxFuture<'a, Result<Option<bool>>>> {
        if !planned::<E>() || self.store().delete_plans().is_none() {
            return None;
        }
        Some(Box::pin(self.delete_planned_now(key)))
    }

    async fn delete_planned_now(&self, key: &str) -> Result<Option<bool>> {
        let space = E::space();
        let registry = crate::engine::links::registry_key(space, key);
        let done = self
            .store()
            .delete_planned(key, &space.plan_key(key), &registry, E::PLAN_TAG)
            .await;
        #[cfg(feature = "tracing")]
        crate::engine::trace::planned_delete(self.store().backend(), &done);
        Ok(match done? {
            PlannedDelete::Deleted => Some(true),
            PlannedDelete::Absent => Some(false),
            PlannedDelete::Unplanned => None,
        })
    }

    /// One attempt at deleting the record at `key` once no child is left
    /// to delete first: one commit of the record, its derived entries and
    /// links, conditioned on each count of its children holding exactly
    /// the record itself (when it names itself) and the children `on_path`
    /// says are on the path. A count that holds nobody else goes with the
    /// record; one left to children on the path is returned in
    /// [`Own::Deleted`]. A record a cascade reached `under` a parent that
    /// it no longer names (it moved out of the tree) is left:
    /// [`Own::Gone`].
    pub(crate) async fn delete_once(
        &self,
        key: &str,
        under: Option<(&str, &str)>,
        on_path: &[OnPath],
    ) -> Result<Own> {
        /// What a delete found.
        enum Found {
            Record,
            Nothing,
            /// A record that no longer names the parent it was reached from.
            Moved,
            /// No record, but the receipt of an expired one.
            Leftover,
        }
        // The record's link registry is read with it: its link collections
        // go in the same commit.
        let mut keys = Self::stored_keys(key);
        keys.push(crate::engine::links::registry_key(E::space(), key));
        let (outcome, (found, guards, left)) = self
            .commit_after_read(&keys, |mut values, _| {
                let registry = values.pop().flatten();
                let mut stored = stored_from::<E>(key, values);
                let Some(old_bytes) = stored.bytes.take() else {
                    let found = match stored.receipt {
                        Some(_) => Found::Leftover,
                        None => Found::Nothing,
                    };
                    return Ok(Planned::Skip((found, Vec::new(), Vec::new())));
                };
                let (stored_version, old_value) = entity::decode_at::<E>(key, &old_bytes)
                    .map_err(|e| on_delete::purge_hint(key, e))?;
                if let Some((parent, relation)) = under
                    && !old_value
                        .parents()
                        .iter()
                        .any(|p| p.key == parent && p.relation == relation)
                {
                    return Ok(Planned::Skip((Found::Moved, Vec::new(), Vec::new())));
                }
                let mut old = Facts::of(&old_value);
                old.retain_since(stored_version);
                // Each count of children: what it holds of the record
                // itself (a record that names itself) and of the children
                // on the path is all it may hold.
                let mut counts = Vec::new();
                let mut left = Vec::new();
                for (i, d) in old_value.dependents().into_iter().enumerate() {
                    let own: i128 = old
                        .counters
                        .iter()
                        .filter(|c| c.key == d.children)
                        .map(|c| c.delta)
                        .sum();
                    let held = on_path
                        .iter()
                        .find(|a| a.dependent == i)
                        .map_or(0, |a| a.count);
                    let expected = own + i128::from(held);
                    if held == 0 {
                        // The count goes with its parent (a child that
                        // comes later finds no parent), the record's own
                        // place in it too.
                        old.counters.retain(|c| c.key != d.children);
                    } else {
                        left.push((i, d.children.clone()));
                    }
                    counts.push((i, d, expected, held == 0));
                }
                let mut b = Batch::new();
                b.equals(key, old_bytes).delete(key);
                let receipt = ReceiptMove::Record {
                    old: stored.receipt.as_ref(),
                    due: None,
                };
                transition(
                    Upkeep::of::<E, S>(self.store()),
                    &mut b,
                    key,
                    Some(&old),
                    None,
                    None,
                    receipt,
                )?;
                crate::engine::links::delete_links(&mut b, E::space(), key, registry)?;
                let mut guards = Vec::new();
                for (i, d, expected, goes) in counts {
                    guards.push((b.conditions().len(), i, d.clone()));
                    b.absent_or_equals(d.children.clone(), expected.to_string().into_bytes());
                    if goes {
                        b.delete(d.children);
                    }
                }
                Ok(Planned::Commit(b, (Found::Record, guards, left)))
            })
            .await?;
        match (outcome, found) {
            (Outcome::Applied, Found::Record) => {
                self.sweep_step().await;
                Ok(Own::Deleted(left))
            }
            (_, Found::Nothing | Found::Moved) => Ok(Own::Gone),
            (_, Found::Leftover) => {
                // Expired, not yet swept: sweep it now.
                Box::pin(self.expire_leftover(key)).await?;
                Ok(Own::Gone)
            }
            (Outcome::Failed { index }, Found::Record) => {
                Ok(match guards.into_iter().find(|(at, _, _)| *at == index) {
                    Some((_, i, d)) => Own::Blocked(i, d),
                    None => Own::Changed,
                })
            }
        }
    }
}
