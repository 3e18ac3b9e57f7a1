//! What changing a named type (`types:`, or a `KvEnum` in Rust) does to the
//! records that hold it.

use kvmodel_codegen::ir::{Entity, FieldExpr, FieldType, Model, TypeDef, TypeKind};

use super::{Change, Impact, push};

/// Whether `ty` holds the named type `name`, directly or inside a list, a
/// map or a struct type of `model`.
fn holds(ty: &FieldType, name: &str, model: &Model, depth: usize) -> bool {
    match ty {
        FieldType::List(inner) | FieldType::Map(inner) => holds(inner, name, model, depth),
        FieldType::Named(n) if *n == *name => true,
        // The depth bound keeps a recursive struct type from looping.
        FieldType::Named(n) if depth < 32 => model.types.iter().any(|t| {
            *t.name == *n
                && matches!(&t.kind, TypeKind::Struct(fields)
                    if fields.iter().any(|f| holds(&f.ty, name, model, depth + 1)))
        }),
        _ => false,
    }
}

/// `Entity.field` for every field of `model`'s entities that holds `name`.
fn holders(name: &str, model: &Model) -> Vec<String> {
    model
        .entities
        .iter()
        .flat_map(|e| {
            e.fields
                .iter()
                .filter(|f| holds(&f.ty, name, model, 0))
                .map(move |f| format!("{}.{}", *e.name, *f.name))
        })
        .collect()
}

/// `Entity.listing` for every index and relation of `model` ordered by a
/// field of the enum `name`: their entries sort by the variant's position.
fn ordered_by(name: &str, model: &Model) -> Vec<String> {
    let of_enum = |e: &Entity, x: &FieldExpr| {
        matches!(x, FieldExpr::Field(_))
            && e.field(x.field())
                .is_some_and(|f| matches!(&*f.ty, FieldType::Named(n) if *n == *name))
    };
    let mut out = Vec::new();
    for e in &model.entities {
        for ix in &e.indexes {
            if ix.order_by.as_ref().is_some_and(|o| of_enum(e, o)) {
                out.push(format!("{}.{}", *e.name, *ix.name));
            }
        }
        for r in &e.relations {
            if r.order_by.as_ref().is_some_and(|o| of_enum(e, o)) {
                out.push(format!("{}.{}", *e.name, *r.name));
            }
        }
    }
    out
}

/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
fn listed(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn variants(t: &TypeDef) -> Option<Vec<&str>> {
    match &t.kind {
        TypeKind::Enum(v) => Some(v.iter().map(|x| x.as_str()).collect()),
        TypeKind::Struct(_) => None,
    }
}

fn enum_changes(old: &TypeDef, new: &TypeDef, model: &Model, out: &mut Vec<Change>) {
    let name = new.name.as_str();
    let (Some(before), Some(after)) = (variants(old), variants(new)) else {
        return;
    };
    let held = holders(name, model);
    for v in before.iter().filter(|v| !after.contains(v)) {
        if held.is_empty() {
            push(
                out,
                Impact::Safe,
                format!(
                    "{name}: variant `{v}` removed; no field of an entity holds `{name}`, so nothing stored changes"
                ),
            );
        } else {
            push(
                out,
                Impact::Breaking,
                format!(
                    "{name}: variant `{v}` removed (held in {}); a stored record holding it no longer decodes: `get`, listings and `verify` fail on it and `migrate_all` skips it (rewrite those records to another variant first, or keep the variant)",
                    listed(&held)
                ),
            );
        }
    }
    for v in after.iter().filter(|v| !before.contains(v)) {
        push(
            out,
            Impact::Safe,
            format!(
                "{name}: new variant `{v}`; code built before it cannot read records that hold it"
            ),
        );
    }
    let kept_before: Vec<&&str> = before.iter().filter(|v| after.contains(v)).collect();
    let kept_after: Vec<&&str> = after.iter().filter(|v| before.contains(v)).collect();
    if kept_before != kept_after {
        let listings = ordered_by(name, model);
        if listings.is_empty() {
            push(
                out,
                Impact::Safe,
                format!(
                    "{name}: variants reordered; no listing is ordered by it, so nothing stored changes"
                ),
            );
        } else {
            push(
                out,
                Impact::Breaking,
                format!(
                    "{name}: variants reordered; entries of {} sort by a variant's position, so stored entries keep their old places and pages and bounds come out in the wrong order until `reconcile` rewrites them",
                    listed(&listings)
                ),
            );
        }
    }
}

fn struct_changes(old: &TypeDef, new: &TypeDef, model: &Model, out: &mut Vec<Change>) {
    let name = new.name.as_str();
    let (TypeKind::Struct(before), TypeKind::Struct(after)) = (&old.kind, &new.kind) else {
        return;
    };
    let held = !holders(name, model).is_empty();
    let harm = |i: Impact| if held { i } else { Impact::Safe };
    for f in after {
        match before.iter().find(|o| *o.name == *f.name) {
            None if f.optional || f.default.is_some() => push(
                out,
                Impact::Safe,
                format!(
                    "{name}.{}: new field; stored values read it as {}",
                    *f.name,
                    if f.optional { "None" } else { "its default" }
                ),
            ),
            None => push(
                out,
                harm(Impact::Breaking),
                format!(
                    "{name}.{}: new required field without default; stored values without it cannot be read (add `optional` or a `default`)",
                    *f.name
                ),
            ),
            Some(o) if *o.ty != *f.ty => push(
                out,
                harm(Impact::Breaking),
                format!(
                    "{name}.{}: type changed from `{}` to `{}`; stored values cannot be read",
                    *f.name,
                    o.ty.schema_name(),
                    f.ty.schema_name()
                ),
            ),
            Some(o) if o.optional && !f.optional && f.default.is_none() => push(
                out,
                harm(Impact::Breaking),
                format!(
                    "{name}.{}: no longer optional; stored values without it cannot be read (add a `default`)",
                    *f.name
                ),
            ),
            Some(_) => {}
        }
    }
    for f in before
        .iter()
        .filter(|o| !after.iter().any(|f| *f.name == *o.name))
    {
        push(
            out,
            Impact::Safe,
            format!(
                "{name}.{}: removed; stored values keep it until they are rewritten",
                *f.name
            ),
        );
    }
}

/// Changes of the named types between `old` and `new`.
pub(super) fn type_changes(old: &Model, new: &Model, out: &mut Vec<Change>) {
    for n in &new.types {
        let name = n.name.as_str();
        match old.types.iter().find(|o| *o.name == *n.name) {
            None => push(
                out,
                Impact::Safe,
                format!("{name}: new type; no stored value has it yet"),
            ),
            Some(o) => match (variants(o), variants(n)) {
                (Some(_), Some(_)) => enum_changes(o, n, new, out),
                (None, None) => struct_changes(o, n, new, out),
                _ => {
                    let impact = if holders(name, new).is_empty() {
                        Impact::Safe
                    } else {
                        Impact::Breaking
                    };
                    push(
                        out,
                        impact,
                        format!(
                            "{name}: changed between an enum and a struct; stored values of it cannot be read"
                        ),
                    );
                }
            },
        }
    }
    for o in &old.types {
        if !new.types.iter().any(|n| *n.name == *o.name) {
            push(
                out,
                Impact::Safe,
                format!(
                    "{}: type removed; no field of the new schema has it, so no stored value of it is read",
                    *o.name
                ),
            );
        }
    }
}
