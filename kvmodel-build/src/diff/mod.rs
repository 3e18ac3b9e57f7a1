//! `kvmodel diff`: what changing a schema does to data already stored.
//! Every line says what happens to stored records and what command, if
//! any, brings them in step; `breaking` is anything no command repairs
//! (records that stop decoding, keys that move) or that serves wrong
//! answers until one runs.

mod keep;
mod tallies;
mod types;

use std::fmt;

use kvmodel_codegen::Sp;
use kvmodel_codegen::ir::{
    Compress, Counter, Entity, Field, FieldExpr, Index, Link, Model, Normalize, OnDelete, Relation,
    Ttl,
};
use kvmodel_codegen::vocab;

/// How a change affects stored data, from harmless to harmful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Impact {
    /// Old records and keys keep working as they are.
    Safe,
    /// Works once stored data is migrated (`migrate_all`) or reconciled.
    NeedsMigration,
    /// Stored data becomes unreachable or unreadable.
    Breaking,
}

impl fmt::Display for Impact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Impact::Safe => "safe",
            Impact::NeedsMigration => "needs migration",
            Impact::Breaking => "breaking",
        })
    }
}

/// One change and its impact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The impact.
    pub impact: Impact,
    /// What changed and why it matters.
    pub reason: String,
}

fn push(out: &mut Vec<Change>, impact: Impact, reason: String) {
    out.push(Change { impact, reason });
}

fn field_changes(name: &str, old: &Entity, new: &Entity, out: &mut Vec<Change>) {
    let migrated = |f: &str| {
        new.migrate_from.is_some()
            || new.migrations.iter().any(|m| {
                m.from.value >= old.version.value
                    && (m.add.iter().any(|(a, _)| a.as_str() == f)
                        || m.rename.iter().any(|(_, b)| b.as_str() == f))
            })
    };
    // `rename: { old: new }` in a step that old records run: the value
    // moves to the new name when a record is read.
    let renamed_from = |f: &str| {
        new.migrations
            .iter()
            .filter(|m| m.from.value >= old.version.value)
            .find_map(|m| {
                m.rename
                    .iter()
                    .find(|(a, b)| {
                        b.as_str() == f && old.field(a).is_some() && new.field(a).is_none()
                    })
                    .map(|(a, _)| (a.as_str(), m.from.value))
            })
    };
    let mut renamed = Vec::new();
    for f in &new.fields {
        if old.field(&f.name).is_none()
            && let Some((from, step)) = renamed_from(&f.name)
            && let Some(o) = old.field(from)
        {
            renamed.push(from);
            push(
                out,
                Impact::Safe,
                format!(
                    "{name}.{}: field renamed {from} → {} (migration from {step}); old records are read under the new name, and `migrate_all` rewrites them so",
                    *f.name, *f.name
                ),
            );
            if *o.ty != *f.ty {
                type_change(name, o, f, true, out);
            }
            continue;
        }
        match old.field(&f.name) {
            None if f.optional || f.default.is_some() => push(
                out,
                Impact::Safe,
                format!(
                    "{name}.{}: new field; old records read it as {}",
                    *f.name,
                    if f.optional { "None" } else { "its default" }
                ),
            ),
            None if migrated(&f.name) => push(
                out,
                Impact::Safe,
                format!("{name}.{}: new field, filled by a migration step", *f.name),
            ),
            None => push(
                out,
                Impact::Breaking,
                format!(
                    "{name}.{}: new required field without default or migration; old records cannot be read (add `optional`, a `default`, or a migration `add`)",
                    *f.name
                ),
            ),
            Some(o) => type_change(name, o, f, migrated(&f.name), out),
        }
    }
    for f in &old.fields {
        if new.field(&f.name).is_none() && !renamed.contains(&f.name.as_str()) {
            push(
                out,
                Impact::Safe,
                format!(
                    "{name}.{}: removed; old records keep the value until they are rewritten",
                    *f.name
                ),
            );
        }
    }
}

fn type_change(name: &str, old: &Field, new: &Field, migrated: bool, out: &mut Vec<Change>) {
    if *old.ty != *new.ty {
        let impact = if migrated {
            Impact::NeedsMigration
        } else {
            Impact::Breaking
        };
        push(
            out,
            impact,
            format!(
                "{name}.{}: type changed from `{}` to `{}`",
                *new.name,
                old.ty.schema_name(),
                new.ty.schema_name()
            ),
        );
    } else if old.optional && !new.optional && new.default.is_none() && !migrated {
        push(
            out,
            Impact::Breaking,
            format!(
                "{name}.{}: no longer optional; old records without it cannot be read (add a `default`)",
                *new.name
            ),
        );
    }
}

type IndexLayout<'a> = (
    &'a [Sp<FieldExpr>],
    bool,
    &'a Option<Sp<Normalize>>,
    &'a Option<Sp<FieldExpr>>,
);

/// What an index's keys and entries are made of.
fn index_layout(x: &Index) -> IndexLayout<'_> {
    (&x.fields, x.unique, &x.normalize, &x.order_by)
}

/// What a counter's keys and amounts are made of.
fn counter_layout(x: &Counter) -> (&[Sp<FieldExpr>], &Option<Sp<String>>) {
    (&x.group_by, &x.sum)
}

/// What a relation's keys and entries are made of.
fn relation_layout(x: &Relation) -> (&Sp<String>, &Sp<String>, &Option<Sp<FieldExpr>>) {
    (&x.belongs_to, &x.by, &x.order_by)
}

fn derived_changes(name: &str, old: &Entity, new: &Entity, out: &mut Vec<Change>) {
    let new_since_ok = |since: u32| since > old.version.value;
    // What an addition without `since` means: upkeep takes every stored
    // record to have its entry already. An update leaves an index or
    // relation entry it takes as present alone (unless the indexed fields
    // change), and `migrate_all` rewrites only records of older versions,
    // so only `reconcile` fills it; a counter is worse, as updates and
    // deletes take back what was never added.
    let unsinced = |what: &str, x: &str, unique: bool| {
        let risk = if unique {
            "a new record may claim a value an old one holds"
        } else {
            "listings miss them"
        };
        format!(
            "{name}: new {what} `{x}` without `since`: updates that leave its fields unchanged and `migrate_all` take records already stored to have their entry, so they never add it; run `reconcile` to fill it (until then {risk}), or bump `version` and declare `since` so that `migrate_all` does"
        )
    };
    // `layout` is what an entry's keys are made of: when it changes, the
    // stored entries are wrong; a description or `since` changes nothing
    // stored.
    macro_rules! compare {
        ($list:ident, $what:literal, $layout:expr, $words:expr, $unique:expr, $unsinced_breaks:expr) => {
            for x in &new.$list {
                match old.$list.iter().find(|o| *o.name == *x.name) {
                    None if new_since_ok(x.since.value) => push(out, Impact::NeedsMigration, format!("{name}: new {} `{}` (since {}); records already stored {} when they are updated, all of them by `kvmodel migrate` (`migrate_all`); until then it is write-only: reads of it are refused with `NotReadable` (with `with_partial_reads()` they return what is there, and {})", $what, *x.name, x.since.value, $words(x).0, $words(x).1)),
                    None if $unsinced_breaks => push(out, Impact::Breaking, format!("{name}: new {} `{}` without `since` above the old version {}; updates and deletes of old records would take back what they never added (bump `version` and set `since`)", $what, *x.name, old.version.value)),
                    None => push(out, Impact::NeedsMigration, unsinced($what, &x.name, $unique(x))),
                    Some(o) if $layout(o) != $layout(x) => push(out, Impact::NeedsMigration, format!("{name}: {} `{}` changed; stored entries follow the old definition until `reconcile` rewrites them", $what, *x.name)),
                    Some(_) => {}
                }
            }
            for o in &old.$list {
                if !new.$list.iter().any(|x| *x.name == *o.name) {
                    push(out, Impact::Safe, format!("{name}: {} `{}` removed; its stored entries are left behind", $what, *o.name));
                }
            }
        };
    }
    compare!(
        indexes,
        "index",
        index_layout,
        |x: &Index| if x.unique {
            ("are claimed", "finds miss them")
        } else {
            ("get their entry", "listings miss them")
        },
        |x: &Index| x.unique,
        false
    );
    compare!(
        counters,
        "counter",
        counter_layout,
        |_: &Counter| ("are counted", "counts leave them out"),
        |_: &Counter| false,
        true
    );
    compare!(
        relations,
        "relation",
        relation_layout,
        |_: &Relation| ("get their entry", "listings miss them"),
        |_: &Relation| false,
        false
    );
    for x in &new.relations {
        if let Some(o) = old.relations.iter().find(|o| *o.name == *x.name) {
            on_delete_change(name, o, x, out);
        }
    }
    keep::keep_changes(name, old, new, out);
    link_changes(name, &old.links, &new.links, out);
}

/// What a change of `links:` does. A link's entries are written only by
/// `link_*`, so a new link starts empty and needs no migration; its name
/// on either side and its far entity are in the keys of what is stored.
fn link_changes(name: &str, old: &[Link], new: &[Link], out: &mut Vec<Change>) {
    for x in new {
        let Some(o) = old.iter().find(|o| *o.name == *x.name) else {
            push(
                out,
                Impact::Safe,
                format!(
                    "{name}: new link `{}` to `{}`; it starts with no links, and no stored record needs an entry",
                    *x.name, *x.to
                ),
            );
            continue;
        };
        if *o.to != *x.to {
            push(
                out,
                Impact::Breaking,
                format!(
                    "{name}: link `{}` now goes to `{}` instead of `{}`; its stored entries hold keys of `{}` records, which listings would read as `{}`: unlink them all first, or declare a new link",
                    *x.name, *x.to, *o.to, *o.to, *x.to
                ),
            );
        } else if *o.inverse != *x.inverse {
            push(
                out,
                Impact::Breaking,
                format!(
                    "{name}: link `{}`'s far side renamed from `{}` to `{}`; the far records' link collections and counts are stored under the old name, so `list_{}` and `count_{}` would miss every link made so far (keep the old name)",
                    *x.name, *o.inverse, *x.inverse, *x.inverse, *x.inverse
                ),
            );
        }
    }
    for o in old {
        if !new.iter().any(|x| *x.name == *o.name) {
            push(
                out,
                Impact::Safe,
                format!(
                    "{name}: link `{}` removed; its stored link collections, counts and edges are left behind (a record's delete still removes its own, which its link registry names)",
                    *o.name
                ),
            );
        }
    }
}

/// What a change of `on_delete` does: the records and collections stay;
/// the count of each parent's children comes or goes.
fn on_delete_change(name: &str, old: &Relation, new: &Relation, out: &mut Vec<Change>) {
    let (a, b) = (*old.on_delete, *new.on_delete);
    if a == b {
        return;
    }
    let parent = new.belongs_to.as_str();
    let a_parent = vocab::a(&format!("`{parent}`"));
    let does = |x: OnDelete| match x {
        OnDelete::Keep => format!("leaves its {name} records"),
        OnDelete::Restrict => format!("fails while it has {name} records"),
        OnDelete::Cascade => format!("deletes its {name} records first"),
    };
    let head = format!(
        "{name}: relation `{}` on_delete {a} → {b}: deleting {a_parent} now {}",
        *new.name,
        does(b)
    );
    if !a.enforced() {
        push(
            out,
            Impact::NeedsMigration,
            format!(
                "{head}, and a write that names {a_parent} needs it to exist; no record or collection changes, but each `{parent}`'s count of children (`{}.children`) is new: run `reconcile` to count the {name} records already stored (until then a parent's delete does not see them, and deleting one takes back what was never counted)",
                *new.name
            ),
        );
    } else if !b.enforced() {
        push(
            out,
            Impact::Safe,
            format!(
                "{head}, and a {name} may name {a_parent} that does not exist; the count of each `{parent}`'s children (`{}.children`) is no longer kept and is left behind",
                *new.name
            ),
        );
    } else {
        push(out, Impact::Safe, format!("{head}; nothing stored changes"));
    }
}

fn ttl_text(t: &Ttl) -> String {
    let after = vocab::format_duration_ms(t.after_ms.value);
    match &t.jitter_permille {
        Some(j) => format!("{after}, jitter {}", vocab::format_jitter(j.value)),
        None => after,
    }
}

/// Every write sets a record's expiry from the TTL of the code that writes
/// it; stored records keep theirs until they are written again.
fn ttl_changes(name: &str, old: &Entity, new: &Entity, out: &mut Vec<Change>) {
    match (&old.ttl, &new.ttl) {
        (None, Some(t)) => push(
            out,
            Impact::Safe,
            format!(
                "{name}: TTL added ({}); records written from now on expire, records already stored do not until they are written again",
                ttl_text(t)
            ),
        ),
        (Some(t), None) => push(
            out,
            Impact::NeedsMigration,
            format!(
                "{name}: TTL removed (was {}); records already stored still expire when the TTL of their last write runs out, but writes no longer sweep what they leave in counters and listings: run `reconcile` once they have expired",
                ttl_text(t)
            ),
        ),
        (Some(a), Some(b)) if a != b => push(
            out,
            Impact::Safe,
            format!(
                "{name}: TTL {} → {}; records already stored keep the expiry their last write set, each write from now on sets the new one",
                ttl_text(a),
                ttl_text(b)
            ),
        ),
        _ => {}
    }
}

/// A record's own expiry (`expiry: true`) is set by each write from the
/// field's value; stored records keep the expiry of their last write.
fn expiry_changes(name: &str, old: &Entity, new: &Entity, out: &mut Vec<Change>) {
    let (a, b) = (old.expiry_field(), new.expiry_field());
    match (a, b) {
        (None, Some(f)) => push(
            out,
            Impact::Safe,
            format!(
                "{name}: `{}` now sets each record's expiry; records written from now on with it set expire then, records already stored keep the expiry of their last write until they are written again (`update` them to make them expire)",
                *f.name
            ),
        ),
        (Some(f), None) if new.ttl.is_some() => push(
            out,
            Impact::Safe,
            format!(
                "{name}: `{}` no longer sets records' expiry; records already stored still expire when their last write said, and the sweep still takes their entries back; writes from now on follow the `ttl`",
                *f.name
            ),
        ),
        (Some(f), None) => push(
            out,
            Impact::NeedsMigration,
            format!(
                "{name}: `{}` no longer sets records' expiry; records already stored still expire when their last write said, but writes no longer sweep what they leave in counters and listings: run `reconcile` once they have expired",
                *f.name
            ),
        ),
        (Some(x), Some(y)) if *x.name != *y.name => push(
            out,
            Impact::Safe,
            format!(
                "{name}: the expiry field `{}` → `{}`; records already stored keep the expiry their last write set, each write from now on takes it from `{}`",
                *x.name, *y.name, *y.name
            ),
        ),
        _ => {}
    }
}

fn compress_text(c: &Compress) -> String {
    format!(
        "{} from {}",
        c.codec.as_str(),
        vocab::format_size(c.above.value)
    )
}

/// Each stored value names its codec (or none) in its header, so records
/// written under any `compress` read under any other; a write stores the
/// record as the new settings say.
fn compress_changes(name: &str, old: &Entity, new: &Entity, out: &mut Vec<Change>) {
    let text = |c: Option<&Compress>| c.map_or_else(|| "none".to_owned(), compress_text);
    let same = match (&old.compress, &new.compress) {
        (Some(a), Some(b)) => a.codec.value == b.codec.value && a.above.value == b.above.value,
        (a, b) => a.is_none() && b.is_none(),
    };
    if !same {
        push(
            out,
            Impact::Safe,
            format!(
                "{name}: compression {} → {}; each stored value names its codec, so records already stored still read, and each write from now on stores the record the new way",
                text(old.compress.as_ref()),
                text(new.compress.as_ref())
            ),
        );
    }
}

/// Compares two versions of a schema.
pub fn diff(old: &Model, new: &Model) -> Vec<Change> {
    let mut out = Vec::new();
    for n in &new.entities {
        let name = n.name.as_str();
        let Some(o) = old.entities.iter().find(|o| *o.name == *n.name) else {
            push(
                &mut out,
                Impact::Safe,
                format!("{name}: new entity; nothing of it is stored yet"),
            );
            continue;
        };
        if o.namespace.as_ref().map(|x| &x.value) != n.namespace.as_ref().map(|x| &x.value) {
            push(
                &mut out,
                Impact::Breaking,
                format!("{name}: namespace changed; every stored key moves"),
            );
        }
        if o.key.as_ref().map(|k| &k.text) != n.key.as_ref().map(|k| &k.text) {
            push(
                &mut out,
                Impact::Breaking,
                format!("{name}: key template changed; stored records are no longer found"),
            );
        }
        match n.version.value.cmp(&o.version.value) {
            std::cmp::Ordering::Less => push(
                &mut out,
                Impact::Breaking,
                format!(
                    "{name}: version went down from {} to {}; records written meanwhile read as FutureVersion",
                    o.version.value, n.version.value
                ),
            ),
            std::cmp::Ordering::Greater => push(
                &mut out,
                Impact::NeedsMigration,
                format!(
                    "{name}: version {} → {}; old records are migrated when read, `migrate_all` rewrites them all",
                    o.version.value, n.version.value
                ),
            ),
            std::cmp::Ordering::Equal => {}
        }
        if o.encoding.value != n.encoding.value {
            use kvmodel_codegen::ir::Encoding;
            if o.encoding.value == Encoding::Protobuf {
                // A protobuf record's fields are numbers: a type that is not
                // protobuf-encoded has no numbers to read them by.
                push(
                    &mut out,
                    Impact::Breaking,
                    format!(
                        "{name}: encoding protobuf → {}; records stored as protobuf no longer read \
                         (only a protobuf-encoded type knows their field numbers): rewrite them \
                         first, or keep protobuf",
                        n.encoding.as_str()
                    ),
                );
            } else {
                push(
                    &mut out,
                    Impact::Safe,
                    format!(
                        "{name}: encoding {} → {}; each record names its encoding, old ones still read",
                        o.encoding.as_str(),
                        n.encoding.as_str()
                    ),
                );
            }
        }
        ttl_changes(name, o, n, &mut out);
        expiry_changes(name, o, n, &mut out);
        compress_changes(name, o, n, &mut out);
        field_changes(name, o, n, &mut out);
        derived_changes(name, o, n, &mut out);
    }
    for o in &old.entities {
        if !new.entities.iter().any(|n| *n.name == *o.name) {
            push(
                &mut out,
                Impact::Breaking,
                format!(
                    "{}: entity removed; its records, indexes and counters are left behind",
                    *o.name
                ),
            );
        }
    }
    types::type_changes(old, new, &mut out);
    tallies::tally_changes(old, new, &mut out);
    out.sort_by(|a, b| {
        b.impact
            .cmp(&a.impact)
            .then_with(|| a.reason.cmp(&b.reason))
    });
    out
}

/// The report as text, one change a line, with a verdict.
pub fn report(changes: &[Change]) -> String {
    let worst = changes
        .iter()
        .map(|c| c.impact)
        .max()
        .unwrap_or(Impact::Safe);
    let mut out = String::new();
    for c in changes {
        out.push_str(&format!("{:<16} {}\n", c.impact.to_string(), c.reason));
    }
    out.push_str(&format!("verdict: {worst}\n"));
    out
}
