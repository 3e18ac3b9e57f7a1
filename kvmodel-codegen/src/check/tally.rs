//! The rules of standalone counters (a schema's `counters:`,
//! `#[derive(KvCounter)]`).

use heck::ToSnakeCase;

use crate::ir::{Model, Tally};
use crate::origin::{Diagnostic, Diagnostics, suggestion};
use crate::vocab;

/// Checks one standalone counter. `model` gives the named types when known
/// (YAML); the derive sees one counter at a time, so its missing namespace
/// is its own error (E100), as an entity's is.
pub fn check(t: &Tally, model: Option<&Model>, diags: &mut Diagnostics) {
    let Some(k) = &t.key else {
        diags.push(
            vocab::missing(
                &format!("counter `{}`", *t.name),
                "a `key` template, such as \"views:{page}\"",
            )
            .at(&t.origin),
        );
        return;
    };
    super::check_namespace(
        &t.name,
        t.namespace.as_ref(),
        &k.origin,
        model.is_none(),
        diags,
    );
    // A leading literal names the counter's key space, which keeps counters
    // of one namespace apart (E153) and says whose keys they are.
    let Some(placeholders) = super::key_template(k, "views", diags) else {
        return;
    };
    for &p in &placeholders {
        match t.field(p) {
            None if t.broken_fields.iter().any(|f| f == p) => {}
            None => {
                let hint = suggestion(p, t.fields.iter().map(|f| f.name.as_str()));
                diags.error(
                    "E103",
                    &k.origin,
                    format!("the key template names `{p}`, which is not a field of `{}`{hint}", *t.name),
                );
            }
            Some(f) if f.optional => diags.error("E104", &k.origin, format!("the key field `{p}` is optional; a counter's key must always have a value")),
            Some(f) if !f.ty.is_keyable() || super::named_is_struct(&f.ty, model) => diags.error("E104", &k.origin, format!("the key field `{p}` has type `{}`, which cannot be a key component; use a string, integer, bool, uuid, timestamp or enum field", f.ty.schema_name())),
            Some(_) => {}
        }
    }
    // The fields are the key and nothing else: a field outside the template
    // would be taken by every method and used by none.
    for f in &t.fields {
        if !placeholders.contains(&f.name.as_str()) {
            diags.push(
                Diagnostic::error(
                    "E152",
                    &f.origin,
                    format!(
                        "the field `{}` of counter `{}` is not a placeholder of its key template `{}`",
                        *f.name, *t.name, k.text
                    ),
                )
                .help(format!(
                    "a counter's fields are its key: add `{{{}}}` to the key, or remove the field",
                    *f.name
                )),
            );
        }
    }
}

/// The rules between standalone counters and the other names of a model.
pub fn check_across(model: &Model, diags: &mut Diagnostics) {
    check_across_from(model, 0, diags);
}

/// [`check_across`] for the counters from index `from` on, each against
/// every entity and type and the counters before it: what a file's
/// counters (`model.tallies[from..]`) add to those of the files before it
/// (`model.tallies[..from]`), beside the entities and types of all files.
/// A clash of two counters is reported on the later one.
pub fn check_across_from(model: &Model, from: usize, diags: &mut Diagnostics) {
    for (i, t) in model.tallies.iter().enumerate().skip(from) {
        // Each counter generates a struct and a handle named after it.
        let taken = model
            .entities
            .iter()
            .map(|e| (&e.name, "an entity"))
            .chain(model.types.iter().map(|d| (&d.name, "a type")))
            .chain(
                model.tallies[..i]
                    .iter()
                    .map(|o| (&o.name, "another counter")),
            )
            .find(|(n, _)| {
                n.value == t.name.value
                    || format!("{}Counter", n.value) == *t.name
                    || format!("{}Counter", *t.name) == n.value
            });
        if let Some((other, what)) = taken {
            diags.push(
                Diagnostic::error(
                    "E154",
                    &t.name.origin,
                    format!("the counter `{}` clashes with {what} `{}`: both would generate a type of one name", *t.name, **other),
                )
                .help(format!("rename the counter, e.g. `{}Count`", *t.name)),
            );
        }
        // Counters of one namespace keep apart by their key spaces (the
        // template's literal segments), as entities do.
        let (Some(k), Some(ns)) = (&t.key, &t.namespace) else {
            continue;
        };
        if k.segments.is_empty() {
            continue;
        }
        let clash = model.tallies[..i].iter().find(|o| {
            o.namespace.as_ref().is_some_and(|n| n.value == ns.value)
                && o.key
                    .as_ref()
                    .is_some_and(|ok| !ok.segments.is_empty() && ok.key_space() == k.key_space())
        });
        if let Some(other) = clash {
            diags.push(
                Diagnostic::error(
                    "E153",
                    &k.origin,
                    format!(
                        "the counter `{}` has the key space `{}` of counter `{}`: their keys could meet",
                        *t.name,
                        k.key_space(),
                        *other.name
                    ),
                )
                .help(format!(
                    "give one of them another literal segment, e.g. \"{}:{}\"",
                    t.name.to_snake_case(),
                    k.text
                )),
            );
        }
    }
}
