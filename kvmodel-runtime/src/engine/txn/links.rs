//! Links and unlinks inside a [`Transaction`](super::Transaction): the
//! generated `link_*` and `unlink_*` of a transaction's repository view.
//!
//! A link reads both records, both registries and the pair's edge through
//! the transaction, seeing what it staged before: a record created earlier
//! in the transaction exists, and a registry an earlier link wrote is read
//! back from the batch and replaced. Everything else it reads becomes a
//! condition of the commit, once per key; its own part holds operations
//! only.

use super::TxRepo;
use crate::engine::entity::Entity;
use crate::engine::links::ops::{Registries, plan_link, plan_unlink};
use crate::engine::links::{Link, PairKeys, read_edge, read_registry};
use crate::error::{Error, Result};
use crate::store::Store;

impl<E: Entity, S: Store> TxRepo<'_, E, S> {
    /// Stages the link of the record at `from_key` (of this entity, the
    /// declaring side) with the one at `to_key` (of `F`): both entries,
    /// both counts, the edge and the registries, as `link` writes them in
    /// one commit. `true` when they were not linked (as the transaction
    /// sees it); [`Error::NotFound`] at once when either record does not
    /// exist, counting the records the transaction created, updated or
    /// deleted before.
    pub async fn link<F: Entity>(
        &self,
        link: &Link<'_>,
        from_key: &str,
        to_key: &str,
    ) -> Result<bool> {
        let pair = PairKeys::new(link, from_key, to_key);
        let keys = pair.link_reads();
        let mut values = self.tx.read_own(E::META.name, &keys).await?.into_iter();
        let mut next = || values.next().flatten();
        if next().is_none() {
            return Err(Error::NotFound {
                entity: E::META.name,
                key: from_key.to_owned(),
            });
        }
        if next().is_none() {
            return Err(Error::NotFound {
                entity: F::META.name,
                key: to_key.to_owned(),
            });
        }
        let regs = Registries {
            from: read_registry(&pair.from_reg, next())?,
            to: read_registry(&pair.to_reg, next())?,
        };
        let edge_read = read_edge(&pair.edge, next())?;
        match plan_link(link, &pair, &regs, edge_read.as_ref())? {
            Some(ops) => {
                self.tx.stage_links([from_key, to_key], ops)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Stages the unlink of the records at `from_key` (this entity) and
    /// `to_key`: the edge and each entry that stands, with its count.
    /// `true` when an entry goes (as the transaction sees it); either
    /// record may be gone.
    pub async fn unlink(&self, link: &Link<'_>, from_key: &str, to_key: &str) -> Result<bool> {
        let pair = PairKeys::new(link, from_key, to_key);
        let keys = pair.unlink_reads();
        let mut values = self.tx.read_own(E::META.name, &keys).await?.into_iter();
        let mut next = || values.next().flatten();
        let regs = Registries {
            from: read_registry(&pair.from_reg, next())?,
            to: read_registry(&pair.to_reg, next())?,
        };
        let Some((_, edge_value)) = read_edge(&pair.edge, next())? else {
            return Ok(false);
        };
        let (ops, changed) = plan_unlink(link, &pair, &regs, &edge_value);
        self.tx.stage_links([from_key, to_key], ops)?;
        Ok(changed)
    }
}
