//! Lowering a YAML schema to the model IR, reporting every problem.
//!
//! This module reads the document, named types and fields; `entity` reads
//! an entity's key, indexes, counters, relations, TTL and migrations.

mod entity;

use serde_saphyr::Spanned;

use kvmodel_codegen::ir::{Field, FieldExpr, FieldType, Model, TypeDef, TypeKind};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Origin, Sp, suggestion};
use kvmodel_codegen::vocab::{self, Mistake};

use crate::node::{Locator, Value};

type Node = Spanned<Value>;

const TOP_KEYS: &[&str] = &["kvmodel", "namespace", "entities", "types"];
const ENTITY_KEYS: &[&str] = &[
    "key",
    "version",
    "encoding",
    "ttl",
    "colocate",
    "fields",
    "indexes",
    "counters",
    "relations",
    "migrations",
    "description",
];
const FIELD_KEYS: &[&str] = &["type", "optional", "default", "description"];
const TTL_KEYS: &[&str] = &["after", "jitter"];
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
        let at = self.loc.at(n);
        self.report(vocab::wrong_kind(expected, n.value.kind()), &at);
    }

    /// The entries of a mapping whose keys are in `known`; others are reported.
    pub(super) fn entries<'n>(
        &mut self,
        n: &'n Node,
        known: &[&str],
        what: &str,
    ) -> Vec<(&'n Spanned<String>, &'n Node)> {
        match &n.value {
            Value::Map(entries) => {
                let mut out = Vec::new();
                for (k, v) in entries {
                    if known.contains(&k.value.as_str()) {
                        out.push((k, v));
                    } else {
                        let at = self.loc.at(k);
                        self.report(vocab::unknown_key(&k.value, what, known), &at);
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

    pub(super) fn string(&mut self, n: &Node, what: &str) -> Option<Sp<String>> {
        self.text(n, "a string", what)
    }

    /// A name of something in the model (a field, an entity).
    pub(super) fn name(&mut self, n: &Node, what: &str) -> Option<Sp<String>> {
        self.text(n, "a name", what)
    }

    fn text(&mut self, n: &Node, expected: &str, what: &str) -> Option<Sp<String>> {
        match &n.value {
            Value::Str(s) => Some(Sp::new(s.clone(), self.loc.at(n))),
            _ => {
                self.wrong(n, &format!("{expected} for {what}"));
                None
            }
        }
    }

    /// A record version (`version`, `since`, `from`).
    pub(super) fn version(&mut self, n: &Node, what: &str) -> Option<Sp<u32>> {
        let at = self.loc.at(n);
        match &n.value {
            Value::Int(i) => match vocab::version_number(*i, what) {
                Ok(v) => Some(Sp::new(v, at)),
                Err(m) => {
                    self.report(m, &at);
                    None
                }
            },
            _ => {
                self.wrong(n, &format!("a version number for {what}"));
                None
            }
        }
    }

    /// A string parsed by the vocabulary (`encoding`, `normalize`).
    pub(super) fn word<T: std::str::FromStr<Err = Mistake>>(
        &mut self,
        n: &Node,
        what: &str,
    ) -> Option<Sp<T>> {
        let s = self.string(n, what)?;
        match s.parse::<T>() {
            Ok(t) => Some(Sp::new(t, s.origin)),
            Err(m) => {
                self.report(m, &s.origin);
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, n: &Node, what: &str) -> Option<bool> {
        match &n.value {
            Value::Bool(b) => Some(*b),
            _ => {
                self.wrong(n, &format!("true or false for {what}"));
                None
            }
        }
    }

    pub(super) fn string_list(&mut self, n: &Node, what: &str) -> Vec<Sp<String>> {
        match &n.value {
            Value::Seq(items) => items.iter().filter_map(|i| self.name(i, what)).collect(),
            Value::Str(_) => self.name(n, what).into_iter().collect(),
            _ => {
                self.wrong(n, &format!("a list of names for {what}"));
                Vec::new()
            }
        }
    }

    /// A `description:`, kept as [`vocab::description`] normalizes it.
    pub(super) fn description(&mut self, n: &Node) -> Option<String> {
        self.string(n, "`description`")
            .and_then(|s| vocab::description(&s))
    }

    pub(super) fn field_expr(&mut self, n: &Node, what: &str) -> Option<Sp<FieldExpr>> {
        self.word(n, what)
    }

    /// Lowers a whole document.
    pub fn model(&mut self, doc: &Node) -> Model {
        let mut model = Model::default();
        let mut namespace = None;
        let mut version_seen = false;
        let mut entities = None;
        for (k, v) in self.entries(doc, TOP_KEYS, "the schema") {
            match k.value.as_str() {
                "kvmodel" => {
                    version_seen = true;
                    if !matches!(v.value, Value::Int(1)) {
                        let at = self.loc.at(v);
                        self.err("E015", &at, "this file declares a schema format this kvmodel does not read; expected `kvmodel: 1`");
                    }
                }
                "namespace" => namespace = self.string(v, "`namespace`"),
                "entities" => entities = Some(v),
                "types" => model.types = self.types(v),
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
                        if let Some(ent) = self.entity(name, body, namespace.clone(), &model.types)
                        {
                            model.entities.push(ent);
                        }
                    }
                } else {
                    self.wrong(e, "a mapping of entity names to entities");
                }
            }
            None => self.err(
                "E011",
                &start,
                "the schema needs `entities:`, a mapping of entity names to their declarations",
            ),
        }
        model
    }

    fn types(&mut self, n: &Node) -> Vec<TypeDef> {
        let Value::Map(list) = &n.value else {
            self.wrong(n, "a mapping of type names to types");
            return Vec::new();
        };
        let mut out: Vec<(TypeDef, Option<&Node>)> = Vec::new();
        for (name, body) in list {
            let origin = self.loc.at(name);
            self.rule(vocab::upper_camel_case("type", &name.value), &origin);
            let (mut kind, mut fields, mut description) = (None, None, None);
            for (k, v) in self.entries(body, TYPE_KEYS, &format!("type `{}`", name.value)) {
                match k.value.as_str() {
                    "description" => description = self.description(v),
                    "enum" => {
                        let variants = self.string_list(v, "the enum variants");
                        for var in &variants {
                            self.rule(vocab::variant(var), &var.origin);
                        }
                        if variants.is_empty() {
                            let at = self.loc.at(v);
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
                    *fs = self.fields(node, &known);
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

    pub(super) fn fields(&mut self, n: &Node, types: &[TypeDef]) -> Vec<Field> {
        let Value::Map(list) = &n.value else {
            self.wrong(n, "a mapping of field names to types");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, body) in list {
            let origin = self.loc.at(name);
            self.rule(vocab::snake_case("E012", "field", &name.value), &origin);
            let mut description = None;
            let (ty_text, optional, default) = match &body.value {
                Value::Str(s) => (Some(Sp::new(s.clone(), self.loc.at(body))), false, None),
                Value::Map(_) => {
                    let mut ty = None;
                    let mut optional = false;
                    let mut default = None;
                    for (k, v) in self.entries(body, FIELD_KEYS, &format!("field `{}`", name.value))
                    {
                        match k.value.as_str() {
                            "description" => description = self.description(v),
                            "type" => ty = self.string(v, "`type`"),
                            "optional" => optional = self.boolean(v, "`optional`").unwrap_or(false),
                            "default" => default = Some(v),
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
            let Some(ty_text) = ty_text else { continue };
            let Some(ty) = self.parse_type(&ty_text, &ty_text.origin, types) else {
                continue;
            };
            let default = default.map(|d| {
                let at = self.loc.at(d);
                let what = format!("the default of `{}`", name.value);
                self.check_value(&d.value, &ty, optional, types, &at, &what);
                if !default_supported(&ty, &d.value, types) {
                    self.diags.push(
                        Diagnostic::error("E014", &at, format!("{what} has type `{}`, for which defaults are not supported", ty.schema_name()))
                            .help("defaults work for strings, numbers, booleans, enum variants and empty lists; make the field `optional: true` instead"),
                    );
                }
                Sp::new(d.value.to_json(), at)
            });
            out.push(Field {
                name: Sp::new(name.value.clone(), origin.clone()),
                ty: Sp::new(ty, ty_text.origin),
                optional,
                default,
                description,
                origin,
            });
        }
        out
    }

    /// Reports a value that does not fit a type.
    pub(crate) fn check_value(
        &mut self,
        v: &Value,
        ty: &FieldType,
        optional: bool,
        types: &[TypeDef],
        at: &Origin,
        what: &str,
    ) {
        let ok = match (ty, v) {
            (_, Value::Null) => optional,
            (FieldType::String, Value::Str(_)) => true,
            (FieldType::Bool, Value::Bool(_)) => true,
            (FieldType::I32, Value::Int(i)) => i32::try_from(*i).is_ok(),
            (FieldType::I64, Value::Int(_)) => true,
            (FieldType::U32, Value::Int(i)) => u32::try_from(*i).is_ok(),
            (FieldType::U64, Value::Int(i)) => *i >= 0,
            (FieldType::F64, Value::Int(_) | Value::Float(_)) => true,
            (FieldType::Timestamp | FieldType::Date | FieldType::Uuid, Value::Str(_)) => true,
            (FieldType::List(inner), Value::Seq(items)) => {
                for i in items {
                    let iat = self.loc.at(i);
                    self.check_value(&i.value, inner, false, types, &iat, what);
                }
                true
            }
            (FieldType::Map(_), Value::Map(_)) => true,
            (FieldType::Named(n), v) => match types.iter().find(|d| *d.name == *n).map(|d| &d.kind)
            {
                Some(TypeKind::Enum(variants)) => match v {
                    Value::Str(s) if variants.iter().any(|x| **x == *s) => true,
                    Value::Str(s) => {
                        let hint = suggestion(s, variants.iter().map(|x| x.as_str()));
                        self.err(
                            "E014",
                            at,
                            format!("{what} is `{s}`, which is not a variant of `{n}`{hint}"),
                        );
                        return;
                    }
                    _ => false,
                },
                Some(TypeKind::Struct(_)) => matches!(v, Value::Map(_)),
                None => true,
            },
            _ => false,
        };
        if !ok {
            self.err(
                "E014",
                at,
                format!(
                    "{what} is {}, which does not fit type `{}`",
                    v.kind(),
                    ty.schema_name()
                ),
            );
        }
    }
}

/// Defaults are written as Rust expressions in the generated code; these are
/// the types that have a plain one.
pub(super) fn default_supported(ty: &FieldType, v: &Value, types: &[TypeDef]) -> bool {
    match (ty, v) {
        (_, Value::Null) => true,
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
        (FieldType::List(_), Value::Seq(items)) => items.is_empty(),
        (FieldType::Named(n), _) => types
            .iter()
            .any(|t| *t.name == *n && matches!(t.kind, TypeKind::Enum(_))),
        _ => false,
    }
}
