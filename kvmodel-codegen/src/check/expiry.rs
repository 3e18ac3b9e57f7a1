//! The rules of a record's own expiry (`expiry: true`, `#[kv(expiry)]`).

use crate::ir::{Entity, FieldType, Model};
use crate::origin::{Diagnostic, Diagnostics};

/// The expiry field of an entity: a timestamp (optional or not), at most
/// one per entity, on an entity with a key.
pub(super) fn check(e: &Entity, diags: &mut Diagnostics) {
    let mut marked = e
        .fields
        .iter()
        .filter_map(|f| Some((f, f.expiry.as_ref()?)));
    let Some((first, at)) = marked.next() else {
        return;
    };
    // The store expires a record at one instant, so only a timestamp
    // names it; any other type has no such reading.
    if !matches!(*first.ty, FieldType::Timestamp) {
        diags.push(
            Diagnostic::error(
                "E151",
                &first.ty.origin,
                format!(
                    "the expiry field `{}` has type `{}`; an expiry field must be a `timestamp` (optional or not)",
                    *first.name,
                    first.ty.schema_name()
                ),
            )
            .help("make it a `timestamp`, or remove `expiry` from it"),
        );
    }
    // One record expires once: two fields would each claim the time.
    for (f, o) in marked {
        diags.push(
            Diagnostic::error(
                "E151",
                o,
                format!(
                    "`{}` is marked `expiry`, but `{}` already sets the expiry of `{}` records; keep one",
                    *f.name, *first.name, *e.name
                ),
            )
            .help("a record expires at one time: mark one field, and compute it from the others when writing"),
        );
    }
    // Records of a type without a key are never stored, so they never expire.
    if e.key.is_none() {
        diags.error("E123", at, "`expiry` needs a `key`");
    }
}

/// `expiry` belongs on an entity's field: a field of a struct type (`types:`)
/// is inside a record and cannot set when it expires.
pub(super) fn check_types(model: &Model, diags: &mut Diagnostics) {
    for t in &model.types {
        let crate::ir::TypeKind::Struct(fields) = &t.kind else {
            continue;
        };
        for f in fields {
            if let Some(o) = &f.expiry {
                diags.push(
                    Diagnostic::error(
                        "E151",
                        o,
                        format!(
                            "`{}` is a field of the type `{}`, which is not an entity, so `expiry` on it has no record to expire",
                            *f.name, *t.name
                        ),
                    )
                    .help("mark a `timestamp` field of the entity itself with `expiry: true`"),
                );
            }
        }
    }
}
