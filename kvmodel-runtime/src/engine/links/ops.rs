//! What link, unlink, a listing of linked records and a link count do:
//! the [`Engine`] methods behind the generated `link_*`, `unlink_*`,
//! `list_*` and `count_*`.

use super::{
    EdgeValue, End, Link, PairKeys, Read, Registry, add_entry, keep_as_read, read_edge,
    read_registry, registry_key, remove_entry, stands, with_name,
};
use crate::engine::entity::{self, Entity};
use crate::engine::page::{ListRequest, Page, PageRequest};
use crate::engine::repo::{Engine, MAX_ATTEMPTS, backoff};
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome, Planned};

/// The registries of a pair as written by a link: the one of `from`, and
/// the one of `to` (the same key for a record linked to itself).
pub(crate) struct Registries {
    pub from: Read<Registry>,
    pub to: Read<Registry>,
}

/// The operations that link the records of `pair` given both registries
/// and the pair's edge as read (no conditions: the caller conditions on
/// what it read); `None` when both entries stand already.
pub(crate) fn plan_link(
    link: &Link<'_>,
    pair: &PairKeys<'_>,
    regs: &Registries,
    edge_read: Option<&(Vec<u8>, EdgeValue)>,
) -> Result<Option<Batch>> {
    let (from_key, to_key) = (pair.from, pair.to);
    let (rf, rt, edge) = (&pair.from_reg, &pair.to_reg, &pair.edge);
    let e = edge_read.map(|(_, v)| v);
    let from_stands = stands(e, regs.from.as_ref().map(|r| &r.1), End::From);
    let to_stands = stands(e, regs.to.as_ref().map(|r| &r.1), End::To);
    if from_stands && to_stands {
        return Ok(None);
    }
    let mut b = Batch::new();
    let self_link = rf == rt;
    let new_from = with_name(regs.from.as_ref().map(|r| &r.1), link.name);
    let from_now = new_from
        .clone()
        .or_else(|| regs.from.as_ref().map(|r| r.1.clone()));
    let to_base = if self_link {
        from_now.as_ref()
    } else {
        regs.to.as_ref().map(|r| &r.1)
    };
    let new_to = with_name(to_base, link.inverse);
    let to_now = new_to.clone().or_else(|| to_base.cloned());
    let (Some(from_now), Some(to_now)) = (from_now, to_now) else {
        return Err(Error::decode(
            rf,
            "the link registry could not be written",
            None,
        ));
    };
    if self_link {
        if let Some(r) = new_to.or(new_from) {
            b.put(rf.as_str(), r.bytes(), None);
        }
    } else {
        if let Some(r) = new_from {
            b.put(rf.as_str(), r.bytes(), None);
        }
        if let Some(r) = new_to {
            b.put(rt.as_str(), r.bytes(), None);
        }
    }
    let value = EdgeValue {
        from: from_now.incarnation,
        to: to_now.incarnation,
        from_key: from_key.to_owned(),
        to_key: to_key.to_owned(),
        from_registry: rf.clone(),
        to_registry: rt.clone(),
        name: link.name.to_owned(),
        inverse: link.inverse.to_owned(),
    };
    b.put(edge.as_str(), value.bytes(), None);
    if !from_stands {
        add_entry(&mut b, link, End::From, from_key, to_key, edge);
    }
    if !to_stands {
        add_entry(&mut b, link, End::To, to_key, from_key, edge);
    }
    Ok(Some(b))
}

/// The operations that unlink the records of `pair` given both
/// registries and the pair's edge as read (no conditions): the edge goes,
/// and each entry that stands with one from its count; `true` when an
/// entry was removed.
pub(crate) fn plan_unlink(
    link: &Link<'_>,
    pair: &PairKeys<'_>,
    regs: &Registries,
    edge: &EdgeValue,
) -> (Batch, bool) {
    let (from_key, to_key, edge_key) = (pair.from, pair.to, &pair.edge);
    let from_stands = stands(Some(edge), regs.from.as_ref().map(|r| &r.1), End::From);
    let to_stands = stands(Some(edge), regs.to.as_ref().map(|r| &r.1), End::To);
    let mut b = Batch::new();
    b.delete(edge_key.as_str());
    if from_stands {
        remove_entry(&mut b, link, End::From, from_key, to_key, edge_key);
    }
    if to_stands {
        remove_entry(&mut b, link, End::To, to_key, from_key, edge_key);
    }
    (b, from_stands || to_stands)
}

impl<E: Entity, S: Store> Engine<E, S> {
    /// Links the record at `from_key` (of this entity, the declaring side)
    /// with the one at `to_key` (of `F`), both directions and both counts in
    /// one commit; `true` when the link was not there before. Both records
    /// must exist ([`Error::NotFound`] names the missing one; nothing is
    /// written). Retries while other writers change either record or the
    /// pair, then fails with [`Error::Conflict`].
    pub async fn link<F: Entity>(
        &self,
        link: &Link<'_>,
        from_key: &str,
        to_key: &str,
    ) -> Result<bool> {
        let pair = PairKeys::new(link, from_key, to_key);
        let keys = pair.link_reads();
        let (rf, rt, edge) = (&pair.from_reg, &pair.to_reg, &pair.edge);
        for attempt in 0..MAX_ATTEMPTS {
            let (outcome, changed) = self
                .commit_after_read(&keys, |mut values, _| {
                    let edge_read = read_edge(edge, values.pop().flatten())?;
                    let to_reg = values.pop().flatten();
                    let from_reg = values.pop().flatten();
                    let to_rec = values.pop().flatten();
                    let from_rec = values.pop().flatten();
                    let Some(from_rec) = from_rec else {
                        return Err(Error::NotFound {
                            entity: E::META.name,
                            key: from_key.to_owned(),
                        });
                    };
                    let Some(to_rec) = to_rec else {
                        return Err(Error::NotFound {
                            entity: F::META.name,
                            key: to_key.to_owned(),
                        });
                    };
                    let regs = Registries {
                        from: read_registry(rf, from_reg)?,
                        to: read_registry(rt, to_reg)?,
                    };
                    let Some(ops) = plan_link(link, &pair, &regs, edge_read.as_ref())? else {
                        return Ok(Planned::Skip(false));
                    };
                    let mut b = Batch::new();
                    b.equals(from_key, from_rec).equals(to_key, to_rec);
                    keep_as_read(&mut b, rf, regs.from.as_ref().map(|r| &r.0));
                    keep_as_read(&mut b, rt, regs.to.as_ref().map(|r| &r.0));
                    keep_as_read(&mut b, edge, edge_read.as_ref().map(|r| &r.0));
                    for op in ops.into_parts().1 {
                        b.op(op);
                    }
                    Ok(Planned::Commit(b, true))
                })
                .await?;
            match outcome {
                Outcome::Applied => return Ok(changed),
                Outcome::Failed { .. } => backoff(attempt).await,
            }
        }
        Err(Self::gave_up(from_key))
    }

    /// Unlinks the records at `from_key` (this entity) and `to_key`, both
    /// directions and both counts in one commit; `true` when an entry was
    /// removed. Either record may be gone.
    pub async fn unlink(&self, link: &Link<'_>, from_key: &str, to_key: &str) -> Result<bool> {
        let pair = PairKeys::new(link, from_key, to_key);
        let keys = pair.unlink_reads();
        let (rf, rt, edge) = (&pair.from_reg, &pair.to_reg, &pair.edge);
        for attempt in 0..MAX_ATTEMPTS {
            let (outcome, changed) = self
                .commit_after_read(&keys, |mut values, _| {
                    let Some(edge_read) = read_edge(edge, values.pop().flatten())? else {
                        return Ok(Planned::Skip(false));
                    };
                    let regs = Registries {
                        to: read_registry(rt, values.pop().flatten())?,
                        from: read_registry(rf, values.pop().flatten())?,
                    };
                    let mut b = Batch::new();
                    b.equals(edge.as_str(), edge_read.0.clone());
                    keep_as_read(&mut b, rf, regs.from.as_ref().map(|r| &r.0));
                    keep_as_read(&mut b, rt, regs.to.as_ref().map(|r| &r.0));
                    let (ops, changed) = plan_unlink(link, &pair, &regs, &edge_read.1);
                    for op in ops.into_parts().1 {
                        b.op(op);
                    }
                    Ok(Planned::Commit(b, changed))
                })
                .await?;
            match outcome {
                Outcome::Applied => return Ok(changed),
                Outcome::Failed { .. } => backoff(attempt).await,
            }
        }
        Err(Self::gave_up(from_key))
    }

    /// A page of the records of `F` linked to the record at `key` (of this
    /// entity, on `end` of `link`), ordered by their keys: the collection
    /// page with its records, then their registries and edges (two round
    /// trips). An entry whose far record is gone, or is another
    /// incarnation than the one linked, is not listed and is removed with
    /// its count and edge (conditionally: a pair linked again meanwhile
    /// keeps it), unless the far record expired: the sweep of its receipt
    /// removes that entry. The links of a record of an expiring entity that
    /// is gone are not listed (its record is read in the second round
    /// trip). A record that cannot be decoded is reported in
    /// [`Page::skipped`].
    pub async fn list_linked<F: Entity>(
        &self,
        link: &Link<'_>,
        end: End,
        key: &str,
        page: PageRequest,
    ) -> Result<Page<F>> {
        let page = ListRequest::from(page);
        let collection = link.collection_key(end, key);
        let (range, values) = self
            .store()
            .range_values(&collection, page.range(&collection)?)
            .await?;
        let far_end = end.other();
        let far_space = link.side(far_end).0;
        let own_reg = registry_key(link.side(end).0, key);
        let mut keys = vec![own_reg.clone()];
        // A record that expires may be gone while its links await the
        // sweep: it is read with the registry, and lists nothing then.
        let own_expires = Self::expiring();
        if own_expires {
            keys.push(key.to_owned());
        }
        for m in &range.members {
            let far = String::from_utf8_lossy(&m.member);
            keys.push(String::from_utf8_lossy(&m.sort).into_owned());
            keys.push(registry_key(far_space, &far));
        }
        let mut read = self.store().get_many(&keys).await?.into_iter();
        let own = read_registry(&own_reg, read.next().flatten())?;
        if own_expires && read.next().flatten().is_none() {
            return Ok(Page {
                items: Vec::new(),
                next: None,
                skipped: Vec::new(),
            });
        }
        let mut items = Vec::with_capacity(values.len());
        let mut skipped = Vec::new();
        let mut sweep = Batch::new();
        keep_as_read(&mut sweep, &own_reg, own.as_ref().map(|r| &r.0));
        let mut stale = false;
        for (m, value) in range.members.iter().zip(values) {
            let far = String::from_utf8_lossy(&m.member).into_owned();
            let edge = String::from_utf8_lossy(&m.sort).into_owned();
            let (edge_bytes, reg_bytes) = (read.next().flatten(), read.next().flatten());
            let far_reg_key = registry_key(far_space, &far);
            let checked = read_edge(&edge, edge_bytes.clone())
                .and_then(|e| Ok((e, read_registry(&far_reg_key, reg_bytes.clone())?)));
            let (e, far_reg) = match checked {
                Ok(v) => v,
                Err(err) => {
                    skipped.push(Skipped::new(edge, err));
                    continue;
                }
            };
            let ev = e.as_ref().map(|(_, v)| v);
            let far_stands = stands(ev, far_reg.as_ref().map(|r| &r.1), far_end);
            match value {
                Some(bytes) if far_stands && stands(ev, own.as_ref().map(|r| &r.1), end) => {
                    match entity::decode_at::<F>(&far, &bytes) {
                        Ok((_, v)) => items.push(v),
                        Err(err) => skipped.push(Skipped::new(far, err)),
                    }
                }
                // The far record was deleted or created again since the
                // link: its entry goes, with the edge no entry needs. (An
                // entry without an edge is left to `reconcile`: nothing
                // would keep two clean-ups from both counting it.)
                _ if e.is_some() && !far_stands => {
                    stale = true;
                    keep_as_read(&mut sweep, &edge, edge_bytes.as_ref());
                    keep_as_read(&mut sweep, &far_reg_key, reg_bytes.as_ref());
                    remove_entry(&mut sweep, link, end, key, &far, &edge);
                    sweep.delete(edge.as_str());
                }
                _ => {}
            }
        }
        if stale {
            // Conditional: a pair linked again meanwhile keeps its entry.
            let _ = self.commit(sweep).await?;
        }
        Ok(Page {
            items,
            next: range.next.map(|p| page.next_cursor(&collection, p)),
            skipped,
        })
    }

    /// The number of entries in the link collection of the record at `key`
    /// (of this entity, on `end` of `link`).
    pub async fn count_linked(&self, link: &Link<'_>, end: End, key: &str) -> Result<i64> {
        self.store().counter(&link.count_key(end, key)).await
    }
}
