//! Referential actions: what deleting a parent record does to the children
//! of a relation declared `on_delete: restrict | cascade`.
//!
//! A child's relation is kept by three entries written in the child's own
//! commits: its member in the relation's collection, a count of the
//! parent's children (a counter in the child's key space, named after the
//! relation: `{relation}.children`), and, when a write gives the child a
//! parent, a condition that the parent record exists. The parent's delete
//! conditions on that count being zero, so a child created while the
//! parent is deleted either lands first (and the delete sees it) or finds
//! the parent gone (and is refused with [`Error::MissingParent`]): never a
//! child under a deleted parent.
//!
//! - `restrict`: the delete fails with [`Error::Restricted`] while the count
//!   is not zero, writing nothing.
//! - `cascade`: the delete first deletes the children listed in the
//!   collection, each in its own commit with its full upkeep (its indexes,
//!   counters, claims, and its own dependents), [`CASCADE_PAGE`] at a time,
//!   then the parent conditioned on the count being zero. The parent goes
//!   last, so a delete interrupted midway leaves a parent with fewer
//!   children, every listing and counter true; running it again finishes.

use std::future::Future;
use std::pin::Pin;

use crate::engine::entity::Entity;
use crate::engine::page::PageRequest;
use crate::engine::repo::Engine;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::batch::Batch;

/// How many children a cascade reads per page; each is deleted in a commit
/// of its own.
pub const CASCADE_PAGE: usize = 64;

/// What deleting a parent does to the children of a relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDelete {
    /// Nothing: the children stay (the default).
    Keep,
    /// The delete fails while children exist.
    Restrict,
    /// The delete deletes the children first.
    Cascade,
}

impl OnDelete {
    /// Whether the parent's delete acts on the children.
    pub const fn enforced(self) -> bool {
        !matches!(self, OnDelete::Keep)
    }

    /// The schema spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            OnDelete::Keep => "keep",
            OnDelete::Restrict => "restrict",
            OnDelete::Cascade => "cascade",
        }
    }
}

/// A parent a child record names in a relation that enforces `on_delete`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentFact {
    /// The relation.
    pub relation: &'static str,
    /// The parent entity.
    pub entity: &'static str,
    /// The parent's record key.
    pub key: String,
    /// The relation's action.
    pub on_delete: OnDelete,
    /// The record version that introduced the relation.
    pub since: u32,
}

/// A relation of another entity to one parent record that its delete
/// enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependentFact {
    /// The child entity.
    pub entity: &'static str,
    /// The child's relation.
    pub relation: &'static str,
    /// The relation's action.
    pub on_delete: OnDelete,
    /// The collection of this parent's children.
    pub collection: String,
    /// The count of this parent's children.
    pub children: String,
}

/// A boxed, sendable future: what a cascade step returns, so that entities
/// whose deletes cascade into each other have futures of finite size.
pub type CascadeFuture<'a> = Pin<Box<dyn Future<Output = Result<usize>> + Send + 'a>>;

/// Whether two names are equal, in a constant.
pub const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `list` (a parent's `dependent(…)` entries, by child type name
/// and relation) names `entity`'s relation `relation`, in a constant.
pub const fn names_dependent(list: &[(&str, &str)], entity: &str, relation: &str) -> bool {
    let mut i = 0;
    while i < list.len() {
        if same(list[i].0, entity) && same(list[i].1, relation) {
            return true;
        }
        i += 1;
    }
    false
}

/// The action of relation `relation` to `parent` in `list` (a child's
/// [`Entity::ENFORCED`]), in a constant; `Keep` when it has none.
pub const fn on_delete_of(
    list: &[(&str, &str, OnDelete)],
    relation: &str,
    parent: &str,
) -> OnDelete {
    let mut i = 0;
    while i < list.len() {
        if same(list[i].0, relation) && same(list[i].1, parent) {
            return list[i].2;
        }
        i += 1;
    }
    OnDelete::Keep
}

/// Adds to `b` a condition that each parent `new` names and `old` did not
/// exists; returns them with the index of their condition, so a failure
/// maps back to its parent.
pub(crate) fn require_parents(
    b: &mut Batch,
    old: &[ParentFact],
    new: Vec<ParentFact>,
) -> Vec<(usize, ParentFact)> {
    let mut out = Vec::new();
    for p in new {
        if old
            .iter()
            .any(|o| o.key == p.key && o.relation == p.relation)
        {
            continue;
        }
        out.push((b.conditions().len(), p.clone()));
        b.present(p.key);
    }
    out
}

/// The error of a failed condition `index` when it is a parent's.
pub(crate) fn missing_parent(
    entity: &'static str,
    parents: &[(usize, ParentFact)],
    index: usize,
) -> Option<Error> {
    let (_, p) = parents.iter().find(|(i, _)| *i == index)?;
    Some(parent_error(entity, p))
}

/// The error of a child of `entity` that names the missing parent `p`.
pub(crate) fn parent_error(entity: &'static str, p: &ParentFact) -> Error {
    Error::MissingParent {
        entity,
        relation: p.relation,
        parent_entity: p.entity,
        parent: p.key.clone(),
        on_delete: p.on_delete.as_str(),
    }
}

/// One step of a cascade: deletes the children of `C` listed first in
/// `collection` (at most `limit`), each with its full upkeep in its own
/// commit; returns how many entries it met (0 when none is left). Entries
/// of records that are gone are swept by the listing. When `C` expires,
/// its due expiries are swept first, so expired children stop counting.
/// With `delete: false` only that sweep is done (a restricted delete
/// about to fail checks that the children it counts are live).
pub async fn cascade_page<C: Entity, S: Store>(
    store: &S,
    collection: &str,
    limit: usize,
    delete: bool,
) -> Result<usize> {
    let engine = Engine::<C, S>::new(store.clone());
    let mut swept = 0;
    if C::META.ttl.is_some() {
        let s = engine.sweep_expired(limit.max(1)).await?;
        swept = usize::from(s.more) + usize::try_from(s.expired).unwrap_or(usize::MAX);
    }
    if !delete {
        return Ok(swept);
    }
    let page = engine
        .list(collection, PageRequest::new(limit.max(1)).into())
        .await?;
    if let Some(s) = page.skipped.first() {
        return Err(Error::decode(
            s.key.clone(),
            format!(
                "a cascade cannot delete this {} (it does not decode, so its entries are unknown); \
                 `purge` it, then delete the parent again",
                C::META.name
            ),
            None,
        ));
    }
    let met = page.items.len() + usize::from(page.next.is_some());
    for child in &page.items {
        engine.delete(&child.record_key()).await?;
    }
    Ok(met + swept)
}
