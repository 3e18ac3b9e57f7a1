//! Lints from key-value modelling practice: the schema works, but the store
//! will not like it. Warnings with stable codes, a why and a fix.

use kvmodel_codegen::ir::{Entity, FieldType, Model, Segment, TypeKind};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Severity};

fn warn(
    code: &'static str,
    origin: &kvmodel_codegen::Origin,
    message: String,
    help: &str,
) -> Diagnostic {
    Diagnostic {
        severity: Severity::Warning,
        code,
        message,
        origin: origin.clone(),
        help: Some(help.to_owned()),
    }
}

/// Words that mark short-lived data.
const EPHEMERAL: &[&str] = &[
    "session",
    "cache",
    "token",
    "otp",
    "nonce",
    "lock",
    "ratelimit",
    "rate_limit",
    "throttle",
];

/// Longest key template, in characters, before keys cost noticeable memory.
const LONG_TEMPLATE: usize = 48;

fn low_cardinality(e: &Entity, field: &str, model: &Model) -> bool {
    e.field(field).is_some_and(|f| match &*f.ty {
        FieldType::Bool => true,
        FieldType::Named(n) => model
            .types
            .iter()
            .any(|t| *t.name == *n && matches!(t.kind, TypeKind::Enum(_))),
        _ => false,
    })
}

/// Whether values of `ty` can grow without bound: lists, maps, bytes, and
/// named structs that hold one (`depth` stops a type that holds itself).
fn unbounded(ty: &FieldType, model: &Model, depth: u32) -> bool {
    match ty {
        FieldType::List(_) | FieldType::Map(_) | FieldType::Bytes => true,
        FieldType::Named(n) if depth < 8 => model.types.iter().any(|t| {
            *t.name == *n
                && matches!(&t.kind, TypeKind::Struct(fields)
                    if fields.iter().any(|f| unbounded(&f.ty, model, depth + 1)))
        }),
        _ => false,
    }
}

/// W005: a record with fields that grow without bound, and no `max_size`,
/// can become a big key: every read and write moves it whole, and on Redis
/// it blocks the server while it is copied or freed.
fn unbounded_record(e: &Entity, model: &Model, diags: &mut Diagnostics) {
    if e.key.is_none() || e.max_size.is_some() {
        return;
    }
    let fields: Vec<_> = e
        .fields
        .iter()
        .filter(|f| unbounded(&f.ty, model, 0))
        .collect();
    let Some(first) = fields.first() else { return };
    let names: Vec<String> = fields.iter().map(|f| format!("`{}`", *f.name)).collect();
    diags.push(warn(
        "W005",
        &first.name.origin,
        format!(
            "`{}` has no `max_size`, and its field{} {} can grow without bound, so one record can become a big key that every read and write moves whole",
            *e.name,
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        ),
        "add `max_size: 256KiB` (or the limit it needs): a larger record is refused with `ValueTooLarge`, writing nothing",
    ));
}

/// Appends every lint of the model to `diags`.
pub fn lint(model: &Model, diags: &mut Diagnostics) {
    for e in &model.entities {
        unbounded_record(e, model, diags);
        for c in &e.counters {
            // W001: one key written by every create serializes all writers on
            // one Redis slot and one redb page.
            if c.group_by.is_empty() {
                diags.push(warn(
                    "W001",
                    &c.name.origin,
                    format!("counter `{}` of `{}` has no group, so every create writes the same key (a hot key)", *c.name, *e.name),
                    "group it (e.g. `group_by: [\"day(created_at)\"]`) and sum the groups when reading, or accept the contention",
                ));
            }
        }
        for ix in e.indexes.iter().filter(|i| !i.unique) {
            // W002: a collection per value of a low-cardinality field grows
            // with the whole table and never shrinks. A TTL bounds it:
            // expired records leave their collections (and counters) at the
            // expiry sweep, which writes run in small steps.
            if e.ttl.is_none() && ix.fields.iter().all(|f| low_cardinality(e, f, model)) {
                diags.push(warn(
                    "W002",
                    &ix.name.origin,
                    format!("index `{}` of `{}` groups by a field with few values, so each of its collections holds a large share of all records without bound", *ix.name, *e.name),
                    "add a higher-cardinality field or a time bucket to `fields`, or give the entity a `ttl` (expired records then leave their collections at the expiry sweep)",
                ));
            }
        }
        if let Some(k) = &e.key {
            let literal_len: usize = k
                .segments
                .iter()
                .map(|s| match s {
                    Segment::Literal(l) => l.len() + 1,
                    Segment::Field(_) => 1,
                })
                .sum();
            if literal_len > LONG_TEMPLATE {
                diags.push(warn(
                    "W003",
                    &k.origin,
                    format!("the key template `{}` spends {literal_len} characters on fixed text in every key", k.text),
                    "shorten the literal segments: keys are stored once per record and per index entry",
                ));
            }
        }
        let lower = e.name.to_ascii_lowercase();
        if e.ttl.is_none()
            && EPHEMERAL
                .iter()
                .any(|w| lower.contains(&w.replace('_', "")))
        {
            diags.push(warn(
                "W004",
                &e.name.origin,
                format!("`{}` looks like short-lived data but has no `ttl`, so its records are never removed", *e.name),
                "add `ttl: { after: 30m, jitter: 10% }` (or the lifetime it needs)",
            ));
        }
    }
}
