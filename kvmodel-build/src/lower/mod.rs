//! Lowering a YAML schema to the model IR, reporting every problem.
//!
//! This module reads the document, named types and fields; `entity` reads
//! an entity's key, indexes, counters, relations, TTL and migrations.

mod entity;
mod tally;

use kvmodel_codegen::ir::{Field, FieldType, Model, TypeDef, TypeKind};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Origin, Sp, suggestion};
use kvmodel_codegen::vocab::{self, Mistake};

use kvmodel_codegen::value::{Reader, Value};

use crate::node::Locator;

type Node = Sp<Value>;

const TOP_KEYS: &[&str] = &[
    "kvmodel",
    "namespace",
    "entities",
    "counters",
    "types",
    "allow",
];
const ENTITY_KEYS: &[&str] = &[
    "key",
    "version",
    "encoding",
    "ttl",
    "feed",
    "colocate",
    "max_size",
    "compress",
    "fields",
    "indexes",
    "counters",
    "relations",
    "links",
    "migrations",
    "description",
    "allow",
];
const FIELD_KEYS: &[&str] = &["type", "optional", "default", "expiry", "description"];
const TTL_KEYS: &[&str] = &["after", "jitter"];
const FEED_KEYS: &[&str] = &["retain"];
const TYPE_KEYS: &[&str] = &["enum", "fields", "description"];

/// The keys of a construct: the ones both front-ends share, and
/// `description`, which the derive takes from doc comments.
fn described(keys: &[&'static str]) -> Vec<&'static str> {
    keys.iter().copied().chain(["description"]).collect()
}

pub(crate) struct Lower<'d> {
    pub loc: Locator,
    pub diags: &'d mut Diagnostics,
}

impl Lower<'_> {
    /// Reports a mistake at `at`.
    pub(super) fn report(&mut self, m: Mistake, at: &Origin) {
        self.diags.push(m.at(at));
    }

    /// Reports a rule's mistake, if any.
    pub(super) fn rule(&mut self, r: Result<(), Mistake>, at: &Origin) {
        if let Err(m) = r {
            self.report(m, at);
        }
    }

    pub(super) fn err(&mut self, code: &'static str, at: &Origin, msg: impl Into<String>) {
        self.diags.error(code, at, msg);
    }

    pub(super) fn wrong(&mut self, n: &Node, expected: &str) {
        self.report(vocab::wrong_kind(expected, n.value.kind()), &n.origin);
    }

    /// The shared reader of values, reporting here.
    pub(super) fn read(&mut self) -> Reader<'_> {
        Reader { diags: self.diags }
    }

    /// The entries of a mapping whose keys are in `known`; others are reported.
    pub(super) fn entries<'n>(
        &mut self,
        n: &'n Node,
        known: &[&str],
        what: &str,
    ) -> Vec<(&'n Sp<String>, &'n Node)> {
        match n.value.typed() {
            Value::Map(entries) => {
                let mut out = Vec::new();
                for (k, v) in entries {
                    if known.contains(&k.value.as_str()) {
                        out.push((k, v));
                    } else {
                        self.report(vocab::unknown_key(&k.value, what, known), &k.origin);
                    }
                }
                out
            }
            Value::Null => Vec::new(),
            _ => {
                self.wrong(n, &format!("a mapping for {what}"));
                Vec::new()
            }
        }
    }

    /// Lowers a whole document.
    pub fn model(&mut self, doc: &Node) -> Model {
        let mut model = Model::default();
        let mut namespace = None;
        let mut version_seen = false;
        let mut entities = None;
        let mut tallies = None;
        let mut allow = Vec::new();
        for (k, v) in self.entries(doc, TOP_KEYS, "the schema") {
            match k.value.as_str() {
                "kvmodel" => {
                    version_seen = true;
                    if !matches!(v.value.typed(), Value::Int(1)) {
                        let at = v.origin.clone();
                        self.err("E015", &at, "this file declares a schema format this kvmodel does not read; expected `kvmodel: 1`");
                    }
                }
                "namespace" => namespace = self.read().string(v, "`namespace`"),
                "entities" => entities = Some(v),
                "counters" => tallies = Some(v),
                "types" => model.types = self.types(v),
                "allow" => allow = self.read().words(v, "`allow`"),
                _ => {}
            }
        }
        let start = self.loc.start();
        if !version_seen {
            self.err(
                "E011",
                &start,
                "the schema needs `kvmodel: 1` (the schema format version) at the top",
            );
        }
        if namespace.is_none() {
            self.diags.push(
                Diagnostic::error("E011", &start, "the schema needs a `namespace`")
                    .help("add `namespace: app`: it becomes the first segment of every key"),
            );
        }
        match entities {
            Some(e) => {
                if let Value::Map(list) = &e.value {
                    for (name, body) in list {
                        if let Some(ent) =
                            self.entity(name, body, namespace.clone(), &allow, &model.types)
                        {
                            model.entities.push(ent);
                        }
                    }
                } else {
                    self.wrong(e, "a mapping of entity names to entities");
                }
            }
            // A file of standalone counters only needs no entity.
            None if tallies.is_some() => {}
            None => self.err(
                "E011",
                &start,
                "the schema needs `entities:`, a mapping of entity names to their declarations",
            ),
        }
        if let Some(t) = tallies {
            model.tallies = self.tallies(t, namespace.as_ref(), &model.types);
        }
        dependents(&mut model);
        model
    }

    fn types(&mut self, n: &Node) -> Vec<TypeDef> {
        let Value::Map(list) = &n.value else {
            self.wrong(n, "a mapping of type names to types");
            return Vec::new();
        };
        let mut out: Vec<(TypeDef, Option<&Node>)> = Vec::new();
        for (name, body) in list {
            let origin = name.origin.clone();
            self.rule(vocab::upper_camel_case("type", &name.value), &origin);
            let (mut kind, mut fields, mut description) = (None, None, None);
            for (k, v) in self.entries(body, TYPE_KEYS, &format!("type `{}`", name.value)) {
                match k.value.as_str() {
                    "description" => description = self.read().description(v),
                    "enum" => {
                        let variants = self.read().names(v, "the enum variants");
                        for var in &variants {
                            self.rule(vocab::variant(var), &var.origin);
                        }
                        if variants.is_empty() {
                            let at = v.origin.clone();
                            self.err("E010", &at, "an enum needs at least one variant");
                        }
                        kind = Some(TypeKind::Enum(variants));
                    }
                    "fields" => {
                        kind = Some(TypeKind::Struct(Vec::new()));
                        fields = Some(v);
                    }
                    _ => {}
                }
            }
            match kind {
                Some(k) => out.push((
                    TypeDef {
                        name: Sp::new(name.value.clone(), origin.clone()),
                        kind: k,
                        description,
                        origin,
                    },
                    fields,
                )),
                None => self.err(
                    "E011",
                    &origin,
                    format!(
                        "type `{}` needs `enum: [...]` or `fields: {{...}}`",
                        name.value
                    ),
                ),
            }
        }
        // Struct fields may name other types: lower them once every name is known.
        let known: Vec<TypeDef> = out.iter().map(|(d, _)| d.clone()).collect();
        out.into_iter()
            .map(|(mut def, fields)| {
                if let (TypeKind::Struct(fs), Some(node)) = (&mut def.kind, fields) {
                    *fs = self.fields(node, &known, &mut Vec::new());
                }
                def
            })
            .collect()
    }

    pub(super) fn parse_type(
        &mut self,
        text: &str,
        at: &Origin,
        types: &[TypeDef],
    ) -> Option<FieldType> {
        let named: Vec<&str> = types.iter().map(|d| d.name.as_str()).collect();
        match FieldType::parse_schema(text, &named) {
            Ok(t) => Some(t),
            Err(m) => {
                self.report(m, at);
                None
            }
        }
    }

    /// The fields of an entity or a struct type. The names of fields whose
    /// declaration is in error (reported here) go to `broken`.
    pub(super) fn fields(
        &mut self,
        n: &Node,
        types: &[TypeDef],
        broken: &mut Vec<String>,
    ) -> Vec<Field> {
        let Value::Map(list) = &n.value else {
            self.wrong(n, "a mapping of field names to types");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, body) in list {
            let origin = name.origin.clone();
            self.rule(vocab::snake_case("E012", "field", &name.value), &origin);
            let mut description = None;
            let mut expiry = None;
            let (ty_text, optional, default) = match &body.value {
                Value::Str(_) | Value::Plain { .. } => {
                    (self.read().string(body, "the type"), false, None)
                }
                Value::Map(_) => {
                    let mut ty = None;
                    let mut optional = false;
                    let mut default = None;
                    for (k, v) in self.entries(body, FIELD_KEYS, &format!("field `{}`", name.value))
                    {
                        match k.value.as_str() {
                            "description" => description = self.read().description(v),
                            "type" => ty = self.read().string(v, "`type`"),
                            "optional" => {
                                optional = self.read().boolean(v, "`optional`").unwrap_or(false)
                            }
                            "default" => default = Some(v),
                            "expiry" => {
                                let on = self.read().boolean(v, "`expiry`").unwrap_or(false);
                                expiry = on.then(|| k.origin.clone());
                            }
                            _ => {}
                        }
                    }
                    if ty.is_none() {
                        self.err(
                            "E011",
                            &origin,
                            format!("field `{}` needs a `type`", name.value),
                        );
                    }
                    (ty, optional, default)
                }
                _ => {
                    self.wrong(body, "a type name or a mapping with `type:`");
                    (None, false, None)
                }
            };
            let Some((ty, ty_origin)) =
                ty_text.and_then(|t| Some((self.parse_type(&t, &t.origin, types)?, t.origin)))
            else {
                broken.push(name.value.clone());
                continue;
            };
            let default = default.map(|d| {
                let what = format!("the default of `{}`", name.value);
                let value = self.typed_value(d, &ty, optional, types, &what);
                if !default_supported(&ty, &value, types) {
                    self.diags.push(
                        Diagnostic::error("E014", &d.origin, format!("{what} has type `{}`, for which defaults are not supported", ty.schema_name()))
                            .help("defaults work for strings, numbers, booleans, enum variants and empty lists; make the field `optional: true` instead"),
                    );
                }
                Sp::new(value, d.origin.clone())
            });
            out.push(Field {
                name: Sp::new(name.value.clone(), origin.clone()),
                ty: Sp::new(ty, ty_origin),
                optional,
                default,
                expiry,
                description,
                origin,
            });
        }
        out
    }

    /// A value of a field's type (a default, a value a migration adds) as
    /// JSON. Where the type is written as a string (strings, timestamps,
    /// dates, uuids, enum variants), a plain scalar's text is taken as
    /// written; a value that does not fit the type is reported.
    pub(crate) fn typed_value(
        &mut self,
        v: &Node,
        ty: &FieldType,
        optional: bool,
        types: &[TypeDef],
        what: &str,
    ) -> serde_json::Value {
        use serde_json::Value as J;
        let json = || kvmodel_codegen::value::to_json(v).unwrap_or(J::Null);
        let text = v.value.text();
        let fits = match (ty, v.value.typed()) {
            (_, Value::Null) if optional => return J::Null,
            (FieldType::String | FieldType::Timestamp | FieldType::Date | FieldType::Uuid, _) => {
                match text {
                    Some(t) => return J::String(t.to_owned()),
                    None => false,
                }
            }
            (FieldType::Bool, Value::Bool(_)) => true,
            (FieldType::I32, Value::Int(i)) => i32::try_from(*i).is_ok(),
            (FieldType::I64, Value::Int(_)) => true,
            (FieldType::U32, Value::Int(i)) => u32::try_from(*i).is_ok(),
            (FieldType::U64, Value::Int(i)) => *i >= 0,
            (FieldType::F64, Value::Int(_) | Value::Float(_)) => true,
            (FieldType::List(inner), Value::List(items)) => {
                return J::Array(
                    items
                        .iter()
                        .map(|i| self.typed_value(i, inner, false, types, what))
                        .collect(),
                );
            }
            (FieldType::Map(inner), Value::Map(entries)) => {
                return J::Object(
                    entries
                        .iter()
                        .map(|(k, i)| {
                            (
                                k.value.clone(),
                                self.typed_value(i, inner, false, types, what),
                            )
                        })
                        .collect(),
                );
            }
            (FieldType::Named(n), typed) => {
                match types.iter().find(|d| *d.name == *n).map(|d| &d.kind) {
                    Some(TypeKind::Enum(variants)) => match text {
                        Some(t) if variants.iter().any(|x| **x == *t) => {
                            return J::String(t.to_owned());
                        }
                        Some(t) => {
                            let hint = suggestion(t, variants.iter().map(|x| x.as_str()));
                            let all: Vec<String> = variants
                                .iter()
                                .map(|x| format!("`{}`", x.as_str()))
                                .collect();
                            self.diags.push(
                                Diagnostic::error(
                                    "E014",
                                    &v.origin,
                                    format!(
                                        "{what} is `{t}`, which is not a variant of `{n}`{hint}"
                                    ),
                                )
                                .help(format!("`{n}` has the variants {}", all.join(", "))),
                            );
                            return json();
                        }
                        None => false,
                    },
                    Some(TypeKind::Struct(fields)) => match typed {
                        Value::Map(entries) => {
                            return J::Object(
                                entries
                                    .iter()
                                    .map(|(k, i)| {
                                        let value =
                                            match fields.iter().find(|f| *f.name == k.value) {
                                                Some(f) => self
                                                    .typed_value(i, &f.ty, f.optional, types, what),
                                                None => kvmodel_codegen::value::to_json(i)
                                                    .unwrap_or(J::Null),
                                            };
                                        (k.value.clone(), value)
                                    })
                                    .collect(),
                            );
                        }
                        _ => false,
                    },
                    None => true,
                }
            }
            _ => false,
        };
        if !fits {
            self.err(
                "E014",
                &v.origin,
                format!(
                    "{what} is {}, which does not fit type `{}`",
                    v.value.kind(),
                    ty.schema_name()
                ),
            );
        }
        json()
    }
}

/// Defaults are written as Rust expressions in the generated code; these are
/// the types that have a plain one.
pub(super) fn default_supported(ty: &FieldType, v: &serde_json::Value, types: &[TypeDef]) -> bool {
    match (ty, v) {
        (_, serde_json::Value::Null) => true,
        (
            FieldType::String
            | FieldType::Bool
            | FieldType::I32
            | FieldType::I64
            | FieldType::U32
            | FieldType::U64
            | FieldType::F64,
            _,
        ) => true,
        (FieldType::List(_), serde_json::Value::Array(items)) => items.is_empty(),
        (FieldType::Named(n), _) => types
            .iter()
            .any(|t| *t.name == *n && matches!(t.kind, TypeKind::Enum(_))),
        _ => false,
    }
}

/// Names, on each parent, the relations of its children that its delete
/// enforces (`on_delete: restrict | cascade`): the schema sees every entity,
/// so the parent's declaration is filled in here and never goes out of step.
fn dependents(model: &mut Model) {
    let found: Vec<(String, kvmodel_codegen::ir::Dependent)> = model
        .entities
        .iter()
        .flat_map(|child| {
            child
                .relations
                .iter()
                .filter(|r| r.on_delete.enforced())
                .map(|r| {
                    (
                        r.belongs_to.value.clone(),
                        kvmodel_codegen::ir::Dependent {
                            entity: Sp::new(child.name.value.clone(), r.on_delete.origin.clone()),
                            relation: Sp::new(r.name.value.clone(), r.on_delete.origin.clone()),
                            origin: r.on_delete.origin.clone(),
                        },
                    )
                })
        })
        .collect();
    for (parent, d) in found {
        if let Some(p) = model.entities.iter_mut().find(|e| *e.name == parent) {
            p.dependents.push(d);
        }
    }
}
