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
//!
//! A record that expires keeps its links, without a TTL, until the sweep
//! of its receipt removes them with the far entries naming it; until then
//! reads skip them ([`expiry`]).
//!
//! Layer: write parts: above the core, below the roles (transactions, deletes,
//! the sweep) and the walks that use its keys and plans.

pub mod expiry;
pub(crate) mod ops;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::codec::key::{Derived, DerivedKey, Space};
use crate::engine::entity::Entity;
use crate::error::{Error, Result};
use crate::store::batch::Batch;

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

/// The keys of one pair of a link: both records, their registries and the
/// pair's edge, which `link` and `unlink` read and write (in and out of a
/// transaction).
#[derive(Debug, Clone)]
pub(crate) struct PairKeys<'a> {
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) from_reg: String,
    pub(crate) to_reg: String,
    pub(crate) edge: String,
}

impl<'a> PairKeys<'a> {
    pub(crate) fn new(link: &Link<'_>, from: &'a str, to: &'a str) -> Self {
        PairKeys {
            from,
            to,
            from_reg: registry_key(link.from, from),
            to_reg: registry_key(link.to, to),
            edge: link.edge_key(from, to),
        }
    }

    /// What a link reads, in this order: both records, both registries,
    /// the edge.
    pub(crate) fn link_reads(&self) -> Vec<String> {
        let mut keys = vec![self.from.to_owned(), self.to.to_owned()];
        keys.extend(self.unlink_reads());
        keys
    }

    /// What an unlink reads, in this order: both registries, the edge.
    pub(crate) fn unlink_reads(&self) -> Vec<String> {
        vec![
            self.from_reg.clone(),
            self.to_reg.clone(),
            self.edge.clone(),
        ]
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
        read_json(
            key,
            bytes,
            "it is not a link registry; `kvmodel reconcile` rebuilds it",
        )
    }

    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A registry or an edge as stored (JSON); `what` says what else it is.
fn read_json<T: serde::de::DeserializeOwned>(key: &str, bytes: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::decode(key, what, Some(Box::new(e))))
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
        read_json(
            key,
            bytes,
            "it is not a link edge; `kvmodel reconcile` removes it",
        )
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
        let registry = DerivedKey::parse(registry).filter(|k| k.kind == Derived::Registry)?;
        Some((
            registry.beside(Derived::Link, name),
            registry.beside(Derived::LinkCount, name),
        ))
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
pub(super) fn with_name(read: Option<&Registry>, name: &str) -> Option<Registry> {
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
pub(super) fn remove_entry(
    b: &mut Batch,
    link: &Link<'_>,
    end: End,
    own: &str,
    far: &str,
    edge: &str,
) {
    let (collection, count) = (link.collection_key(end, own), link.count_key(end, own));
    remove_entry_at(b, &collection, &count, far, edge);
}

/// Adds to `b` what adds the entry of `end` for the pair.
pub(super) fn add_entry(
    b: &mut Batch,
    link: &Link<'_>,
    end: End,
    own: &str,
    far: &str,
    edge: &str,
) {
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

/// The link collection a link count key counts: `…#nlink:…` →
/// `…#link:…`; `None` for another key.
pub fn collection_of_count(count_key: &str) -> Option<String> {
    let count = DerivedKey::parse(count_key).filter(|k| k.kind == Derived::LinkCount)?;
    Some(count.beside(Derived::Link, ""))
}

/// The registry of the record whose link count is at `count_key` (the
/// count is `…#nlink:{name}:{record}`, the registry `…#links:{record}`);
/// `None` for any other key.
pub(crate) fn registry_of_count(count_key: &str) -> Option<String> {
    let count = DerivedKey::parse(count_key).filter(|k| k.kind == Derived::LinkCount)?;
    let (_, record) = count.rest.split_once(':')?;
    Some(
        DerivedKey {
            rest: record,
            ..count
        }
        .beside(Derived::Registry, ""),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_count_names_its_records_registry() {
        let posts = Space::new("lnk", "post");
        for record in ["lnk:post:p1", "lnk:post:a:b", "lnk:post:{x}"] {
            let count = posts.of_record(Derived::LinkCount, "tags", record);
            assert_eq!(
                registry_of_count(&count),
                Some(registry_key(posts, record)),
                "{count}"
            );
        }
        assert_eq!(registry_of_count("lnk:post:p1"), None);
        assert_eq!(
            registry_of_count(&posts.of_record(Derived::Counter, "total", "lnk:post:p1")),
            None
        );
    }
}
