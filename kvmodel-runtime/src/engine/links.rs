//! Many-to-many links (`links: { tags: { to: Tag, inverse: posts } }`)
//! without a junction record.
//!
//! Each linked record has, per link it takes part in:
//!
//! - a **link collection** `{ns}:{space}#link:{name}:{record}`: one entry
//!   per linked record, the far record's key as member under the pair's
//!   edge key as sort key (so a listing is ordered by the far key and every
//!   entry names its edge);
//! - a **link count** `{ns}:{space}#nlink:{name}:{record}`: the number of
//!   entries in that collection, moved in the commit that adds or removes
//!   one;
//! - one **registry** `{ns}:{space}#links:{record}` per record: the names of
//!   its link collections and a random *incarnation* number, written by the
//!   first link of the record, read by every delete of the entity in the
//!   same read as the record, so a delete removes the record's link
//!   collections and counts whichever side declared the link.
//!
//! Each linked pair has an **edge** `{ns}:{from space}#edge:{name}:{from
//! record}:{to key}` holding the incarnations of both records it was
//! written for. An entry of a record's collection stands while the edge
//! holds that record's incarnation; link, unlink and the clean-up of stale
//! entries condition on the edge and both registries, so a count moves
//! exactly once per entry added or removed, whatever runs concurrently.
//!
//! Deleting a record removes its registry, collections and counts, not the
//! entries on the far side: those point to an incarnation that is gone, are
//! skipped by listings (which remove them, with their count and edge, in a
//! conditional commit) and removed by `reconcile`. A record created again
//! under the same key is a new incarnation: the old links do not come back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::codec::key::{Derived, Space};
use crate::engine::entity::{self, Entity};
use crate::engine::page::{ListRequest, Page, PageRequest};
use crate::engine::repo::{Engine, MAX_ATTEMPTS, backoff};
use crate::engine::skipped::Skipped;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::{Batch, Outcome, Planned};

/// A link between two entities, as both its ends see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link<'a> {
    /// The declaring entity's key space (`Post`).
    pub from: Space<'a>,
    /// The link's name on the declaring side (`tags`).
    pub name: &'a str,
    /// The far entity's key space (`Tag`).
    pub to: Space<'a>,
    /// The link's name on the far side (`posts`).
    pub inverse: &'a str,
}

/// The primary key arguments of an entity as one value, for the far end of
/// a link: the one argument of a key with one placeholder (`&str` for
/// `tag:{name}`), a tuple of them in template order for a composite key.
/// `#[derive(KvEntity)]` implements it for every entity with a key.
pub trait KeyArgs: Entity {
    /// The arguments.
    type Args<'a>;

    /// The record key they name.
    fn key_of(args: Self::Args<'_>) -> String;
}

/// Which end of a [`Link`] a record is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The declaring side (`Post` of `Post.links.tags`).
    From,
    /// The far side (`Tag`).
    To,
}

impl End {
    /// The other end.
    pub fn other(self) -> End {
        match self {
            End::From => End::To,
            End::To => End::From,
        }
    }
}

impl<'a> Link<'a> {
    /// The space and collection name of `end`.
    pub fn side(&self, end: End) -> (Space<'a>, &'a str) {
        match end {
            End::From => (self.from, self.name),
            End::To => (self.to, self.inverse),
        }
    }

    /// The link collection of the record at `key` on `end`.
    pub fn collection_key(&self, end: End, key: &str) -> String {
        let (space, name) = self.side(end);
        space.of_record(Derived::Link, name, key)
    }

    /// The link count of the record at `key` on `end`.
    pub fn count_key(&self, end: End, key: &str) -> String {
        let (space, name) = self.side(end);
        space.of_record(Derived::LinkCount, name, key)
    }

    /// The edge of the pair (`from_key`, `to_key`).
    pub fn edge_key(&self, from_key: &str, to_key: &str) -> String {
        format!(
            "{}:{to_key}",
            self.from.of_record(Derived::Edge, self.name, from_key)
        )
    }
}

/// The link registry of the record at `key` of the entity in `space`.
pub fn registry_key(space: Space<'_>, key: &str) -> String {
    space.of_record(Derived::Registry, "", key)
}

/// What a record's registry holds: the incarnation its link entries belong
/// to and the names of its link collections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    /// A random number chosen by the record's first link.
    pub incarnation: u64,
    /// The names of its link collections, sorted.
    pub links: Vec<String>,
}

impl Registry {
    /// Reads a stored registry.
    pub fn read(key: &str, bytes: &[u8]) -> Result<Registry> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::decode(
                key,
                "it is not a link registry; `kvmodel reconcile` rebuilds it",
                Some(Box::new(e)),
            )
        })
    }

    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// What an edge holds: the incarnations of the two records it was written
/// for, and their keys (for `verify`, which meets edges by a key scan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeValue {
    /// The incarnation of the declaring side's record.
    pub from: u64,
    /// The incarnation of the far side's record.
    pub to: u64,
    /// The declaring side's record key.
    pub from_key: String,
    /// The far side's record key.
    pub to_key: String,
    /// The declaring side's link registry.
    pub from_registry: String,
    /// The far side's link registry.
    pub to_registry: String,
    /// The link's name on the declaring side.
    pub name: String,
    /// The link's name on the far side.
    pub inverse: String,
}

impl EdgeValue {
    /// Reads a stored edge.
    pub fn read(key: &str, bytes: &[u8]) -> Result<EdgeValue> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::decode(
                key,
                "it is not a link edge; `kvmodel reconcile` removes it",
                Some(Box::new(e)),
            )
        })
    }

    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The incarnation of `end`.
    pub fn of(&self, end: End) -> u64 {
        match end {
            End::From => self.from,
            End::To => self.to,
        }
    }

    /// The link collection and count keys of `end`, spelled beside its
    /// registry.
    pub fn entry_keys(&self, end: End) -> Option<(String, String)> {
        let (registry, name) = match end {
            End::From => (&self.from_registry, &self.name),
            End::To => (&self.to_registry, &self.inverse),
        };
        let marker = format!("#{}:", Derived::Registry.as_str());
        let at = registry.find(&marker)?;
        let (head, rest) = (&registry[..at], &registry[at + marker.len()..]);
        let key = |kind: Derived| format!("{head}#{}:{name}:{rest}", kind.as_str());
        Some((key(Derived::Link), key(Derived::LinkCount)))
    }

    /// The record key and registry key of `end`.
    pub fn keys(&self, end: End) -> (&str, &str) {
        match end {
            End::From => (&self.from_key, &self.from_registry),
            End::To => (&self.to_key, &self.to_registry),
        }
    }
}

/// A stored value as read, for a condition on it: absent, or these bytes.
pub(crate) fn keep_as_read(b: &mut Batch, key: &str, read: Option<&Vec<u8>>) {
    match read {
        Some(bytes) => b.equals(key, bytes.clone()),
        None => b.absent(key),
    };
}

/// A registry as read: its bytes and what they hold.
pub(crate) type Read<T> = Option<(Vec<u8>, T)>;

pub(crate) fn read_registry(key: &str, value: Option<Vec<u8>>) -> Result<Read<Registry>> {
    value
        .map(|b| Registry::read(key, &b).map(|r| (b, r)))
        .transpose()
}

pub(crate) fn read_edge(key: &str, value: Option<Vec<u8>>) -> Result<Read<EdgeValue>> {
    value
        .map(|b| EdgeValue::read(key, &b).map(|r| (b, r)))
        .transpose()
}

/// Whether the entry of `end` stands: the edge holds the incarnation of
/// that end's record as its registry says.
pub fn stands(edge: Option<&EdgeValue>, registry: Option<&Registry>, end: End) -> bool {
    matches!((edge, registry), (Some(e), Some(r)) if e.of(end) == r.incarnation)
}

/// The registry that lists `name`, from the one read (a new incarnation
/// when there is none); `None` when the one read lists it already.
fn with_name(read: Option<&Registry>, name: &str) -> Option<Registry> {
    match read {
        Some(r) if r.links.iter().any(|n| n == name) => None,
        Some(r) => {
            let mut links = r.links.clone();
            links.push(name.to_owned());
            links.sort();
            Some(Registry {
                incarnation: r.incarnation,
                links,
            })
        }
        None => Some(Registry {
            incarnation: fastrand::u64(..),
            links: vec![name.to_owned()],
        }),
    }
}

/// Adds to `b` what removes the entry of `end` for the pair: the member
/// and one from the count.
fn remove_entry(b: &mut Batch, link: &Link<'_>, end: End, own: &str, far: &str, edge: &str) {
    let (collection, count) = (link.collection_key(end, own), link.count_key(end, own));
    remove_entry_at(b, &collection, &count, far, edge);
}

/// Adds to `b` what adds the entry of `end` for the pair.
fn add_entry(b: &mut Batch, link: &Link<'_>, end: End, own: &str, far: &str, edge: &str) {
    let (collection, count) = (link.collection_key(end, own), link.count_key(end, own));
    add_entry_at(b, &collection, &count, far, edge);
}

/// Removes the entry `far` under `edge` from `collection`, and one from
/// `count`.
pub(crate) fn remove_entry_at(b: &mut Batch, collection: &str, count: &str, far: &str, edge: &str) {
    b.remove(
        collection,
        edge.as_bytes().to_vec(),
        far.as_bytes().to_vec(),
    );
    b.incr(count, -1);
}

/// Adds the entry `far` under `edge` to `collection`, and one to `count`.
pub(crate) fn add_entry_at(b: &mut Batch, collection: &str, count: &str, far: &str, edge: &str) {
    b.add(
        collection,
        edge.as_bytes().to_vec(),
        far.as_bytes().to_vec(),
    );
    b.incr(count, 1);
}

/// The registries of a pair as written by a link: the one of `from`, and
/// the one of `to` (the same key for a record linked to itself).
struct Registries {
    from: Read<Registry>,
    to: Read<Registry>,
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
        let (rf, rt) = (
            registry_key(link.from, from_key),
            registry_key(link.to, to_key),
        );
        let edge = link.edge_key(from_key, to_key);
        let keys = vec![
            from_key.to_owned(),
            to_key.to_owned(),
            rf.clone(),
            rt.clone(),
            edge.clone(),
        ];
        for attempt in 0..MAX_ATTEMPTS {
            let (outcome, changed) = self
                .commit_after_read(&keys, |mut values, _| {
                    let edge_read = read_edge(&edge, values.pop().flatten())?;
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
                        from: read_registry(&rf, from_reg)?,
                        to: read_registry(&rt, to_reg)?,
                    };
                    let e = edge_read.as_ref().map(|(_, v)| v);
                    let from_stands = stands(e, regs.from.as_ref().map(|r| &r.1), End::From);
                    let to_stands = stands(e, regs.to.as_ref().map(|r| &r.1), End::To);
                    if from_stands && to_stands {
                        return Ok(Planned::Skip(false));
                    }
                    let mut b = Batch::new();
                    b.equals(from_key, from_rec).equals(to_key, to_rec);
                    keep_as_read(&mut b, &rf, regs.from.as_ref().map(|r| &r.0));
                    keep_as_read(&mut b, &rt, regs.to.as_ref().map(|r| &r.0));
                    keep_as_read(&mut b, &edge, edge_read.as_ref().map(|r| &r.0));
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
                            &rf,
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
                        add_entry(&mut b, link, End::From, from_key, to_key, &edge);
                    }
                    if !to_stands {
                        add_entry(&mut b, link, End::To, to_key, from_key, &edge);
                    }
                    Ok(Planned::Commit(b, true))
                })
                .await?;
            match outcome {
                Outcome::Applied => return Ok(changed),
                Outcome::Failed { .. } => backoff(attempt).await,
            }
        }
        Err(Error::Conflict {
            entity: E::META.name,
            key: from_key.to_owned(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Unlinks the records at `from_key` (this entity) and `to_key`, both
    /// directions and both counts in one commit; `true` when an entry was
    /// removed. Either record may be gone.
    pub async fn unlink(&self, link: &Link<'_>, from_key: &str, to_key: &str) -> Result<bool> {
        let (rf, rt) = (
            registry_key(link.from, from_key),
            registry_key(link.to, to_key),
        );
        let edge = link.edge_key(from_key, to_key);
        let keys = vec![rf.clone(), rt.clone(), edge.clone()];
        for attempt in 0..MAX_ATTEMPTS {
            let (outcome, changed) = self
                .commit_after_read(&keys, |mut values, _| {
                    let Some(edge_read) = read_edge(&edge, values.pop().flatten())? else {
                        return Ok(Planned::Skip(false));
                    };
                    let to_reg = read_registry(&rt, values.pop().flatten())?;
                    let from_reg = read_registry(&rf, values.pop().flatten())?;
                    let e = Some(&edge_read.1);
                    let from_stands = stands(e, from_reg.as_ref().map(|r| &r.1), End::From);
                    let to_stands = stands(e, to_reg.as_ref().map(|r| &r.1), End::To);
                    let mut b = Batch::new();
                    b.equals(edge.as_str(), edge_read.0.clone());
                    keep_as_read(&mut b, &rf, from_reg.as_ref().map(|r| &r.0));
                    keep_as_read(&mut b, &rt, to_reg.as_ref().map(|r| &r.0));
                    b.delete(edge.as_str());
                    if from_stands {
                        remove_entry(&mut b, link, End::From, from_key, to_key, &edge);
                    }
                    if to_stands {
                        remove_entry(&mut b, link, End::To, to_key, from_key, &edge);
                    }
                    Ok(Planned::Commit(b, from_stands || to_stands))
                })
                .await?;
            match outcome {
                Outcome::Applied => return Ok(changed),
                Outcome::Failed { .. } => backoff(attempt).await,
            }
        }
        Err(Error::Conflict {
            entity: E::META.name,
            key: from_key.to_owned(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// A page of the records of `F` linked to the record at `key` (of this
    /// entity, on `end` of `link`), ordered by their keys: the collection
    /// page with its records, then their registries and edges (two round
    /// trips). An entry whose far record is gone, or is another
    /// incarnation than the one linked, is not listed and is removed with
    /// its count and edge (conditionally: a pair linked again meanwhile
    /// keeps it). A record that cannot be decoded is reported in
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
        for m in &range.members {
            let far = String::from_utf8_lossy(&m.member);
            keys.push(String::from_utf8_lossy(&m.sort).into_owned());
            keys.push(registry_key(far_space, &far));
        }
        let mut read = self.store().get_many(&keys).await?.into_iter();
        let own = read_registry(&own_reg, read.next().flatten())?;
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

/// The link collection a link count key counts: `…#nlink:…` →
/// `…#link:…`; `None` for another key.
pub fn collection_of_count(count_key: &str) -> Option<String> {
    let marker = format!("#{}:", Derived::LinkCount.as_str());
    let at = count_key.find(&marker)?;
    Some(format!(
        "{}#{}:{}",
        &count_key[..at],
        Derived::Link.as_str(),
        &count_key[at + marker.len()..]
    ))
}

/// Adds to a delete's batch what removes the link collections, counts and
/// registry of the record at `key` of the entity in `space`, given its
/// registry as read with the record (`None`: it has none).
pub(crate) fn delete_links(
    b: &mut Batch,
    space: Space<'_>,
    key: &str,
    registry: Option<Vec<u8>>,
) -> Result<()> {
    let reg_key = registry_key(space, key);
    let Some(bytes) = registry else {
        b.absent(reg_key.as_str());
        return Ok(());
    };
    let reg = Registry::read(&reg_key, &bytes)?;
    b.equals(reg_key.as_str(), bytes);
    b.delete(reg_key.as_str());
    let mut names: BTreeMap<&str, ()> = BTreeMap::new();
    for name in &reg.links {
        if names.insert(name, ()).is_none() {
            b.delete(space.of_record(Derived::Link, name, key));
            b.delete(space.of_record(Derived::LinkCount, name, key));
        }
    }
    Ok(())
}
