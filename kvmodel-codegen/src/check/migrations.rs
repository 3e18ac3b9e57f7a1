//! Rules of record versions: migration steps, or a `migrate_from` chain.

use std::collections::{BTreeMap, BTreeSet};

use crate::ir::Entity;
use crate::origin::Diagnostics;
use crate::vocab;

/// Checks the steps that read older records: one way of migrating, steps
/// that fit the version and are contiguous, names of stored fields.
pub(super) fn check(e: &Entity, diags: &mut Diagnostics) {
    let version = e.version.value;
    if let Some(from) = &e.migrate_from {
        if let Some(m) = e.migrations.first() {
            diags.error("E117", &m.origin, format!("`{}` declares both `migrate_from = {}` and migration steps; use one or the other", *e.name, **from));
        }
        if version < 2 {
            diags.error("E117", &from.origin, "`migrate_from` needs `version` of at least 2: the previous type holds the version before it");
        }
        return;
    }
    let mut seen = BTreeMap::new();
    for m in &e.migrations {
        if m.from.value < 1 || m.from.value >= version.max(1) {
            diags.error("E117", &m.from.origin, format!("a migration from version {} does not fit: steps go from 1 up to {} (the version before the current {version})", m.from.value, version.saturating_sub(1)));
        } else if seen.insert(m.from.value, ()).is_some() {
            diags.error(
                "E117",
                &m.from.origin,
                format!("two migration steps start at version {}", m.from.value),
            );
        }
        let names = m
            .rename
            .iter()
            .flat_map(|(old, new)| [old, new])
            .chain(m.add.iter().map(|(f, _)| f))
            .chain(&m.remove);
        for name in names {
            if let Err(mistake) = vocab::stored_field(name) {
                diags.push(mistake.at(&name.origin));
            }
        }
        let mut added = BTreeSet::new();
        for (f, _) in &m.add {
            if !added.insert(f.as_str()) {
                diags.error(
                    "E118",
                    &f.origin,
                    format!(
                        "the migration from version {} adds `{}` twice",
                        m.from.value, **f
                    ),
                );
            }
        }
        for (old, new) in &m.rename {
            if old.value == new.value {
                diags.error(
                    "E118",
                    &new.origin,
                    format!("the migration renames `{}` to itself", **old),
                );
            }
        }
    }
    // Every step up to the current version must be declared; a gap would
    // leave records of that version unreadable. Entities without any steps
    // may still be at version > 1 if old versions were never written, but a
    // partial chain is always a mistake.
    // Gaps are reported as ranges, walking only the declared steps, so a
    // huge `version` costs nothing and says one thing per gap.
    if !e.migrations.is_empty() {
        let mut next = 1u32;
        let mut gaps = Vec::new();
        for &from in seen
            .keys()
            .filter(|&&f| f < version)
            .chain(std::iter::once(&version))
        {
            if from > next {
                gaps.push((next, from));
            }
            next = next.max(from.saturating_add(1));
        }
        for (first, end) in gaps {
            let what = if end - first == 1 {
                format!("no step goes from version {first} to {end}")
            } else {
                format!("the steps from version {first} up to version {end} are missing")
            };
            diags.error(
                "E117",
                &e.version.origin,
                format!("migration steps must be contiguous up to version {version}, but {what}"),
            );
        }
    }
}
