//! Referential actions: what deleting a parent record does to the children
//! of a relation declared `on_delete: restrict | cascade`.
//!
//! A child's relation is kept by three entries written in the child's own
//! commits: its member in the relation's collection, a count of the
//! parent's children (a counter in the child's key space, named after the
//! relation: `{relation}.children`), and, when a write gives the child a
//! parent, a condition that the parent record exists. The parent's delete
//! conditions on that count holding exactly the children it expects to
//! leave behind (none, but for the cases below), so a child created while
//! the parent is deleted either lands first (and the delete sees it) or
//! finds the parent gone (and is refused with [`Error::MissingParent`]):
//! never a child under a deleted parent. A record cannot name itself as
//! its parent ([`Error::OwnParent`], nothing written).
//!
//! - `restrict`: the delete fails with [`Error::Restricted`] while the count
//!   is not zero, writing nothing. A record that names itself (stored
//!   before such writes were refused) is not its own child: its delete
//!   expects its own place in the count, and takes it away with the count.
//! - `cascade`: the delete deletes the children first, then the parent.
//!
//! # The cascade's one rule: a worklist, depth first, one record per commit
//!
//! A delete keeps a stack of the records being deleted, the *path*:
//! the record asked for at the bottom, each above it a child of the one
//! below. The top record's cascade children are listed [`CASCADE_PAGE`] at
//! a time (after a sweep of the child entity's due expiries, so expired
//! children do not count); each listed child is pushed in turn, and its own
//! children go before it. When a record has no child left to list, it is
//! deleted in a commit of its own with its full upkeep (claims, index and
//! relation members, counters, links, expiry receipt), conditioned on its
//! counts of children, and popped. So a parent goes only after its
//! children, every commit holds one record, and the stack holds, per level,
//! one record key and at most a page of its children's keys: memory grows
//! with depth × page, never with the number of records, and no call stack
//! grows at all ([`Kind`](crate::engine::relation::Kind) erases each
//! entity's type, so the worklist is one loop over boxed steps of any
//! entity).
//!
//! A record listed as a child is followed only while it still names the
//! parent it was listed under: the worklist reads it again before each
//! listing of its own children, and its delete conditions on the record as
//! read, which names that parent. One an `update` moved to another parent
//! meanwhile is out of the tree: it is left, with what is under it.
//!
//! A child that comes meanwhile fails the count's condition: the record's
//! children are listed again (at most
//! [`MAX_ATTEMPTS`](crate::engine::repo::MAX_ATTEMPTS) times, then
//! [`Error::Conflict`]). A record a cascade meets that cannot be decoded
//! stops it with an error pointing to `purge`.
//!
//! **Cut short** (the process dies, a commit fails, a `restrict` further
//! down refuses), a cascade leaves what it deleted deleted and the rest
//! whole: every record left still has its entries and counts, and every
//! listing and counter is true, so `verify` finds nothing to repair and
//! `reconcile` nothing to finish. Running the delete again finishes it:
//! it lists what is left and goes on.
//!
//! **Cycles.** A record whose cascade children include a record already on
//! the path (x's parent is y and y's is x, or a longer loop; or a record
//! that is its own parent) does not push it again: the record closing the
//! loop is deleted expecting exactly those children in its count (they are
//! being deleted further down the stack), and its count is left to them;
//! each one's delete takes its own place away, and once the last is gone
//! the count, now 0, is removed. So a cycle ends with every record of it
//! deleted; cut short within a cycle, a record may outlive its parent (and
//! that parent's count may stay at 0, which `verify` reads as no count),
//! and the next delete of it finishes the rest.
//!
//! Layer: roles: the cascade drives [`Engine`](crate::engine::Engine) through
//! its methods; its data ([`relation`](crate::engine::relation)) is below
//! [`entity`](crate::engine::entity).

use crate::engine::relation::ParentFact;
use crate::error::{Error, Result};
use crate::store::batch::Batch;

mod worklist;

pub use crate::schema::OnDelete;
pub(crate) use worklist::delete_tree;

/// How many children a cascade reads per page; each is deleted in a commit
/// of its own.
pub const CASCADE_PAGE: usize = 64;

/// Refuses a record at `key` that names itself among `parents` (the parents
/// of its new image): [`Error::OwnParent`].
pub(crate) fn refuse_own_parent(
    entity: &'static str,
    key: &str,
    parents: &[ParentFact],
) -> Result<()> {
    match parents.iter().find(|p| p.key == key) {
        Some(p) => Err(Error::OwnParent {
            entity,
            key: key.to_owned(),
            relation: p.relation,
            on_delete: p.on_delete.as_str(),
        }),
        None => Ok(()),
    }
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

/// A decode error of the record at `key` that a delete met, pointing to
/// `purge`.
pub(crate) fn purge_hint(key: &str, e: Error) -> Error {
    match e {
        Error::Decode {
            key: k,
            reason,
            source,
        } => Error::Decode {
            key: k,
            reason: format!(
                "{reason}; so its entries cannot be computed and `delete` leaves it: `purge` \
                 removes it with the entries found to point to it"
            ),
            source,
        },
        Error::FutureVersion { .. } => e,
        other => Error::decode(key, other, None),
    }
}
