//! `kvmodel diff`: what changing a schema does to data already stored.

use std::fmt;

use kvmodel_codegen::ir::{Entity, Field, Model};

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
    for f in &new.fields {
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
        if new.field(&f.name).is_none() {
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

fn derived_changes(name: &str, old: &Entity, new: &Entity, out: &mut Vec<Change>) {
    let new_since_ok = |since: u32| since > old.version.value;
    // A new counter without `since` is decremented by updates and deletes of
    // records that never incremented it; a new index or relation entry without
    // it is only missing until the record is rewritten (removals are no-ops).
    macro_rules! compare {
        ($list:ident, $what:literal, $unsinced:expr) => {
            for x in &new.$list {
                match old.$list.iter().find(|o| *o.name == *x.name) {
                    None if new_since_ok(x.since.value) => push(out, Impact::NeedsMigration, format!("{name}: new {} `{}` (since {}); run `migrate_all` to fill it for records nobody updates", $what, *x.name, x.since.value)),
                    None if $unsinced == Impact::Breaking => push(out, Impact::Breaking, format!("{name}: new {} `{}` without `since` above the old version {}; updates and deletes of old records would take back what they never added (bump `version` and set `since`)", $what, *x.name, old.version.value)),
                    None => push(out, $unsinced, format!("{name}: new {} `{}`; old records have no entry until they are rewritten (`reconcile` fills them)", $what, *x.name)),
                    Some(o) if o != x => push(out, Impact::NeedsMigration, format!("{name}: {} `{}` changed; existing entries follow the old definition until `reconcile` (or drop and rebuild it)", $what, *x.name)),
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
    compare!(indexes, "index", Impact::NeedsMigration);
    compare!(counters, "counter", Impact::Breaking);
    compare!(relations, "relation", Impact::NeedsMigration);
}

/// Compares two versions of a schema.
pub fn diff(old: &Model, new: &Model) -> Vec<Change> {
    let mut out = Vec::new();
    for n in &new.entities {
        let name = n.name.as_str();
        let Some(o) = old.entities.iter().find(|o| *o.name == *n.name) else {
            push(&mut out, Impact::Safe, format!("{name}: new entity"));
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
