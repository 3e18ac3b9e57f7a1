//! Rules of referential actions: `on_delete` on a relation, and the
//! `dependent(…)` entries through which a parent's delete enforces them.

use crate::ir::{Entity, Model, OnDelete};
use crate::origin::{Diagnostic, Diagnostics};

/// Checks the relations and dependents of one entity (both front ends).
pub(super) fn check(e: &Entity, diags: &mut Diagnostics) {
    for r in &e.relations {
        // A cascade finds the children in the relation's collection; a
        // capped collection has let go of all but the newest, so the
        // others would outlive their parent.
        if *r.on_delete == OnDelete::Cascade
            && let Some(k) = &r.keep
        {
            diags.push(
                Diagnostic::error(
                    "E137",
                    &r.on_delete.origin,
                    format!(
                        "relation `{}` deletes its children with `on_delete: cascade`, but `keep: {}` lists only the newest of them, so the others could not be found",
                        *r.name, k.value
                    ),
                )
                .help("remove `keep`, or use `on_delete: restrict` (it counts every child, listed or not)"),
            );
        }
    }
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for d in &e.dependents {
        let pair = (d.entity.as_str(), d.relation.as_str());
        if seen.contains(&pair) {
            diags.error(
                "E139",
                &d.origin,
                format!(
                    "the dependent `{}` relation `{}` is named twice on `{}`",
                    pair.0, pair.1, *e.name
                ),
            );
        }
        seen.push(pair);
    }
    // The children of one parent are keyed by the parent's id: the one
    // field of its key.
    if let Some(first) = e.dependents.first()
        && let Some(k) = &e.key
        && k.placeholders().count() != 1
    {
        diags.push(
            Diagnostic::error(
                "E138",
                &first.origin,
                format!(
                    "`{}` has dependents (`on_delete: restrict` or `cascade` on a relation to it), but its key `{}` has {} fields; a child names its parent by one id",
                    *e.name,
                    k.text,
                    k.placeholders().count()
                ),
            )
            .help("give the parent a key of one field, such as `author:{id}`, or use `on_delete: keep`"),
        );
    }
}

/// Checks the relations that enforce `on_delete` against their parents
/// (YAML, where every entity is known).
pub(super) fn check_model(model: &Model, diags: &mut Diagnostics) {
    for e in &model.entities {
        for r in e.relations.iter().filter(|r| r.on_delete.enforced()) {
            let Some(parent) = model.entities.iter().find(|p| *p.name == *r.belongs_to) else {
                continue; // E115 says so
            };
            let Some(key) = &parent.key else { continue };
            let ids: Vec<&str> = key.placeholders().collect();
            let [id] = ids.as_slice() else {
                continue; // E138 on the parent says so
            };
            let (Some(by), Some(pid)) = (
                e.fields.iter().find(|f| *f.name == *r.by),
                parent.fields.iter().find(|f| f.name.as_str() == *id),
            ) else {
                continue;
            };
            if by.ty.value != pid.ty.value {
                diags.push(
                    Diagnostic::error(
                        "E140",
                        &r.on_delete.origin,
                        format!(
                            "relation `{}` has `on_delete: {}`, so `{}` must hold the id of an existing `{}`: a field of the type of `{}`",
                            *r.name, *r.on_delete, *r.by, *r.belongs_to, id
                        ),
                    )
                    .help(format!(
                        "give `{}` the type of `{}.{}`, or use `on_delete: keep`",
                        *r.by, *r.belongs_to, id
                    )),
                );
            }
        }
    }
}
