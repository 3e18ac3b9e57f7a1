//! Every cross-field rule of a model, written once for both front-ends.
//!
//! Each rule says why it exists. All problems are collected; none stops the
//! others from being found.

use std::collections::BTreeMap;

use heck::ToSnakeCase;

use crate::ir::{Entity, FieldExpr, FieldType, KeyTemplate, Model, Segment};
use crate::origin::{Diagnostic, Diagnostics, Origin, Sp, suggestion};
use crate::template;
use crate::vocab;

mod expiry;
mod links;
mod migrations;
pub(crate) mod names;
mod on_delete;
mod proto;
mod storage;
pub mod tally;
mod types;

use names::NameSet;

/// Checks a whole model.
pub fn check_model(model: &Model, diags: &mut Diagnostics) {
    for e in &model.entities {
        check_entity(e, Some(model), diags);
    }
    check_cross_entity(model, diags);
    on_delete::check_model(model, diags);
    types::check(model, diags);
    expiry::check_types(model, diags);
    for t in &model.tallies {
        tally::check(t, Some(model), diags);
    }
    tally::check_across(model, diags);
}

/// The rules between entities of a model (E125, E126 and the methods links
/// give far entities), without the rules of each entity: what a model read
/// from several files adds to the rules each file was checked with.
pub fn check_across(model: &Model, diags: &mut Diagnostics) {
    check_cross_entity(model, diags);
}

/// Checks one entity. `model` gives the other entities and named types when
/// known (YAML); the derive sees one entity at a time.
pub fn check_entity(e: &Entity, model: Option<&Model>, diags: &mut Diagnostics) {
    check_basics(e, model.is_none(), diags);
    storage::check(e, diags);
    proto::check(e, model, diags);
    on_delete::check(e, diags);
    expiry::check(e, diags);
    if e.key.is_none() {
        // Record-only types (old versions in a `migrate_from` chain) have no
        // keys, so nothing may be derived from them.
        if let Some(first) = e
            .indexes
            .first()
            .map(|i| &i.origin)
            .or(e.counters.first().map(|c| &c.origin))
            .or(e.relations.first().map(|r| &r.origin))
            .or(e.links.first().map(|l| &l.origin))
        {
            diags.error("E123", first, format!("`{}` has indexes, counters or relations but no `key`; add `key = \"…\"` so its records can be stored", *e.name));
        }
        if let Some(c) = &e.colocate {
            diags.error("E123", &c.origin, "`colocate` needs a `key`");
        }
        if let Some(t) = &e.ttl {
            diags.error("E123", &t.after_ms.origin, "`ttl` needs a `key`");
        }
        migrations::check(e, diags);
        return;
    }
    check_key(e, diags);
    let mut names = NameSet::default();
    for ix in &e.indexes {
        check_index(e, ix, model, diags);
        names.add(
            diags,
            &ix.name,
            if ix.unique { "find_" } else { "list_" },
            "",
            "index",
        );
    }
    for c in &e.counters {
        check_counter(e, c, model, diags);
        names.add(
            diags,
            &c.name,
            if c.sum.is_some() { "sum_" } else { "count_" },
            "counter_",
            "counter",
        );
    }
    for r in &e.relations {
        check_relation(e, r, model, diags);
        names.add(diags, &r.name, "list_by_", "relation_", "relation");
    }
    for l in &e.links {
        links::check(e, l, model, &mut names, diags);
    }
    migrations::check(e, diags);
    if let Some(c) = &e.colocate {
        // The hash tag must be computable from the key alone, or `get(id)`
        // could not find the record's slot.
        let in_key = e
            .key
            .as_ref()
            .is_some_and(|k| k.placeholders().any(|p| p == c.as_str()));
        if !in_key {
            diags.push(Diagnostic::error("E120", &c.origin, format!("{} must name a placeholder of the key template", vocab::setting(&c.origin, "colocate", c)))
                .help("co-location puts a hash tag in every key; the record key can only carry it if the field is part of the key"));
        }
    }
}

/// `alone`: the entity is checked on its own (the derive), so its missing
/// namespace is its own error (E100); a schema file has one namespace for
/// every entity, and its front-end reports a missing one once (E011).
fn check_basics(e: &Entity, alone: bool, diags: &mut Diagnostics) {
    if *e.version < 1 {
        diags.error(
            "E106",
            &e.version.origin,
            "the record version must be at least 1",
        );
    }
    match (&e.namespace, &e.key) {
        (ns, Some(k)) => check_namespace(&e.name, ns.as_ref(), &k.origin, alone, diags),
        (Some(ns), None) => check_namespace(&e.name, Some(ns), &ns.origin, false, diags),
        (None, None) => {}
    }
}

/// The namespace of `name`, whose key is written at `key`: E100 when it
/// has none and is checked `alone` (see [`check_basics`]), E101 when it is
/// not a literal.
fn check_namespace(
    name: &str,
    ns: Option<&Sp<String>>,
    key: &Origin,
    alone: bool,
    diags: &mut Diagnostics,
) {
    match ns {
        None if alone => diags.push(
            Diagnostic::error("E100", key, format!("`{name}` has a key but no namespace"))
                .help(format!("add {}: it becomes the first segment of every key", vocab::setting(key, "namespace", "\"app\""))),
        ),
        Some(ns) if !ns.starts_with(|c: char| c.is_ascii_lowercase()) || !template::is_literal(ns) => diags.error(
            "E101",
            &ns.origin,
            format!("the namespace `{}` must start with a lowercase letter and contain only lowercase letters, digits, `_` and `-`", **ns),
        ),
        _ => {}
    }
}

fn field_names(e: &Entity) -> impl Iterator<Item = &str> {
    e.fields.iter().map(|f| f.name.as_str())
}

fn unknown_field(e: &Entity, name: &str, origin: &Origin, role: &str, diags: &mut Diagnostics) {
    // A field whose declaration failed is reported there; naming it again
    // as "not a field" would be a second, misleading error.
    if e.broken_fields.iter().any(|f| f == name) {
        return;
    }
    let hint = suggestion(name, field_names(e));
    diags.error(
        "E103",
        origin,
        format!(
            "{role} names `{name}`, which is not a field of `{}`{hint}",
            *e.name
        ),
    );
}

/// Whether a named type is known to have no key/sort encoding (YAML structs).
fn named_is_struct(ty: &FieldType, model: Option<&Model>) -> bool {
    let FieldType::Named(n) = ty else {
        return false;
    };
    model.is_some_and(|m| {
        m.types
            .iter()
            .any(|t| *t.name == *n && matches!(t.kind, crate::ir::TypeKind::Struct(_)))
    })
}

fn check_key(e: &Entity, diags: &mut Diagnostics) {
    let Some(k) = &e.key else { return };
    // A leading literal keeps entities' key spaces apart: without it, one
    // entity's id could spell another entity's key.
    let Some(placeholders) = key_template(k, &e.name.to_snake_case(), diags) else {
        return;
    };
    for &p in &placeholders {
        match e.field(p) {
            None => unknown_field(e, p, &k.origin, "the key template", diags),
            Some(f) if f.optional => diags.error("E104", &k.origin, format!("the key field `{p}` is optional; a primary key must always have a value")),
            Some(f) if !f.ty.is_keyable() => diags.error("E104", &k.origin, format!("the key field `{p}` has type `{}`, which cannot be a key component; use a string, integer, bool, uuid, timestamp or enum field", f.ty.schema_name())),
            Some(_) => {}
        }
    }
    if placeholders.is_empty() {
        diags.push(Diagnostic::error("E104", &k.origin, format!("the key template `{}` has no `{{field}}` placeholder, so every record would share one key", k.text)));
    }
}

/// The checks of a key template of its own, an entity's or a standalone
/// counter's: its parse error (E102, and nothing more to check: `None`), a
/// leading literal (E102; the help starts the template with `example`),
/// each placeholder once (E105). Returns the placeholders, each once, for
/// the caller to check against its fields.
pub(crate) fn key_template<'k>(
    k: &'k KeyTemplate,
    example: &str,
    diags: &mut Diagnostics,
) -> Option<Vec<&'k str>> {
    if let Some(msg) = &k.error {
        diags.error("E102", &k.origin, msg.clone());
        return None;
    }
    if !matches!(k.segments.first(), Some(Segment::Literal(_))) {
        diags.push(
            Diagnostic::error(
                "E102",
                &k.origin,
                format!(
                    "the key template `{}` must start with a literal segment",
                    k.text
                ),
            )
            .help(format!("write e.g. \"{example}:{}\"", k.text)),
        );
    }
    let mut seen = Vec::new();
    for p in k.placeholders() {
        if seen.contains(&p) {
            diags.error(
                "E105",
                &k.origin,
                format!("the placeholder `{{{p}}}` appears twice in the key template"),
            );
        } else {
            seen.push(p);
        }
    }
    Some(seen)
}

fn check_keyable(
    e: &Entity,
    name: &str,
    origin: &Origin,
    role: &str,
    model: Option<&Model>,
    diags: &mut Diagnostics,
) {
    match e.field(name) {
        None => unknown_field(e, name, origin, role, diags),
        Some(f) if !f.ty.is_keyable() || named_is_struct(&f.ty, model) => diags.error(
            "E108",
            origin,
            format!("{role} uses `{name}` of type `{}`, which cannot be part of a key; use a string, integer, bool, uuid, timestamp or enum field", f.ty.schema_name()),
        ),
        Some(_) => {}
    }
}

fn check_field_expr(
    e: &Entity,
    x: &Sp<FieldExpr>,
    role: &str,
    sortable: bool,
    model: Option<&Model>,
    diags: &mut Diagnostics,
) {
    let name = x.field();
    let Some(f) = e.field(name) else {
        unknown_field(e, name, &x.origin, role, diags);
        return;
    };
    if !matches!(x.value, FieldExpr::Field(_)) && !matches!(*f.ty, FieldType::Timestamp) {
        diags.error("E114", &x.origin, format!("`{}` buckets time, but `{name}` has type `{}`; time buckets need a timestamp field", x.value, f.ty.schema_name()));
        return;
    }
    if sortable && (!f.ty.is_sortable() || named_is_struct(&f.ty, model)) {
        diags.error("E111", &x.origin, format!("{role} uses `{name}` of type `{}`, which has no order-preserving encoding; order by an integer, timestamp, string, bool, uuid or enum field", f.ty.schema_name()));
    } else if !sortable && (!f.ty.is_keyable() || named_is_struct(&f.ty, model)) {
        diags.error(
            "E108",
            &x.origin,
            format!(
                "{role} uses `{name}` of type `{}`, which cannot be part of a key",
                f.ty.schema_name()
            ),
        );
    }
}

fn check_since(e: &Entity, since: &Sp<u32>, diags: &mut Diagnostics) {
    // `since` names a record version; one past the current version would
    // never apply.
    if since.value < 1 || since.value > e.version.value {
        diags.error(
            "E119",
            &since.origin,
            format!(
                "{} must be between 1 and the entity's version {}",
                vocab::setting(&since.origin, "since", &since.value.to_string()),
                e.version.value
            ),
        );
    }
}

fn check_index(e: &Entity, ix: &crate::ir::Index, model: Option<&Model>, diags: &mut Diagnostics) {
    if ix.fields.is_empty() {
        diags.error(
            "E107",
            &ix.origin,
            format!(
                "the index `{}` has no fields; add {}",
                *ix.name,
                vocab::list_setting(&ix.origin, "fields", "…")
            ),
        );
    }
    for (i, x) in ix.fields.iter().enumerate() {
        if ix.fields[..i].iter().any(|y| y.value == x.value) {
            diags.error(
                "E107",
                &x.origin,
                format!(
                    "`{}` is listed twice in the fields of index `{}`",
                    x.value, *ix.name
                ),
            );
        }
        let role = format!("the index `{}`", *ix.name);
        match &x.value {
            FieldExpr::Field(f) => check_keyable(e, f, &x.origin, &role, model, diags),
            _ => check_field_expr(e, x, &role, false, model, diags),
        }
    }
    if let Some(n) = &ix.normalize {
        let all_strings = ix.fields.iter().all(|x| match &x.value {
            FieldExpr::Field(f) => e
                .field(f)
                .is_none_or(|f| matches!(*f.ty, FieldType::String)),
            _ => false,
        });
        if !all_strings {
            diags.error(
                "E109",
                &n.origin,
                format!(
                    "`normalize` applies to string fields only, and index `{}` has other fields",
                    *ix.name
                ),
            );
        }
    }
    if let Some(o) = &ix.order_by {
        if ix.unique {
            // A unique value has one record: there is nothing to order.
            diags.error("E110", &o.origin, format!("the unique index `{}` cannot have `order_by`; remove it, or drop `unique` for an ordered listing", *ix.name));
        } else {
            check_field_expr(
                e,
                o,
                &format!("the `order_by` of index `{}`", *ix.name),
                true,
                model,
                diags,
            );
        }
    }
    check_since(e, &ix.since, diags);
}

fn check_counter(
    e: &Entity,
    c: &crate::ir::Counter,
    model: Option<&Model>,
    diags: &mut Diagnostics,
) {
    // A group named twice splits nothing further and would take the same
    // argument twice.
    for (i, g) in c.group_by.iter().enumerate() {
        if c.group_by[..i].iter().any(|h| h.value == g.value) {
            diags.error(
                "E107",
                &g.origin,
                format!(
                    "`{}` is listed twice in the `group_by` of counter `{}`",
                    g.value, *c.name
                ),
            );
        }
    }
    for g in &c.group_by {
        check_field_expr(
            e,
            g,
            &format!("the `group_by` of counter `{}`", *c.name),
            false,
            model,
            diags,
        );
    }
    if let Some(s) = &c.sum {
        match e.field(s) {
            None => unknown_field(e, s, &s.origin, &format!("the `sum` of counter `{}`", *c.name), diags),
            Some(f) if !f.ty.is_integer() => diags.error("E113", &s.origin, format!("counter `{}` sums `{}` of type `{}`; sums need an integer field (i32, i64, u32, u64)", *c.name, **s, f.ty.schema_name())),
            Some(f) => check_kept_sum(c, s, &f.ty, diags),
        }
    }
    check_since(e, &c.since, diags);
}

/// E150: a counter that keeps the amounts of records that are gone may only
/// sum an unsigned field. The live records must bound it from below, so
/// that `verify` can check it and `reconcile` never lowers it; a kept
/// negative amount would put it below them.
fn check_kept_sum(
    c: &crate::ir::Counter,
    sum: &Sp<String>,
    ty: &FieldType,
    diags: &mut Diagnostics,
) {
    let Some(keep) = &c.keep else { return };
    if matches!(ty, FieldType::U32 | FieldType::U64) {
        return;
    }
    diags.error(
        "E150",
        &keep.origin,
        format!(
            "counter `{}` keeps the amounts of records that are gone (`keep: {}`) but sums `{}` \
             of type `{}`; a kept sum needs an unsigned field (u32, u64): a negative amount \
             kept after its record left would put the counter below what the live records \
             add up to, which `verify` checks",
            *c.name,
            keep.value,
            **sum,
            ty.schema_name()
        ),
    );
}

fn check_relation(
    e: &Entity,
    r: &crate::ir::Relation,
    model: Option<&Model>,
    diags: &mut Diagnostics,
) {
    check_keyable(
        e,
        &r.by,
        &r.by.origin,
        &format!("the relation `{}`", *r.name),
        model,
        diags,
    );
    if let Some(o) = &r.order_by {
        check_field_expr(
            e,
            o,
            &format!("the `order_by` of relation `{}`", *r.name),
            true,
            model,
            diags,
        );
    }
    if let Some(m) = model {
        if !m.entities.iter().any(|x| *x.name == *r.belongs_to) {
            let hint = suggestion(&r.belongs_to, m.entities.iter().map(|x| x.name.as_str()));
            let mut d = Diagnostic::error(
                "E115",
                &r.belongs_to.origin,
                format!(
                    "relation `{}` belongs to `{}`, which is not an entity of this schema{hint}",
                    *r.name, *r.belongs_to
                ),
            );
            if hint.is_empty() {
                // An entity of another file (a derive source) is known
                // when that file is read with this one.
                d = d.help(format!(
                    "if `{}` is declared in another file (a schema file, or Rust source of `#[derive(KvEntity)]` structs), give that file too: `--schema` takes several",
                    *r.belongs_to
                ));
            }
            diags.push(d);
        }
    }
    check_since(e, &r.since, diags);
}

fn check_cross_entity(model: &Model, diags: &mut Diagnostics) {
    links::check_far(model, diags);
    let mut names = BTreeMap::new();
    for e in &model.entities {
        if names.insert(e.name.value.clone(), ()).is_some() {
            diags.error(
                "E125",
                &e.name.origin,
                format!("the entity `{}` is declared twice", *e.name),
            );
        }
    }
    // Two entities of one namespace must not meet in the key space: neither
    // in record keys (templates that could spell the same key) nor in
    // derived keys (the same literal segments).
    let keyed: Vec<(&Entity, &str, &KeyTemplate)> = model
        .entities
        .iter()
        .filter_map(|e| Some((e, e.namespace.as_ref()?.as_str(), e.key.as_ref()?)))
        .filter(|(_, _, k)| !k.segments.is_empty())
        .collect();
    for (i, (e, ns, k)) in keyed.iter().enumerate() {
        let tag = e.colocate.as_ref().map(|c| c.as_str());
        let earlier = keyed[..i].iter().find(|(o, ons, ok)| {
            ons == ns
                && (ok.key_space() == k.key_space()
                    || k.may_collide(tag, ok, o.colocate.as_ref().map(|c| c.as_str())))
        });
        if let Some((other, _, ok)) = earlier {
            let why = if ok.key_space() == k.key_space() {
                format!(
                    "both have the literal segments `{}`, which name the key space of their indexes and counters",
                    k.key_space()
                )
            } else {
                "a record of one could have the key of a record of the other".to_owned()
            };
            diags.push(
                Diagnostic::error(
                    "E126",
                    &k.origin,
                    format!(
                        "the key template `{}` of `{}` shares a key space with `{}` (`{}`): {why}",
                        k.text, *e.name, *other.name, ok.text
                    ),
                )
                .help("give each entity its own literal segments, such as `user:{id}` and `order:{id}`"),
            );
        }
    }
}
