//! Lints from key-value modelling practice: the schema works, but the store
//! will not like it. Warnings with stable codes, a why and a fix.

use kvmodel_codegen::ir::{Entity, FieldExpr, FieldType, Lint, Model, Segment, TypeKind};
use kvmodel_codegen::origin::{Diagnostic, Diagnostics, Sp};
use kvmodel_codegen::vocab;

mod hot;

/// Whether `lint` is allowed by one of the `allow` lists (the entity's,
/// the construct's).
fn allowed(lint: Lint, lists: &[&[Sp<Lint>]]) -> bool {
    lists.iter().any(|l| l.iter().any(|a| a.value == lint))
}

/// A warning of `lint` at `origin`, with its fix and how to allow it on
/// `place` (`the index`).
fn warn(
    lint: Lint,
    origin: &kvmodel_codegen::Origin,
    message: String,
    help: &str,
    place: &str,
) -> Diagnostic {
    Diagnostic {
        severity: lint.severity(),
        code: lint.code(),
        message,
        origin: origin.clone(),
        help: Some(format!(
            "{help}; if this is intended, add {} to {place}",
            vocab::list_setting(origin, "allow", lint.code())
        )),
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

/// A timestamp field of `e` to bucket by in an example: `created_at` when it
/// has one, else its first required timestamp, else its first timestamp.
fn timestamp_field(e: &Entity) -> Option<&str> {
    let stamps = || {
        e.fields
            .iter()
            .filter(|f| matches!(&*f.ty, FieldType::Timestamp))
    };
    stamps()
        .find(|f| *f.name == "created_at")
        .or_else(|| stamps().find(|f| !f.optional))
        .or_else(|| stamps().next())
        .map(|f| f.name.as_str())
}

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
    if e.key.is_none() || e.max_size.is_some() || allowed(Lint::BigRecord, &[&e.allow]) {
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
        Lint::BigRecord,
        &first.name.origin,
        format!(
            "`{}` has no `max_size`, and its field{} {} can grow without bound, so one record can become a big key that every read and write moves whole",
            *e.name,
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        ),
        &format!(
            "add {} (or the limit it needs): a larger record is refused with `ValueTooLarge`, writing nothing",
            if vocab::schema_file(&e.name.origin) {
                "`max_size: 256KiB`"
            } else {
                "`max_size = \"256KiB\"`"
            }
        ),
        "the entity",
    ));
}

/// W006: an entity whose largest write cannot be one DynamoDB transaction:
/// more actions than `TransactWriteItems` holds, or a `max_size` beyond an
/// item's 400 KB (uncompressed). `DynamoStore` refuses such a write with
/// `InvalidBatch`, writing nothing; other stores take it.
fn dynamo_transaction(e: &Entity, model: &Model, diags: &mut Diagnostics) {
    use kvmodel_runtime::__private::dynamo_cost::{MAX_ACTIONS, MAX_ITEM_BYTES};
    if e.key.is_none() || allowed(Lint::DynamoTransaction, &[&e.allow]) {
        return;
    }
    let (write, actions) = crate::keys::dynamo_largest_write(e, model);
    if actions as usize > MAX_ACTIONS {
        diags.push(warn(
            Lint::DynamoTransaction,
            &e.name.origin,
            format!(
                "on DynamoDB, `{}`'s {write} needs {actions} actions in one TransactWriteItems \
                 (its record, claims, index and relation members with their heads, counters \
                 with their change stamps, discovery member), beyond DynamoDB's limit of \
                 {MAX_ACTIONS}: DynamoStore refuses it with `InvalidBatch`, writing nothing",
                *e.name
            ),
            "declare fewer unique or ordered indexes, relations or counters on this entity \
             (move some to an entity of their own), or keep it on another store; \
             `kvmodel keys --store dynamodb` shows each write's actions",
            "the entity",
        ));
    }
    if let Some(max) = e.max_size.as_ref().filter(|_| e.compress.is_none()) {
        if max.value > MAX_ITEM_BYTES {
            diags.push(warn(
                Lint::DynamoTransaction,
                &max.origin,
                format!(
                    "on DynamoDB, a `{}` record may be up to {} encoded, beyond DynamoDB's limit \
                     of 400 KB per item: DynamoStore refuses a larger one with `InvalidBatch`, \
                     writing nothing",
                    *e.name,
                    vocab::format_size(max.value)
                ),
                "lower `max_size` below 400KiB (the key and attributes take a few bytes more), \
                 or compress the records (`compress:`)",
                "the entity",
            ));
        }
    }
}

/// I001: an entity that co-locates its keys on a Redis Cluster, but whose
/// claims, index or relation entries or counters still lie in other slots,
/// so its creates and updates take the cross-slot commit (safe, but more
/// sequential round trips than one script). Entities without `colocate`
/// are not flagged here: nothing of theirs shares the record's slot, as
/// `kvmodel keys` shows; I002 names the keys their parents share.
fn cross_slot(e: &Entity, model: &Model, diags: &mut Diagnostics) {
    let Some(tag) = &e.colocate else { return };
    if e.key.is_none() || allowed(Lint::CrossSlot, &[&e.allow]) {
        return;
    }
    let layout = crate::keys::ClusterLayout::of(e, model);
    // What co-locating everything would give: a create and an update that
    // only add discovery members elsewhere (3 steps); an expiring entity's
    // update moves its ledger entry in any case (5).
    let mut slower = Vec::new();
    if layout.create > 3 {
        slower.push(format!(
            "a create takes {} sequential round trips instead of 3",
            layout.create
        ));
    }
    if !layout.away_derived.is_empty() && !e.expires() {
        slower.push("an update that moves one of them takes 5 instead of 3".to_owned());
    }
    if slower.is_empty() {
        return;
    }
    let away: Vec<String> = layout
        .away_derived
        .iter()
        .map(|k| match k.split_once(' ') {
            Some((kind, name)) => format!("{kind} `{name}`"),
            None => k.clone(),
        })
        .collect();
    diags.push(warn(
        Lint::CrossSlot,
        &tag.origin,
        format!(
            "on a Redis Cluster, `{}` keeps its record in the slot of `{}`, but its {} {} in other slots, so {}",
            *e.name,
            tag.as_str(),
            away.join(", "),
            if away.len() == 1 { "lies" } else { "lie" },
            slower.join(" and "),
        ),
        &format!(
            "a key shares the record's slot when `{}` is among its fields or groups; the cross-slot commit is safe, only slower (docs/cluster.md)",
            tag.as_str()
        ),
        "the entity",
    ));
}

/// Appends every lint of the model to `diags`.
pub fn lint(model: &Model, diags: &mut Diagnostics) {
    for e in &model.entities {
        unbounded_record(e, model, diags);
        dynamo_transaction(e, model, diags);
        // I002 on an entity that co-locates by another field names the
        // keys I001 would, with the setting that brings them home.
        if !hot::finding(e, model).is_some_and(|f| hot::report(e, &f, diags)) {
            cross_slot(e, model, diags);
        }
        for c in &e.counters {
            // W001: one key written by every create serializes all writers on
            // one Redis slot and one redb page.
            // Shards spread those writes over several keys.
            if c.group_by.is_empty()
                && c.shards.is_none()
                && !allowed(Lint::HotCounter, &[&e.allow, &c.allow])
            {
                let group = match timestamp_field(e) {
                    Some(f) => format!(
                        "group it (e.g. {})",
                        vocab::list_setting(&c.name.origin, "group_by", &format!("day({f})"))
                    ),
                    None => "group it by one of its fields".to_owned(),
                };
                diags.push(warn(
                    Lint::HotCounter,
                    &c.name.origin,
                    format!("counter `{}` of `{}` has no group, so every create writes the same key (a hot key)", *c.name, *e.name),
                    &format!(
                        "spread it over several keys with {} (each write adds to one, a read sums them in one round trip), or {group}",
                        vocab::setting(&c.name.origin, "shards", "16"),
                    ),
                    "the counter",
                ));
            }
        }
        for ix in e.indexes.iter().filter(|i| !i.unique) {
            // W002: a collection per value of a low-cardinality field grows
            // with the whole table and never shrinks. A TTL bounds it:
            // expired records leave their collections (and counters) at the
            // expiry sweep, which writes run in small steps.
            // `keep` bounds it too.
            if e.ttl.is_none()
                && ix.keep.is_none()
                && ix.fields.iter().all(|x| {
                    // A time bucket splits the collections by time.
                    matches!(&x.value, FieldExpr::Field(f) if low_cardinality(e, f, model))
                })
                && !allowed(Lint::UnboundedIndex, &[&e.allow, &ix.allow])
            {
                diags.push(warn(
                    Lint::UnboundedIndex,
                    &ix.name.origin,
                    format!("index `{}` of `{}` groups by a field with few values, so each of its collections holds a large share of all records without bound", *ix.name, *e.name),
                    "add a higher-cardinality field or a time bucket to `fields`, or give the entity a `ttl` (expired records then leave their collections at the expiry sweep)",
                    "the index",
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
            if literal_len > LONG_TEMPLATE && !allowed(Lint::LongKey, &[&e.allow]) {
                diags.push(warn(
                    Lint::LongKey,
                    &k.origin,
                    format!("the key template `{}` spends {literal_len} characters on fixed text in every key", k.text),
                    "shorten the literal segments: keys are stored once per record and per index entry",
                    "the entity",
                ));
            }
        }
        let lower = e.name.to_ascii_lowercase();
        if !e.expires()
            && !allowed(Lint::EphemeralWithoutTtl, &[&e.allow])
            && EPHEMERAL
                .iter()
                .any(|w| lower.contains(&w.replace('_', "")))
        {
            diags.push(warn(
                Lint::EphemeralWithoutTtl,
                &e.name.origin,
                format!("`{}` looks like short-lived data but has no `ttl`, so its records are never removed", *e.name),
                &format!(
                    "add {} (or the lifetime it needs)",
                    if vocab::schema_file(&e.name.origin) {
                        "`ttl: { after: 30m, jitter: 10% }`"
                    } else {
                        "`ttl = \"30m\", ttl_jitter = \"10%\"`"
                    }
                ),
                "the entity",
            ));
        }
    }
}
