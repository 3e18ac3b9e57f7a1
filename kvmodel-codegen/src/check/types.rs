//! Rules of the named types (`types:`) and of the names that share Rust's
//! type namespace in a generated module: entities, types, and the
//! repositories and key builders generated for entities.

use std::collections::{BTreeMap, BTreeSet};

use crate::ir::{FieldType, Model, TypeKind};
use crate::origin::{Diagnostic, Diagnostics, Origin};

/// Type names the declarations spell fields with (`String`, `Vec<T>`,
/// `Option<T>`, `Box<T>`) and the derive reads a field's type by
/// (`BTreeMap<String, T>`, `Timestamp`, `Date`, `Uuid`): a model type of
/// one of these names would be taken for it.
const FIELD_TYPE_NAMES: &[&str] = &[
    "String",
    "Vec",
    "Option",
    "Box",
    "BTreeMap",
    "Timestamp",
    "Date",
    "Uuid",
];

/// Checks the named types and every name of the type namespace.
pub(super) fn check(model: &Model, diags: &mut Diagnostics) {
    check_variants(model, diags);
    check_names(model, diags);
    check_cycles(model, diags);
}

/// An enum declares each variant once: a repeated one would be declared
/// twice in Rust, and stored values could not tell them apart.
fn check_variants(model: &Model, diags: &mut Diagnostics) {
    for t in &model.types {
        let TypeKind::Enum(variants) = &t.kind else {
            continue;
        };
        let mut seen = BTreeSet::new();
        for v in variants {
            if !seen.insert(v.as_str()) {
                diags.error(
                    "E127",
                    &v.origin,
                    format!(
                        "the enum `{}` lists the variant `{}` twice; each variant must be listed once",
                        *t.name, **v
                    ),
                );
            }
        }
    }
}

/// Every entity, type, repository (`XRepo`), key builder (`XKeys`) and
/// transaction view (`XTx`, of an entity with links) is an
/// item of the generated module, so no two may share a name, and no model
/// type may take the name of a type the declarations use for fields.
fn check_names(model: &Model, diags: &mut Diagnostics) {
    // What each generated name stands for.
    let mut generated: BTreeMap<String, String> = BTreeMap::new();
    for e in model.entities.iter().filter(|e| e.key.is_some()) {
        generated.insert(
            format!("{}Repo", *e.name),
            format!("the repository generated for the entity `{}`", *e.name),
        );
        generated.insert(
            format!("{}Keys", *e.name),
            format!("the key builders generated for the entity `{}`", *e.name),
        );
        if !e.links.is_empty() {
            generated.insert(
                format!("{}Tx", *e.name),
                format!(
                    "the transaction view generated for the entity `{}`",
                    *e.name
                ),
            );
        }
    }
    let entities: BTreeSet<&str> = model.entities.iter().map(|e| e.name.as_str()).collect();
    let declared = model
        .entities
        .iter()
        .map(|e| ("entity", &e.name))
        .chain(model.types.iter().map(|t| ("type", &t.name)));
    for (what, name) in declared {
        let taken = if FIELD_TYPE_NAMES.contains(&name.as_str()) {
            Some(format!(
                "the {what} `{}` has the name of a type the generated declarations use for fields (strings, lists, maps, optional values, boxes, timestamps, dates and uuids), and would be taken for it",
                **name
            ))
        } else if let Some(g) = generated.get(name.as_str()) {
            Some(format!("the {what} `{}` has the name of {g}", **name))
        } else if what == "type" && entities.contains(name.as_str()) {
            Some(format!(
                "the type `{}` has the name of an entity; a type and an entity are both items of the generated module",
                **name
            ))
        } else {
            None
        };
        if let Some(message) = taken {
            report_name(diags, &name.origin, message);
        }
    }
}

fn report_name(diags: &mut Diagnostics, origin: &Origin, message: String) {
    diags.push(
        Diagnostic::error("E128", origin, message).help(
            "choose another name: every entity, type, repository and key builder needs its own",
        ),
    );
}

/// A struct that holds itself through fields that are never absent (not
/// optional, not in a list or map) has no finite value: refuse it. One that
/// holds itself through an optional field is fine (the declarations box
/// that field).
fn check_cycles(model: &Model, diags: &mut Diagnostics) {
    for t in &model.types {
        let TypeKind::Struct(fields) = &t.kind else {
            continue;
        };
        for f in fields.iter().filter(|f| !f.optional) {
            let FieldType::Named(n) = &*f.ty else {
                continue;
            };
            let how = if n.as_str() == t.name.as_str() {
                format!("is itself a `{}`", *t.name)
            } else if model.holds(n.as_str(), &t.name, true) {
                format!("holds a `{}` that holds a `{}` again", n.as_str(), *t.name)
            } else {
                continue;
            };
            diags.push(
                Diagnostic::error(
                    "E129",
                    &f.ty.origin,
                    format!(
                        "the field `{}` of `{}` {how}, so no `{}` could ever be written down",
                        *f.name, *t.name, *t.name
                    ),
                )
                .help("make a field of this cycle optional, or hold the values in a `list<…>` or `map<string, …>`"),
            );
        }
    }
}
