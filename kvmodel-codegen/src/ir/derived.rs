//! What an entity derives from its records: indexes, counters and
//! relations (with the referential actions of relations), and the fields
//! and time buckets they read.

use super::lint::Lint;
use crate::origin::{Origin, Sp};

/// The record version that introduced an index, counter or relation when
/// none is declared (`since`).
pub const DEFAULT_SINCE: u32 = 1;

/// `since` when none is declared: [`DEFAULT_SINCE`], written nowhere.
pub fn default_since() -> Sp<u32> {
    Sp::new(DEFAULT_SINCE, Origin::Unknown)
}

/// A field or a time bucket of a timestamp field, in an index's `fields`,
/// `group_by` or `order_by`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldExpr {
    /// The field's value.
    Field(String),
    /// `hour(f)`.
    Hour(String),
    /// `day(f)`.
    Day(String),
    /// `month(f)`.
    Month(String),
}

impl FieldExpr {
    /// The field it reads.
    pub fn field(&self) -> &str {
        match self {
            FieldExpr::Field(f) | FieldExpr::Hour(f) | FieldExpr::Day(f) | FieldExpr::Month(f) => f,
        }
    }
}

/// String normalization of a unique index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalize {
    /// Unicode lowercase.
    Lowercase,
}

/// A secondary index: unique (a claim per value) or ordered (a sorted
/// collection per value).
#[derive(Clone, Debug, PartialEq)]
pub struct Index {
    /// Index name (`by_email`).
    pub name: Sp<String>,
    /// Indexed fields or time buckets of timestamp fields (`day(at)`: one
    /// collection or claim per day), in order.
    pub fields: Vec<Sp<FieldExpr>>,
    /// Unique claim instead of a collection.
    pub unique: bool,
    /// String normalization (unique indexes).
    pub normalize: Option<Sp<Normalize>>,
    /// Sort order within one value (ordered indexes).
    pub order_by: Option<Sp<FieldExpr>>,
    /// Entries each collection keeps (`keep: N`): the N greatest in
    /// `order_by` order; a write that adds one trims the rest in its commit.
    pub keep: Option<Sp<u32>>,
    /// Record version that introduced it.
    pub since: Sp<u32>,
    /// What it is for, in the schema author's words (YAML `description:`,
    /// doc comments in Rust).
    pub description: Option<String>,
    /// Lints allowed on this index.
    pub allow: Vec<Sp<Lint>>,
    /// Where it was declared.
    pub origin: Origin,
}

impl Index {
    /// A non-unique index with nothing declared yet, introduced in version
    /// [`DEFAULT_SINCE`], declared where its name is.
    pub fn new(name: Sp<String>) -> Self {
        Index {
            origin: name.origin.clone(),
            name,
            fields: Vec::new(),
            unique: false,
            normalize: None,
            order_by: None,
            keep: None,
            since: default_since(),
            description: None,
            allow: Vec::new(),
        }
    }
}

/// A counter: a count or a sum, optionally per group.
#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    /// Counter name.
    pub name: Sp<String>,
    /// Group fields or buckets.
    pub group_by: Vec<Sp<FieldExpr>>,
    /// Summed integer field; `None` counts records.
    pub sum: Option<Sp<String>>,
    /// Keys its writes are spread over (`shards: N`, 2–1024): each write
    /// adds to one of them, a read sums them all. `None` is one key.
    pub shards: Option<Sp<u32>>,
    /// When it keeps the amounts of records that are gone (`keep:
    /// on_expiry | always`); `None` follows the live records.
    pub keep: Option<Sp<CounterKeep>>,
    /// Record version that introduced it.
    pub since: Sp<u32>,
    /// What it is for, in the schema author's words (YAML `description:`,
    /// doc comments in Rust).
    pub description: Option<String>,
    /// Lints allowed on this counter.
    pub allow: Vec<Sp<Lint>>,
    /// Where it was declared.
    pub origin: Origin,
}

impl Counter {
    /// A plain count with nothing declared yet, introduced in version
    /// [`DEFAULT_SINCE`], declared where its name is.
    pub fn new(name: Sp<String>) -> Self {
        Counter {
            origin: name.origin.clone(),
            name,
            group_by: Vec::new(),
            sum: None,
            shards: None,
            keep: None,
            since: default_since(),
            description: None,
            allow: Vec::new(),
        }
    }
}

/// A one-to-many relation: this entity belongs to a parent.
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    /// Relation name (`user` gives `list_by_user`).
    pub name: Sp<String>,
    /// Parent entity.
    pub belongs_to: Sp<String>,
    /// Field holding the parent's id.
    pub by: Sp<String>,
    /// Order of the children.
    pub order_by: Option<Sp<FieldExpr>>,
    /// Children each parent's collection keeps (`keep: N`): the N greatest
    /// in `order_by` order; a write that adds one trims the rest in its
    /// commit.
    pub keep: Option<Sp<u32>>,
    /// What deleting the parent does to its children (`on_delete`).
    pub on_delete: Sp<OnDelete>,
    /// Record version that introduced it.
    pub since: Sp<u32>,
    /// What it is for, in the schema author's words (YAML `description:`,
    /// doc comments in Rust).
    pub description: Option<String>,
    /// Where it was declared.
    pub origin: Origin,
}

/// When a counter keeps the amount a record added after the record is gone:
/// a counter that only counts, for analytics that outlive their records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CounterKeep {
    /// The expiry sweep leaves the counter alone; a delete takes the
    /// record's amount back (`keep: on_expiry`).
    OnExpiry,
    /// Neither the expiry sweep nor a delete takes anything back
    /// (`keep: always`).
    Always,
}

/// What deleting a parent record does to the children of a relation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum OnDelete {
    /// Nothing: the children stay, naming a parent that is gone (the
    /// default).
    #[default]
    Keep,
    /// The delete fails while children exist, and a child may only name a
    /// parent that exists.
    Restrict,
    /// The delete deletes the children first (in pages, resumable), and a
    /// child may only name a parent that exists.
    Cascade,
}

impl OnDelete {
    /// Whether the parent's delete acts on the children (and a child
    /// must name a parent that exists).
    pub fn enforced(self) -> bool {
        self != OnDelete::Keep
    }
}

/// A relation of another entity to this one that the delete enforces
/// (`dependent(entity = Post, relation = "author")`).
#[derive(Clone, Debug, PartialEq)]
pub struct Dependent {
    /// The child entity (a Rust path in the derive).
    pub entity: Sp<String>,
    /// The child's relation to this entity; what it does (`on_delete`)
    /// is the child's to say.
    pub relation: Sp<String>,
    /// Where it was declared.
    pub origin: Origin,
}

impl Relation {
    /// An unordered relation, introduced in version
    /// [`DEFAULT_SINCE`], declared where its name is.
    pub fn new(name: Sp<String>, belongs_to: Sp<String>, by: Sp<String>) -> Self {
        Relation {
            origin: name.origin.clone(),
            name,
            belongs_to,
            by,
            order_by: None,
            keep: None,
            on_delete: Sp::new(OnDelete::Keep, Origin::Unknown),
            since: default_since(),
            description: None,
        }
    }
}
