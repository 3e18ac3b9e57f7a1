//! The plain data of relations that enforce `on_delete`, which an
//! [`Entity`](crate::engine::entity::Entity) names and the cascade of
//! [`on_delete`](crate::engine::on_delete) walks: the parent a record
//! names ([`ParentFact`]), the children a parent's delete enforces
//! ([`DependentFact`]), the constant helpers generated code uses to match
//! them, and the type-erased entity of a cascade's worklist ([`Kind`]),
//! whose steps the worklist fills in.
//!
//! Layer: data, below [`entity`](crate::engine::entity).

use std::future::Future;
use std::pin::Pin;

use crate::engine::page::Cursor;
use crate::error::Result;
use crate::schema::OnDelete;

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
/// [`Entity::ENFORCED`](crate::engine::entity::Entity::ENFORCED)), in a constant; `Keep` when it has none.
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

/// A boxed, sendable future of one step the worklist takes on a record:
/// the futures of every entity have one size, whatever cascades into what.
pub type Step<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// The entity of a record on a cascade's worklist, its type erased: the
/// steps a delete's worklist takes on records of it, as functions of the entity
/// and store types. Generated code names one per dependent
/// ([`Entity::dependent_kind`](crate::engine::entity::Entity::dependent_kind):
/// `Kind::<S>::of::<Post>()`).
pub struct Kind<S> {
    pub(crate) name: &'static str,
    pub(crate) cascades: bool,
    /// The dependents of the record at a key (`None`: no record).
    pub(crate) dependents: for<'a> fn(&'a S, &'a str) -> Step<'a, Option<Vec<DependentFact>>>,
    /// The entity of the children of dependent number `i`.
    pub(crate) dependent: fn(usize) -> Option<Kind<S>>,
    /// A page of this entity's records in a collection, after a sweep of
    /// its due expiries.
    pub(crate) children: for<'a> fn(&'a S, &'a str, Option<Cursor>) -> Step<'a, Children>,
    /// A sweep of this entity's due expiries.
    pub(crate) sweep: for<'a> fn(&'a S) -> Step<'a, ()>,
    /// Whether the record at a key is there and still names a parent
    /// ([`Under`]): a record moved to another parent is out of the tree.
    pub(crate) names: for<'a> fn(&'a S, &'a str, (&'a str, &'static str)) -> Step<'a, bool>,
    /// One attempt at deleting the record at a key, a child of the parent
    /// it is [`Under`] on the path (none for the record the delete started
    /// from).
    pub(crate) delete: for<'a> fn(&'a S, &'a str, UnderRef<'a>, &'a [OnPath]) -> Step<'a, Own>,
}

/// An [`Under`] borrowed, or none (the record the delete started from).
pub(crate) type UnderRef<'a> = Option<(&'a str, &'static str)>;

/// The parent a record a cascade reached must still name for the cascade
/// to go on with it: the parent's key and the record's relation to it.
pub(crate) type Under = (String, &'static str);

/// A cascade dependent of a record: its number, the collection of the
/// record's children, and the children's relation.
pub(crate) type Cascade = (usize, String, &'static str);

impl<S> Clone for Kind<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Kind<S> {}

impl<S> std::fmt::Debug for Kind<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Kind").field(&self.name).finish()
    }
}

/// A child record a cascade listed: its key, and its own cascade
/// dependents (read from the record the listing decoded).
pub(crate) struct Child {
    pub(crate) key: String,
    pub(crate) cascades: Vec<Cascade>,
}

/// A page of child records a cascade lists.
pub(crate) struct Children {
    pub(crate) children: Vec<Child>,
    pub(crate) next: Option<Cursor>,
    /// Whether the sweep before the listing expired records or left due
    /// ones: then an empty page does not yet mean no child is left.
    pub(crate) swept: bool,
}

/// Children of a record, in the collection of its dependent number
/// `dependent`, that are on the path already (further down the stack,
/// nearer the record the delete started from): its delete expects `count`
/// of them in that count of children and leaves the count to them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OnPath {
    pub(crate) dependent: usize,
    pub(crate) count: u64,
}

/// What one attempt at deleting a record did.
pub(crate) enum Own {
    /// Deleted; the counts of children it left (for children further down
    /// the path, per dependent number), each to remove once those are gone.
    Deleted(Vec<(usize, String)>),
    /// No record at the key, or one that no longer names the parent the
    /// cascade reached it from (it moved out of the tree).
    Gone,
    /// The count of children of dependent number `.0` is not what the
    /// delete expected: a child came, or (`restrict`) children exist.
    Blocked(usize, DependentFact),
    /// The record changed since it was read: try again.
    Changed,
}
