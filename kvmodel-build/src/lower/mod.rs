//! Lowering a YAML schema to the model IR, reporting every problem.
//!
//! This module reads the document, named types and fields; `entity` reads
//! an entity's key, indexes, counters, relations, TTL and migrations.

mod entity;

use heck::ToUpperCamelCase;
use serde_saphyr::Spanned;

use kvmodel_codegen::ir::{Field, FieldExpr, FieldType, Model, TypeDef, TypeKind};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Origin, Sp, suggestion};

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
];
const FIELD_KEYS: &[&str] = &["type", "optional", "default"];
const INDEX_KEYS: &[&str] = &["fields", "unique", "normalize", "order_by", "since"];
const COUNTER_KEYS: &[&str] = &["group_by", "sum", "since"];
const RELATION_KEYS: &[&str] = &["belongs_to", "by", "order_by", "since"];
const TTL_KEYS: &[&str] = &["after", "jitter"];
const MIGRATION_KEYS: &[&str] = &["from", "rename", "add", "remove"];
const TYPE_KEYS: &[&str] = &["enum", "fields"];

pub(crate) struct Lower<'d> {
    pub loc: Locator,
    pub diags: &'d mut Diagnostics,
}

fn is_snake(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_camel(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && s.chars().all(|c| c.is_ascii_alphanumeric())
        && s.to_upper_camel_case() == s
}

impl Lower<'_> {
    /// E012 unless `name` is UpperCamelCase (a Rust type name).
    pub(super) fn require_camel(&mut self, what: &str, name: &str, at: &Origin) {
        if !is_camel(name) {
            let camel = name.to_upper_camel_case();
            self.err(
                "E012",
                at,
                format!("the {what} name `{name}` must be UpperCamelCase, like `{camel}`"),
            );
        }
    }

    pub(super) fn err(&mut self, code: &'static str, at: &Origin, msg: impl Into<String>) {
        self.diags.error(code, at, msg);
    }

    pub(super) fn wrong(&mut self, n: &Node, expected: &str) {
        let at = self.loc.at(n);
        let found = n.value.kind();
        self.err("E010", &at, format!("expected {expected}, found {found}"));
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
                        let hint = suggestion(&k.value, known.iter().copied());
                        let at = self.loc.at(k);
                        self.diags.push(
                            Diagnostic::error(
                                "E001",
                                &at,
                                format!("unknown key `{}` in {what}{hint}", k.value),
                            )
                            .help(format!("expected one of: {}", known.join(", "))),
                        );
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
        match &n.value {
            Value::Str(s) => Some(Sp::new(s.clone(), self.loc.at(n))),
            _ => {
                self.wrong(n, &format!("a string for {what}"));
                None
            }
        }
    }

    pub(super) fn uint(&mut self, n: &Node, what: &str) -> Option<Sp<u32>> {
        match &n.value {
            Value::Int(i) if *i >= 1 && *i <= i64::from(u32::MAX) => {
                Some(Sp::new(*i as u32, self.loc.at(n)))
            }
            _ => {
                self.wrong(n, &format!("a positive integer for {what}"));
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
            Value::Seq(items) => items.iter().filter_map(|i| self.string(i, what)).collect(),
            Value::Str(_) => self.string(n, what).into_iter().collect(),
            _ => {
                self.wrong(n, &format!("a list of names for {what}"));
                Vec::new()
            }
        }
    }

    pub(super) fn field_expr(&mut self, n: &Node, what: &str) -> Option<Sp<FieldExpr>> {
        let s = self.string(n, what)?;
        match FieldExpr::parse(&s) {
            Some(x) => Some(Sp::new(x, s.origin)),
            None => {
                self.err("E010", &s.origin, format!("`{}` is not a field or a time bucket; expected `field`, `hour(field)`, `day(field)` or `month(field)`", *s));
                None
            }
        }
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
            self.require_camel("type", &name.value, &origin);
            let mut kind = None;
            let mut fields = None;
            for (k, v) in self.entries(body, TYPE_KEYS, &format!("type `{}`", name.value)) {
                match k.value.as_str() {
                    "enum" => {
                        let variants = self.string_list(v, "the enum variants");
                        for var in &variants {
                            if !is_snake(var)
                                || heck::ToSnakeCase::to_snake_case(
                                    var.to_upper_camel_case().as_str(),
                                ) != **var
                            {
                                self.err("E012", &var.origin, format!("the enum variant `{}` must be snake_case words (like `on_hold`), because it is stored as written", **var));
                            }
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
        let t = text.trim();
        let prim = match t {
            "string" => Some(FieldType::String),
            "bool" => Some(FieldType::Bool),
            "i32" => Some(FieldType::I32),
            "i64" => Some(FieldType::I64),
            "u32" => Some(FieldType::U32),
            "u64" => Some(FieldType::U64),
            "f64" => Some(FieldType::F64),
            "bytes" => Some(FieldType::Bytes),
            "timestamp" => Some(FieldType::Timestamp),
            "date" => Some(FieldType::Date),
            "uuid" => Some(FieldType::Uuid),
            _ => None,
        };
        if prim.is_some() {
            return prim;
        }
        if let Some(inner) = t.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
            return Some(FieldType::List(Box::new(
                self.parse_type(inner, at, types)?,
            )));
        }
        if let Some(inner) = t.strip_prefix("map<").and_then(|r| r.strip_suffix('>')) {
            let Some((key, value)) = inner.split_once(',') else {
                self.err(
                    "E013",
                    at,
                    format!("`{t}` is not a map type; expected `map<string, T>`"),
                );
                return None;
            };
            if key.trim() != "string" {
                self.err(
                    "E013",
                    at,
                    format!(
                        "map keys must be strings; write `map<string, {}>`",
                        value.trim()
                    ),
                );
                return None;
            }
            return Some(FieldType::Map(Box::new(self.parse_type(value, at, types)?)));
        }
        if types.iter().any(|d| *d.name == t) {
            return Some(FieldType::Named(t.to_owned()));
        }
        const BUILTIN: &[&str] = &[
            "string",
            "bool",
            "i32",
            "i64",
            "u32",
            "u64",
            "f64",
            "bytes",
            "timestamp",
            "date",
            "uuid",
        ];
        let hint = suggestion(
            t,
            BUILTIN
                .iter()
                .copied()
                .chain(types.iter().map(|d| d.name.as_str())),
        );
        self.diags.push(
            Diagnostic::error("E013", at, format!("unknown type `{t}`{hint}"))
                .help("use string, bool, i32, i64, u32, u64, f64, bytes, timestamp, date, uuid, list<T>, map<string, T>, or a name declared under `types:`"),
        );
        None
    }

    pub(super) fn fields(&mut self, n: &Node, types: &[TypeDef]) -> Vec<Field> {
        let Value::Map(list) = &n.value else {
            self.wrong(n, "a mapping of field names to types");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, body) in list {
            let origin = self.loc.at(name);
            if !is_snake(&name.value) {
                self.err(
                    "E012",
                    &origin,
                    format!("the field name `{}` must be snake_case", name.value),
                );
            }
            let (ty_text, optional, default) = match &body.value {
                Value::Str(s) => (Some(Sp::new(s.clone(), self.loc.at(body))), false, None),
                Value::Map(_) => {
                    let mut ty = None;
                    let mut optional = false;
                    let mut default = None;
                    for (k, v) in self.entries(body, FIELD_KEYS, &format!("field `{}`", name.value))
                    {
                        match k.value.as_str() {
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
