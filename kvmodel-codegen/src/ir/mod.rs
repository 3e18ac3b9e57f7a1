//! The model IR shared by both front-ends (attributes and YAML).
//!
//! Front-ends build these plain structs; [`check`](crate::check) holds every
//! cross-field rule; emitters only read them. Every node keeps its
//! [`Origin`], which never takes part in equality.
//!
//! The IR is the ground floor: it names nothing of the crate but [`Origin`]
//! and [`Syntax`]. How a word of the model is read and printed lives a
//! floor up, in [`vocab`](crate::vocab) (which adds `FromStr`, `Display` and
//! the spellings of a [`FieldType`] to these types) and
//! [`template`](crate::template) (which parses a [`KeyTemplate`]).

use crate::origin::{Origin, Sp};

pub use crate::syntax::Syntax;

mod derived;
mod link;
mod lint;
mod tally;
pub use derived::{
    Counter, CounterKeep, DEFAULT_SINCE, Dependent, FieldExpr, Index, Normalize, OnDelete,
    Relation, default_since,
};
pub use link::Link;
pub use lint::Lint;
pub use tally::Tally;

/// The record version of an entity that declares none (`version`).
pub const DEFAULT_VERSION: u32 = 1;

/// A whole model: entities, standalone counters and the named types they
/// use.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    /// Entities, in declaration order.
    pub entities: Vec<Entity>,
    /// Named enums and structs (YAML `types:`); empty for the derive.
    pub types: Vec<TypeDef>,
    /// Standalone counters (a schema's namespace-level `counters:`), in
    /// declaration order.
    pub tallies: Vec<Tally>,
}

impl Model {
    /// The fields of the struct type called `name`.
    pub fn struct_fields(&self, name: &str) -> Option<&[Field]> {
        self.types.iter().find_map(|t| match &t.kind {
            TypeKind::Struct(fields) if *t.name == name => Some(fields.as_slice()),
            _ => None,
        })
    }

    /// Whether a value of the type `from` holds a value of the type `to` in
    /// place: through fields of a named struct type, not behind a list or a
    /// map (which hold their items elsewhere). With `required_only`, only
    /// fields that are not optional count, so `true` means a value of `from`
    /// could never be written down (when `from == to`). The walk is
    /// iterative, so no type graph can exhaust the stack.
    pub fn holds(&self, from: &str, to: &str, required_only: bool) -> bool {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![from];
        while let Some(t) = todo.pop() {
            for f in self.struct_fields(t).unwrap_or_default() {
                if required_only && f.optional {
                    continue;
                }
                let FieldType::Named(n) = &*f.ty else {
                    continue;
                };
                if n.as_str() == to {
                    return true;
                }
                if seen.insert(n.as_str()) {
                    todo.push(n.as_str());
                }
            }
        }
        false
    }

    /// Whether the field `field` of the struct type `owner` must be boxed:
    /// its type holds `owner` in place again, so without a box the type
    /// would have no size.
    pub fn needs_box(&self, owner: &str, field: &Field) -> bool {
        match &*field.ty {
            FieldType::Named(n) => n.as_str() == owner || self.holds(n.as_str(), owner, false),
            _ => false,
        }
    }
}

/// Payload encoding of records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Encoding {
    /// JSON.
    #[default]
    Json,
    /// MessagePack (named maps).
    MsgPack,
    /// Protobuf (field numbers from the field names, see [`crate::proto`]).
    Protobuf,
}

/// One entity (or, without a key, a versioned record type used in a
/// `migrate_from` chain).
#[derive(Clone, Debug, PartialEq)]
pub struct Entity {
    /// Rust type name.
    pub name: Sp<String>,
    /// Visibility of the generated items (`pub`, `pub(crate)`, or none).
    pub vis: Syntax<syn::Visibility>,
    /// First key segment.
    pub namespace: Option<Sp<String>>,
    /// Primary key template; `None` for record-only types.
    pub key: Option<KeyTemplate>,
    /// Current record version.
    pub version: Sp<u32>,
    /// Payload encoding.
    pub encoding: Sp<Encoding>,
    /// Fields, in order.
    pub fields: Vec<Field>,
    /// Secondary indexes.
    pub indexes: Vec<Index>,
    /// Counters.
    pub counters: Vec<Counter>,
    /// Relations to parent entities.
    pub relations: Vec<Relation>,
    /// Many-to-many links declared on this side (`links:`).
    pub links: Vec<Link>,
    /// The relations of other entities to this one that act when a record
    /// of it is deleted (`on_delete: restrict | cascade`): the parent's
    /// repository enforces them, so it names them. The YAML front end
    /// fills them in from the children; the derive reads
    /// `dependent(entity = …, relation = …)`.
    pub dependents: Vec<Dependent>,
    /// Record time to live.
    pub ttl: Option<Ttl>,
    /// The entity's change feed (`feed: { retain: 7d }`), if it keeps one.
    pub feed: Option<Feed>,
    /// Largest encoded record accepted, in bytes (`max_size`): a larger one
    /// is refused with `ValueTooLarge`, writing nothing.
    pub max_size: Option<Sp<u64>>,
    /// Large records are stored compressed (`compress: { codec, above }`).
    pub compress: Option<Compress>,
    /// Field whose value becomes the Redis Cluster hash tag.
    pub colocate: Option<Sp<String>>,
    /// Declarative migration steps.
    pub migrations: Vec<Migration>,
    /// Previous version's type (`From` chain).
    pub migrate_from: Option<Sp<Syntax<syn::Type>>>,
    /// Path of the kvmodel crate in generated code (default `::kvmodel`).
    pub crate_path: Option<Sp<Syntax<syn::Path>>>,
    /// What it is for, in the schema author's words (YAML `description:`,
    /// doc comments in Rust).
    pub description: Option<String>,
    /// Where the entity was declared.
    pub origin: Origin,
    /// Lints allowed on the entity and everything it declares (a schema
    /// file's top-level `allow:` is allowed on each of its entities).
    pub allow: Vec<Sp<Lint>>,
    /// Fields declared in a schema file whose declaration is in error (an
    /// unknown type, say): left out of `fields`, and named here so that
    /// rules referring to them add no second error. Empty in a valid model.
    pub broken_fields: Vec<String>,
}

impl Entity {
    /// An entity with nothing declared yet: version 1, JSON, no key.
    pub fn new(name: Sp<String>, vis: syn::Visibility) -> Self {
        Entity {
            origin: name.origin.clone(),
            name,
            vis: Syntax::new(vis),
            namespace: None,
            key: None,
            version: Sp::new(DEFAULT_VERSION, Origin::Unknown),
            encoding: Sp::new(Encoding::Json, Origin::Unknown),
            fields: Vec::new(),
            indexes: Vec::new(),
            counters: Vec::new(),
            relations: Vec::new(),
            links: Vec::new(),
            dependents: Vec::new(),
            ttl: None,
            feed: None,
            max_size: None,
            compress: None,
            colocate: None,
            migrations: Vec::new(),
            migrate_from: None,
            crate_path: None,
            description: None,
            allow: Vec::new(),
            broken_fields: Vec::new(),
        }
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| *f.name == name)
    }

    /// The field that sets each record's own expiry (the first one marked,
    /// when a broken model marks more).
    pub fn expiry_field(&self) -> Option<&Field> {
        self.fields.iter().find(|f| f.expiry.is_some())
    }

    /// Whether records expire: by a `ttl`, or by their own expiry field.
    pub fn expires(&self) -> bool {
        self.ttl.is_some() || self.expiry_field().is_some()
    }
}

/// A primary key template such as `user:{id}`, parsed once by
/// [`KeyTemplate::new`] (in [`template`](crate::template), which knows the
/// syntax).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyTemplate {
    /// The template as written.
    pub text: String,
    /// Parsed segments (empty if the text did not parse: see `error`).
    pub segments: Vec<Segment>,
    /// Why the text did not parse, for `check` to report; `None` when it
    /// did.
    pub error: Option<String>,
    /// Where it was written.
    pub origin: Origin,
}

impl KeyTemplate {
    /// The key space of the entity's derived keys: the literal segments,
    /// joined by `:` (`user` for `user:{id}`, `tenant:doc` for
    /// `tenant:{t}:doc:{id}`). Derived keys never depend on a Rust type name,
    /// so renaming a struct changes none of them.
    pub fn key_space(&self) -> String {
        let literals: Vec<&str> = self
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Literal(l) => Some(l.as_str()),
                Segment::Field(_) => None,
            })
            .collect();
        literals.join(":")
    }

    /// Whether a key built from this template could equal one built from
    /// `other`. Components are escaped, so every key of a template has
    /// exactly its number of segments; a placeholder can spell any literal
    /// but never a hash-tag segment (`{…}`, see `tag`), which a literal
    /// never is.
    pub fn may_collide(
        &self,
        tag: Option<&str>,
        other: &KeyTemplate,
        other_tag: Option<&str>,
    ) -> bool {
        let tagged =
            |s: &Segment, t: Option<&str>| matches!(s, Segment::Field(f) if Some(f.as_str()) == t);
        self.segments.len() == other.segments.len()
            && self
                .segments
                .iter()
                .zip(&other.segments)
                .all(|(a, b)| match (a, b) {
                    (Segment::Literal(x), Segment::Literal(y)) => x == y,
                    (Segment::Field(_), Segment::Field(_)) => {
                        tagged(a, tag) == tagged(b, other_tag)
                    }
                    (Segment::Field(_), Segment::Literal(_)) => !tagged(a, tag),
                    (Segment::Literal(_), Segment::Field(_)) => !tagged(b, other_tag),
                })
    }

    /// The placeholders, in template order.
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Field(f) => Some(f.as_str()),
            Segment::Literal(_) => None,
        })
    }
}

/// One `:`-separated segment of a key template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Fixed text.
    Literal(String),
    /// `{field}`.
    Field(String),
}

/// Field types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// `String`.
    String,
    /// `bool`.
    Bool,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f64`.
    F64,
    /// `Vec<u8>`.
    Bytes,
    /// UTC timestamp.
    Timestamp,
    /// Calendar date.
    Date,
    /// UUID.
    Uuid,
    /// `Vec<T>`.
    List(Box<FieldType>),
    /// `BTreeMap<String, T>`.
    Map(Box<FieldType>),
    /// A named enum or struct: a name declared under `types:`, or any Rust
    /// type the derive does not know.
    Named(Syntax<syn::Type>),
}

impl FieldType {
    /// Integers (what `sum` accepts).
    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            FieldType::I32 | FieldType::I64 | FieldType::U32 | FieldType::U64
        )
    }

    /// Types that can be a key component. Named types must implement
    /// `KeyPart` (fieldless enums with `#[derive(KvEnum)]` do).
    pub fn is_keyable(&self) -> bool {
        !matches!(
            self,
            FieldType::F64 | FieldType::List(_) | FieldType::Map(_)
        )
    }

    /// Types with an order-preserving encoding. Named types must implement
    /// `SortPart`.
    pub fn is_sortable(&self) -> bool {
        !matches!(
            self,
            FieldType::Bytes | FieldType::List(_) | FieldType::Map(_)
        )
    }

    /// Types whose values are `Copy` and passed by value.
    pub fn is_copy(&self) -> bool {
        !matches!(
            self,
            FieldType::String | FieldType::Bytes | FieldType::List(_) | FieldType::Map(_)
        )
    }
}

/// A field of an entity.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Field name.
    pub name: Sp<String>,
    /// Its type.
    pub ty: Sp<FieldType>,
    /// `Option<T>`.
    pub optional: bool,
    /// Value used when a stored record lacks the field (JSON).
    pub default: Option<Sp<serde_json::Value>>,
    /// Where `expiry: true` (`#[kv(expiry)]`) marks this timestamp field as
    /// the one that sets each record's own expiry; `None` for other fields.
    pub expiry: Option<Origin>,
    /// What it is for, in the schema author's words (YAML `description:`,
    /// doc comments in Rust).
    pub description: Option<String>,
    /// Where it was declared.
    pub origin: Origin,
}

/// A compression codec (`compress.codec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// lz4 (always available).
    Lz4,
    /// zstd (kvmodel's `zstd` feature).
    Zstd,
}

/// `compress: { codec, above }`: records whose encoded envelope is `above`
/// bytes or more are stored compressed with `codec`.
#[derive(Clone, Debug, PartialEq)]
pub struct Compress {
    /// The codec.
    pub codec: Sp<Codec>,
    /// The threshold in bytes, measured on the encoded record.
    pub above: Sp<u64>,
    /// Where `compress` is written.
    pub origin: Origin,
}

/// A change feed: every commit that changes a record appends an event.
#[derive(Clone, Debug, PartialEq)]
pub struct Feed {
    /// How long events are kept, in milliseconds (parsed from e.g. `7d`).
    pub retain_ms: Sp<u64>,
}

/// Record time to live.
#[derive(Clone, Debug, PartialEq)]
pub struct Ttl {
    /// Base TTL in milliseconds (parsed from e.g. `30m`).
    pub after_ms: Sp<u64>,
    /// Jitter in thousandths (parsed from e.g. `10%`).
    pub jitter_permille: Option<Sp<u32>>,
}

/// One migration step from `from` to `from + 1`.
#[derive(Clone, Debug, PartialEq)]
pub struct Migration {
    /// Source version.
    pub from: Sp<u32>,
    /// `old → new` field renames.
    pub rename: Vec<(Sp<String>, Sp<String>)>,
    /// Fields added with a value.
    pub add: Vec<(Sp<String>, Sp<serde_json::Value>)>,
    /// Fields removed.
    pub remove: Vec<Sp<String>>,
    /// Where it was declared.
    pub origin: Origin,
}

impl Migration {
    /// A step from `from` that changes nothing yet.
    pub fn new(from: Sp<u32>, origin: Origin) -> Self {
        Migration {
            from,
            rename: Vec::new(),
            add: Vec::new(),
            remove: Vec::new(),
            origin,
        }
    }
}

/// A named type of a YAML schema.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeDef {
    /// Rust type name.
    pub name: Sp<String>,
    /// Enum or struct.
    pub kind: TypeKind,
    /// What it is for, in the schema author's words (YAML `description:`,
    /// doc comments in Rust).
    pub description: Option<String>,
    /// Where it was declared.
    pub origin: Origin,
}

/// The shape of a named type.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeKind {
    /// A fieldless enum; variants as written in the schema (snake case).
    Enum(Vec<Sp<String>>),
    /// A struct.
    Struct(Vec<Field>),
}
