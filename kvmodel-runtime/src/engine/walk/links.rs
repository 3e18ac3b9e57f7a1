//! The link keys of a walk (`links:`), judged from what they hold: an edge
//! names both records and their registries, a collection entry names its
//! edge, a registry names its record's collections. So the walk needs no
//! description of the links, and a far side that declares none is walked
//! like the declaring one.
//!
//! - a **link collection** must belong to a record whose registry lists
//!   it; each entry must stand (its edge holds the owner's incarnation)
//!   and reach a live far record of the incarnation linked. Anything else
//!   is an orphan member; `reconcile` removes it with its edge when no
//!   entry needs that any more;
//! - a **link count** must equal its collection's size (checked with the
//!   counters, so repairs made meanwhile are counted);
//! - an **edge** no entry stands for is an orphan (reported as an orphan
//!   member of the edge key); an entry an edge stands for that is missing
//!   from its collection is a missing member, which `reconcile` adds;
//! - a **registry** whose record is gone is an orphan; `reconcile` removes
//!   it with the collections and counts it names.
//!
//! A record that expired and awaits the sweep (its receipt is there) is
//! judged as live on both sides: its collections, counts, registry and the
//! far entries naming it are the sweep's to remove (see
//! `engine::links::expiry`), and its walk counts it as `expired`.

use super::{WalkState, Walker, inward::page};
use crate::codec::key::Derived;
use crate::engine::def::EntityDef;
use crate::engine::links::expiry::receipt_of_registry;
use crate::engine::links::{
    End, Read, Registry, add_entry_at, keep_as_read, read_edge, read_registry, registry_key,
    remove_entry_at, stands,
};
use crate::engine::repo::commit;
use crate::engine::skipped::Skipped;
use crate::error::Result;
use crate::store::batch::Batch;
use crate::store::{RangeRequest, Store};

/// The end of the edge at `edge_key` that the collection `name` of
/// `owner` in the walked entity's space is: the declaring end when the
/// edge is spelled from it.
fn end_of<D: EntityDef>(def: &D, name: &str, owner: &str, edge_key: &str) -> End {
    let prefix = def.space().of_record(Derived::Edge, name, owner);
    if edge_key
        .strip_prefix(&prefix)
        .is_some_and(|r| r.starts_with(':'))
    {
        End::From
    } else {
        End::To
    }
}

impl<D: EntityDef, S: Store> Walker<'_, D, S> {
    /// Reads a registry, reporting one that does not decode.
    fn registry(
        &self,
        state: &mut WalkState,
        key: &str,
        bytes: Option<Vec<u8>>,
    ) -> Option<Read<Registry>> {
        match read_registry(key, bytes) {
            Ok(r) => Some(r),
            Err(e) => {
                state.drift.undecodable.push(Skipped::new(key, e));
                None
            }
        }
    }

    /// A link collection `name` at `collection`: its owner and every entry.
    pub(crate) async fn walk_link_collection(
        &self,
        state: &mut WalkState,
        collection: &str,
        name: &str,
    ) -> Result<()> {
        let space = self.def.space();
        let Some(owner) = space.record_of(Derived::Link, name, collection) else {
            return Ok(());
        };
        let count_key = space.of_record(Derived::LinkCount, name, &owner);
        state.expected.entry(count_key.clone()).or_insert(0);
        let reg_key = registry_key(space, &owner);
        // Read as the entries are (through the walk's view, where it has
        // one), and every repair conditions on what it read: a record
        // deleted and made again since the view has another registry, so
        // no entry of its earlier life is removed from its new collection.
        let mut read = self
            .reader()
            .get_many(&[owner.clone(), reg_key.clone(), space.receipt_key(&owner)])
            .await?
            .into_iter();
        let (record, reg_bytes, receipt) = (
            read.next().flatten(),
            read.next().flatten(),
            read.next().flatten(),
        );
        // An expired owner awaiting the sweep keeps its links until then.
        let live = record.is_some() || receipt.is_some();
        let Some(reg) = self.registry(state, &reg_key, reg_bytes.clone()) else {
            return Ok(());
        };
        let listed = reg
            .as_ref()
            .is_some_and(|(_, r)| r.links.iter().any(|n| n == name));
        let Some((_, reg)) = reg.filter(|_| live && listed) else {
            // No record, or one that does not have this collection.
            state
                .drift
                .orphan_members
                .push((collection.to_owned(), owner.clone()));
            if state.repair {
                let mut fix = Batch::new();
                keep_as_read(&mut fix, &owner, record.as_ref());
                keep_as_read(&mut fix, &reg_key, reg_bytes.as_ref());
                fix.delete(collection).delete(count_key.as_str());
                if commit(self.store, fix).await?.is_applied() {
                    // Gone with its collection: nothing left to judge.
                    state.expected.remove(count_key.as_str());
                }
            }
            return Ok(());
        };
        let mut after = None;
        loop {
            let range = page(&*self.reader(), collection, after.take()).await?;
            let edge_keys: Vec<String> = range
                .members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.sort).into_owned())
                .collect();
            let edges = self.reader().get_many(&edge_keys).await?;
            let mut checked = Vec::with_capacity(edges.len());
            for (key, bytes) in edge_keys.iter().zip(edges) {
                match read_edge(key, bytes) {
                    Ok(e) => checked.push(Some(e)),
                    Err(err) => {
                        state.drift.undecodable.push(Skipped::new(key.clone(), err));
                        checked.push(None);
                    }
                }
            }
            // The far records, their registries and their receipts, as the
            // edges name them.
            let mut far_keys = Vec::new();
            for ((m, e), edge_key) in range.members.iter().zip(&checked).zip(&edge_keys) {
                let far = String::from_utf8_lossy(&m.member).into_owned();
                let end = end_of(self.def, name, &owner, edge_key);
                let far_reg = match e {
                    Some(Some((_, v))) => v.keys(end.other()).1.to_owned(),
                    _ => registry_key(space, &far),
                };
                let far_receipt =
                    receipt_of_registry(&far_reg).unwrap_or_else(|| space.receipt_key(&far));
                far_keys.extend([far, far_reg, far_receipt]);
            }
            let mut far_read = self.reader().get_many(&far_keys).await?.into_iter();
            for ((m, edge_key), e) in range.members.iter().zip(&edge_keys).zip(checked) {
                let (far_rec, far_reg_bytes, far_receipt) = (
                    far_read.next().flatten(),
                    far_read.next().flatten(),
                    far_read.next().flatten(),
                );
                // A far record that expired and awaits the sweep (which
                // removes this entry) is judged as live.
                let far_live = far_rec.is_some() || far_receipt.is_some();
                let Some(e) = e else { continue };
                let far = String::from_utf8_lossy(&m.member).into_owned();
                let end = end_of(self.def, name, &owner, edge_key);
                let ev = e.as_ref().map(|(_, v)| v);
                let far_reg_key = ev.map(|v| v.keys(end.other()).1.to_owned());
                let far_reg = match &far_reg_key {
                    Some(k) => self.registry(state, k, far_reg_bytes.clone()).flatten(),
                    None => None,
                };
                let own_stands = stands(ev, Some(&reg), end);
                let far_stands = stands(ev, far_reg.as_ref().map(|r| &r.1), end.other());
                if own_stands && far_stands && far_live {
                    continue;
                }
                state
                    .drift
                    .orphan_members
                    .push((collection.to_owned(), far.clone()));
                if state.repair {
                    let mut fix = Batch::new();
                    keep_as_read(&mut fix, &reg_key, reg_bytes.as_ref());
                    keep_as_read(&mut fix, edge_key, e.as_ref().map(|(b, _)| b));
                    if let Some(k) = &far_reg_key {
                        keep_as_read(&mut fix, k, far_reg_bytes.as_ref());
                    }
                    remove_entry_at(&mut fix, collection, &count_key, &far, edge_key);
                    // No entry needs the edge once the far side no longer
                    // stands either.
                    if e.is_some() && !far_stands {
                        fix.delete(edge_key.as_str());
                    }
                    let _ = commit(self.store, fix).await?;
                }
            }
            match range.next {
                Some(n) => after = Some(n),
                None => return Ok(()),
            }
        }
    }

    /// Edges no entry stands for, and entries an edge stands for that are
    /// missing from their collection.
    pub(crate) async fn check_edges(&self, state: &mut WalkState, edges: &[String]) -> Result<()> {
        if edges.is_empty() {
            return Ok(());
        }
        let values = self.reader().get_many(edges).await?;
        for (edge_key, bytes) in edges.iter().zip(values) {
            let value = match read_edge(edge_key, bytes) {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(err) => {
                    state
                        .drift
                        .undecodable
                        .push(Skipped::new(edge_key.clone(), err));
                    continue;
                }
            };
            let (bytes, ev) = value;
            let regs = self
                .store
                .get_many(&[ev.from_registry.clone(), ev.to_registry.clone()])
                .await?;
            let mut regs = regs.into_iter();
            let (from_bytes, to_bytes) = (regs.next().flatten(), regs.next().flatten());
            let (Some(from_reg), Some(to_reg)) = (
                self.registry(state, &ev.from_registry, from_bytes.clone()),
                self.registry(state, &ev.to_registry, to_bytes.clone()),
            ) else {
                continue;
            };
            let standing: Vec<End> = [End::From, End::To]
                .into_iter()
                .filter(|end| {
                    let reg = match end {
                        End::From => &from_reg,
                        End::To => &to_reg,
                    };
                    stands(Some(&ev), reg.as_ref().map(|r| &r.1), *end)
                })
                .collect();
            let mut fix = Batch::new();
            fix.equals(edge_key.as_str(), bytes.clone());
            keep_as_read(&mut fix, &ev.from_registry, from_bytes.as_ref());
            keep_as_read(&mut fix, &ev.to_registry, to_bytes.as_ref());
            if standing.is_empty() {
                state
                    .drift
                    .orphan_members
                    .push((edge_key.clone(), ev.to_key.clone()));
                if state.repair {
                    fix.delete(edge_key.as_str());
                    let _ = commit(self.store, fix).await?;
                }
                continue;
            }
            let mut missing = false;
            for end in standing {
                let Some((collection, count)) = ev.entry_keys(end) else {
                    continue;
                };
                let far = ev.keys(end.other()).0;
                if self.has_entry(&collection, edge_key, far).await? {
                    continue;
                }
                state
                    .drift
                    .missing_members
                    .push((collection.clone(), far.to_owned()));
                missing = true;
                add_entry_at(&mut fix, &collection, &count, far, edge_key);
            }
            if missing && state.repair {
                let _ = commit(self.store, fix).await?;
            }
        }
        Ok(())
    }

    /// Whether the collection holds `member` under `sort`.
    async fn has_entry(&self, collection: &str, sort: &str, member: &str) -> Result<bool> {
        let mut req = RangeRequest::all(2);
        req.lower = std::ops::Bound::Included(sort.as_bytes().to_vec());
        req.upper = std::ops::Bound::Included(sort.as_bytes().to_vec());
        let range = self.reader().range(collection, req).await?;
        Ok(range.members.iter().any(|m| m.member == member.as_bytes()))
    }

    /// Registries whose record is gone: removed by `reconcile` with the
    /// collections and counts they name.
    pub(crate) async fn check_registries(
        &self,
        state: &mut WalkState,
        registries: &[String],
    ) -> Result<()> {
        let space = self.def.space();
        for reg_key in registries {
            let Some(owner) = space.record_of(Derived::Registry, "", reg_key) else {
                continue;
            };
            let mut read = self
                .store
                .get_many(&[owner.clone(), reg_key.clone(), space.receipt_key(&owner)])
                .await?
                .into_iter();
            let (record, bytes) = (read.next().flatten(), read.next().flatten());
            // Kept until the sweep of an expired record (its receipt).
            let (None, Some(bytes), None) = (record, bytes, read.next().flatten()) else {
                continue;
            };
            state
                .drift
                .orphan_members
                .push((reg_key.clone(), owner.clone()));
            if state.repair {
                let mut fix = Batch::new();
                fix.absent(owner.as_str());
                crate::engine::links::delete_links(&mut fix, space, &owner, Some(bytes))?;
                let gone: Vec<String> = fix
                    .ops()
                    .iter()
                    .filter(|op| matches!(op, crate::store::Op::Delete { .. }))
                    .map(|op| op.key().to_owned())
                    .collect();
                if commit(self.store, fix).await?.is_applied() {
                    // Counts deleted with their collections: nothing left
                    // to judge.
                    for key in gone {
                        state.expected.remove(&key);
                    }
                }
            }
        }
        Ok(())
    }
}
