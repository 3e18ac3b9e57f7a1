//! The run-time model: a schema as plain data, and what its records derive,
//! computed from untyped records.
//!
//! Generated repositories compute their keys and facts in code the derive
//! wrote. Maintenance tools that read a store through a schema file (the
//! `kvmodel` command) have no such code: they load the schema, lower it to
//! a [`Model`] (`kvmodel_build::runtime_model` does that) and read every
//! record as a [`Record`]: its stored version and its generic value at the
//! current version, after the declared migration steps and field defaults.
//! From a record the model computes the same key, claims, collection
//! members, counter amounts and encoding as the generated code, so a store
//! written by a program can be checked, repaired and migrated by a tool.

mod facts;
mod record;
mod value;

pub use record::Record;
pub use value::parse_arg;

use crate::codec::key::{Derived, RecordKeys};
use crate::codec::proto::ProtoMessage;
use crate::codec::record::Encoding;
use crate::codec::scalar::Scalar;
use crate::codec::storage::Storage;
use crate::schema::{CounterKeep, OnDelete, Ttl};

/// Every entity of one schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The namespace every key of the schema starts with; of a schema over
    /// several namespaces, the first in order (where the migration ledger
    /// is kept).
    pub namespace: String,
    /// The entities (types without a key are not entities and are left out).
    pub entities: Vec<EntityModel>,
}

impl Model {
    /// The entity called `name` (its type name, as in the schema).
    pub fn entity(&self, name: &str) -> Option<&EntityModel> {
        self.entities.iter().find(|e| e.name == name)
    }
}

/// One segment of a key template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Fixed text.
    Literal(String),
    /// A placeholder `{field}`.
    Field(String),
}

impl Segment {
    /// A literal segment.
    pub fn lit(text: &str) -> Segment {
        Segment::Literal(text.to_owned())
    }

    /// A placeholder.
    pub fn field(name: &str) -> Segment {
        Segment::Field(name.to_owned())
    }
}

/// The type of a field, with named types resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeModel {
    /// A scalar: text, a number, bytes, a timestamp, a date, a uuid.
    Scalar(Scalar),
    /// `list<T>`.
    List(Box<TypeModel>),
    /// `map<string, T>`.
    Map(Box<TypeModel>),
    /// A named enum: its variants as stored, in declaration order (the
    /// order its sort key follows).
    Enum(EnumModel),
    /// A named struct.
    Struct(StructModel),
}

/// A fieldless enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumModel {
    /// Its type name.
    pub name: String,
    /// The variants as stored (`on_hold`), in declaration order.
    pub variants: Vec<String>,
}

/// A struct type.
#[derive(Debug, Clone, PartialEq)]
pub struct StructModel {
    /// Its type name.
    pub name: String,
    /// Its fields, in order.
    pub fields: Vec<FieldModel>,
}

/// A field of an entity or struct.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldModel {
    /// Its name, as stored.
    pub name: String,
    /// Its type.
    pub ty: TypeModel,
    /// Whether it may be absent (`null`).
    pub optional: bool,
    /// The value a stored record that lacks the field gets.
    pub default: Option<serde_json::Value>,
}

impl FieldModel {
    /// A required field without a default.
    pub fn new(name: &str, ty: TypeModel) -> FieldModel {
        FieldModel {
            name: name.to_owned(),
            ty,
            optional: false,
            default: None,
        }
    }
}

/// A field or a time bucket of a timestamp field (index `fields`,
/// `group_by`, `order_by`).
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// A secondary index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexModel {
    /// Its name.
    pub name: String,
    /// The indexed fields or time buckets, in order.
    pub fields: Vec<FieldExpr>,
    /// A unique claim per value instead of a collection.
    pub unique: bool,
    /// Values are lowercased in the claim key.
    pub lowercase: bool,
    /// The order within one value (ordered indexes).
    pub order_by: Option<FieldExpr>,
    /// The members each collection keeps (`keep: N`); 0 for all.
    pub keep: u32,
    /// The record version that introduced it.
    pub since: u32,
}

/// A one-to-many relation to a parent entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationModel {
    /// Its name.
    pub name: String,
    /// The parent entity.
    pub belongs_to: String,
    /// The field holding the parent's id.
    pub by: String,
    /// The order of the children.
    pub order_by: Option<FieldExpr>,
    /// The children each parent's collection keeps (`keep: N`); 0 for all.
    pub keep: u32,
    /// What deleting the parent does to the children (`on_delete`).
    pub on_delete: OnDelete,
    /// The count of each parent's children that a parent's delete
    /// conditions on, named [`children_counter`]`(name)`; `Some` when
    /// `on_delete` is `restrict` or `cascade`.
    pub children: Option<String>,
    /// The record version that introduced it.
    pub since: u32,
}

/// The name of the counter of each parent's children in relation
/// `relation` (`author.children`): no declared counter can take it, as a
/// name holds no `.`.
pub fn children_counter(relation: &str) -> String {
    format!("{relation}.children")
}

/// A counter: a count or a sum, optionally per group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterModel {
    /// Its name.
    pub name: String,
    /// The group fields or buckets.
    pub group_by: Vec<FieldExpr>,
    /// The summed integer field; `None` counts records.
    pub sum: Option<String>,
    /// The keys it is spread over (`shards: N`); 1 for one key.
    pub shards: u32,
    /// Whether it keeps the amounts of records that are gone
    /// (`keep: on_expiry | always`).
    pub keep: CounterKeep,
    /// The record version that introduced it.
    pub since: u32,
}

/// One declared migration step, from version `from` to `from + 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct StepModel {
    /// The source version.
    pub from: u32,
    /// `old → new` field renames.
    pub rename: Vec<(String, String)>,
    /// Fields added with a value (kept when present).
    pub add: Vec<(String, serde_json::Value)>,
    /// Fields removed.
    pub remove: Vec<String>,
}

/// One entity: its keys, fields, derived data and versions.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityModel {
    /// The type name.
    pub name: String,
    /// The first key segment.
    pub namespace: String,
    /// The key template.
    pub key: Vec<Segment>,
    /// The current record version.
    pub version: u32,
    /// How payloads are encoded.
    pub encoding: Encoding,
    /// The protobuf fields of a protobuf-encoded entity (numbers as the
    /// generated code has them), which it reads and writes with.
    pub proto: Option<&'static ProtoMessage>,
    /// The record time to live.
    pub ttl: Option<Ttl>,
    /// The timestamp field that sets each record's own expiry, if one does
    /// (`expiry: true`).
    pub expiry: Option<String>,
    /// The size limit applied to every record written.
    pub storage: Storage,
    /// How long the entity's change feed keeps events, if it keeps one
    /// (`feed: { retain: … }`): maintenance through the model then keeps
    /// each expiring record's image in its receipt and appends its
    /// `Expired` event when it sweeps it.
    pub feed: Option<std::time::Duration>,
    /// The field whose value is the Redis Cluster hash tag.
    pub colocate: Option<String>,
    /// The fields, in order.
    pub fields: Vec<FieldModel>,
    /// Secondary indexes.
    pub indexes: Vec<IndexModel>,
    /// Relations to parents.
    pub relations: Vec<RelationModel>,
    /// Counters.
    pub counters: Vec<CounterModel>,
    /// Declared migration steps, by `from`.
    pub migrations: Vec<StepModel>,
}

/// One declared index, relation or counter: its kind of derived key, name
/// and the version that introduced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared<'a> {
    /// [`Derived::Claim`] (unique index), [`Derived::Index`],
    /// [`Derived::Relation`] or [`Derived::Counter`].
    pub kind: Derived,
    /// Its name.
    pub name: &'a str,
    /// The record version that introduced it.
    pub since: u32,
}

impl EntityModel {
    /// The type name as errors carry it (`Error::ValueTooLarge { entity, .. }`):
    /// each distinct name is kept once for the life of the process.
    pub fn static_name(&self) -> &'static str {
        use std::collections::BTreeSet;
        use std::sync::{Mutex, OnceLock};
        static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
        let mut names = NAMES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(name) = names.get(self.name.as_str()) {
            return name;
        }
        let name: &'static str = Box::leak(self.name.clone().into_boxed_str());
        names.insert(name);
        name
    }

    /// An entity at version 1, JSON, without TTL or derived data.
    pub fn new(name: &str, namespace: &str, key: Vec<Segment>) -> EntityModel {
        EntityModel {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            key,
            version: 1,
            encoding: Encoding::Json,
            proto: None,
            ttl: None,
            expiry: None,
            storage: Storage::PLAIN,
            feed: None,
            colocate: None,
            fields: Vec::new(),
            indexes: Vec::new(),
            relations: Vec::new(),
            counters: Vec::new(),
            migrations: Vec::new(),
        }
    }

    /// Adds a field.
    pub fn with_field(mut self, field: FieldModel) -> EntityModel {
        self.fields.push(field);
        self
    }

    /// The key space of derived keys: the template's literal segments.
    pub fn key_space(&self) -> String {
        let literals: Vec<&str> = self
            .key
            .iter()
            .filter_map(|s| match s {
                Segment::Literal(l) => Some(l.as_str()),
                Segment::Field(_) => None,
            })
            .collect();
        literals.join(":")
    }

    /// The entity's record keys, as a range.
    pub fn record_keys(&self) -> RecordKeys {
        let template: Vec<String> = self
            .key
            .iter()
            .map(|s| match s {
                Segment::Literal(l) => l.clone(),
                Segment::Field(f) => format!("{{{f}}}"),
            })
            .collect();
        RecordKeys::new(&self.namespace, &template.join(":"))
    }

    /// The placeholders of the key template, in order.
    pub fn key_fields(&self) -> Vec<&str> {
        self.key
            .iter()
            .filter_map(|s| match s {
                Segment::Field(f) => Some(f.as_str()),
                Segment::Literal(_) => None,
            })
            .collect()
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&FieldModel> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Every index, relation and counter, in declaration order by kind.
    pub fn declared(&self) -> Vec<Declared<'_>> {
        let mut out = Vec::new();
        for ix in &self.indexes {
            let kind = if ix.unique {
                Derived::Claim
            } else {
                Derived::Index
            };
            out.push(Declared {
                kind,
                name: &ix.name,
                since: ix.since,
            });
        }
        for r in &self.relations {
            out.push(Declared {
                kind: Derived::Relation,
                name: &r.name,
                since: r.since,
            });
        }
        for r in &self.relations {
            if let Some(c) = &r.children {
                out.push(Declared {
                    kind: Derived::Counter,
                    name: c,
                    since: r.since,
                });
            }
        }
        for c in &self.counters {
            out.push(Declared {
                kind: Derived::Counter,
                name: &c.name,
                since: c.since,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{EntityModel, FieldModel, Scalar, Segment, TypeModel};

    #[test]
    fn a_model_builds_the_key_the_generated_code_builds() {
        let user = EntityModel::new(
            "User",
            "shop",
            vec![Segment::lit("user"), Segment::field("id")],
        )
        .with_field(FieldModel::new("id", TypeModel::Scalar(Scalar::String)));
        let key = user.key_of_parts(&[serde_json::json!("1:orders")]).unwrap();
        assert_eq!(key, "shop:user:1%3Aorders");
    }
}
