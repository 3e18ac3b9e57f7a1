//! Rules of protobuf-encoded entities (`encoding: protobuf`): every field
//! must have a faithful protobuf form, and no two names of one message may
//! share a field number.

use std::collections::BTreeMap;

use crate::ir::{Encoding, Entity, Model};
use crate::origin::{Diagnostic, Diagnostics, Origin};
use crate::proto::{self, Refusal};

/// Checks the protobuf mapping of one entity.
pub(super) fn check(e: &Entity, model: Option<&Model>, diags: &mut Diagnostics) {
    if e.encoding.value != Encoding::Protobuf {
        return;
    }
    let mut numbers: BTreeMap<u32, (&str, &Origin)> = BTreeMap::new();
    for f in &e.fields {
        match proto::map_field(model, f) {
            Ok(_) => {}
            // A struct would need a message of its own, which kvmodel does not
            // write yet; storing it any other way would not be what the
            // `.proto` says.
            Err(Refusal::Struct(name)) => diags.push(
                Diagnostic::error(
                    "E145",
                    &f.ty.origin,
                    format!(
                        "field `{}` of `{}` holds the struct type `{name}`, which a protobuf \
                         record cannot hold: protobuf records hold scalars, enums, lists and maps",
                        *f.name, *e.name
                    ),
                )
                .help("use `encoding: json` or `msgpack` for this entity, or move the struct's fields into it"),
            ),
            // Protobuf has no list of lists, and cannot tell an absent list or
            // map from an empty one.
            Err(Refusal::Nested) => diags.push(
                Diagnostic::error(
                    "E146",
                    &f.ty.origin,
                    format!(
                        "field `{}` of `{}` is {}, which protobuf cannot write faithfully",
                        *f.name,
                        *e.name,
                        if f.optional {
                            "an optional list or map (protobuf reads an absent one as empty)"
                        } else {
                            "a list or map of lists or maps"
                        }
                    ),
                )
                .help(if f.optional {
                    "make it required: an empty list or map stands for none"
                } else {
                    "use `encoding: json` or `msgpack` for this entity"
                }),
            ),
        }
        claim(&mut numbers, f.name.as_str(), &f.name.origin, e, diags);
    }
    if e.migrate_from.is_none() {
        for m in &e.migrations {
            for (old, _) in &m.rename {
                if e.fields.iter().any(|f| *f.name == *old.as_str()) {
                    continue;
                }
                claim(&mut numbers, old.as_str(), &old.origin, e, diags);
            }
        }
    }
}

/// Gives `name` its field number, or reports the name that has it (E147):
/// a record would mix the two fields up.
fn claim<'a>(
    numbers: &mut BTreeMap<u32, (&'a str, &'a Origin)>,
    name: &'a str,
    origin: &'a Origin,
    e: &Entity,
    diags: &mut Diagnostics,
) {
    let n = proto::field_number(name);
    match numbers.get(&n) {
        Some((other, _)) if *other != name => diags.push(
            Diagnostic::error(
                "E147",
                origin,
                format!(
                    "`{name}` and `{other}` of `{}` both get the protobuf field number {n} \
                     (numbers come from field names, and these two collide)",
                    *e.name
                ),
            )
            .help("rename one of them (a renamed field's older records are read through a migration's `rename`)"),
        ),
        Some(_) => {}
        None => {
            numbers.insert(n, (name, origin));
        }
    }
}
