//! I002: the collections and counters that every record of one parent
//! writes, kept on a Redis Cluster in other slots than those records.
//!
//! A parent is the value of a key field that the entity's relation, counter
//! groups or ordered index fields name (`link_id` of a click): all the
//! records with that value add to the same relation collection, the same
//! counters and the same index collections. Without `colocate` on that
//! field those keys lie in other slots than each record, so every write
//! that moves them takes the cross-slot commit, and every writer of a busy
//! parent takes it on the same keys. `colocate` on the field puts them in
//! the record's slot, since each has the field among its components.

use kvmodel_codegen::ir::{Entity, FieldExpr, Lint, Model};
use kvmodel_codegen::origin::{Diagnostics, Sp};
use kvmodel_codegen::vocab;

use super::{allowed, warn};
use crate::keys::ClusterLayout;

/// A key shared by the records of one parent, named as [`ClusterLayout`]
/// names it (`relation link`, `counter per_link`).
struct Shared {
    name: String,
    /// Whether an update can move it: a key field never changes, so only
    /// its other components, its order or its sum can.
    moves_on_update: bool,
}

/// What co-locating `e` by one of its key fields would bring together.
pub(super) struct Finding {
    /// The key field to co-locate by.
    field: String,
    /// The shared keys that lie elsewhere now and in the record's slot then.
    hot: Vec<String>,
    /// Sequential round trips of a create, now and then (when it gains).
    create: Option<(u8, u8)>,
    /// Whether an update that moves one of them gains (4 → 2).
    update: bool,
    /// Derived keys that still lie elsewhere then.
    still_away: Vec<String>,
}

/// The keys of `e` shared by every record with the same value of `field`:
/// its relations by the field (their collections, and the count of
/// children an enforced one keeps), its counters grouped by it and its
/// ordered indexes over it.
fn shared(e: &Entity, field: &str) -> Vec<Shared> {
    let in_key = |f: &str| {
        e.key
            .as_ref()
            .is_some_and(|k| k.placeholders().any(|p| p == f))
    };
    let mutable = |x: &Sp<FieldExpr>| !in_key(x.field());
    let by_field = |xs: &[Sp<FieldExpr>]| {
        xs.iter()
            .any(|x| matches!(&x.value, FieldExpr::Field(f) if f == field))
    };
    let mut out = Vec::new();
    for r in e.relations.iter().filter(|r| *r.by == field) {
        out.push(Shared {
            name: format!("relation {}", *r.name),
            moves_on_update: r.order_by.as_ref().is_some_and(mutable),
        });
        if r.on_delete.enforced() {
            out.push(Shared {
                name: format!("counter {}.children", *r.name),
                moves_on_update: false,
            });
        }
    }
    for ix in e
        .indexes
        .iter()
        .filter(|i| !i.unique && by_field(&i.fields))
    {
        out.push(Shared {
            name: format!("index {}", *ix.name),
            moves_on_update: ix.fields.iter().any(mutable)
                || ix.order_by.as_ref().is_some_and(mutable),
        });
    }
    for c in e.counters.iter().filter(|c| by_field(&c.group_by)) {
        out.push(Shared {
            name: format!("counter {}", *c.name),
            moves_on_update: c.group_by.iter().any(mutable) || c.sum.is_some(),
        });
    }
    out
}

/// What `colocate` on `field` would change for `e`, when it brings some of
/// the keys its parents share into the record's slot and that makes a
/// create or an update take fewer round trips, without moving out of the
/// slot anything the current `colocate` keeps there.
fn consider(e: &Entity, model: &Model, now: &ClusterLayout, field: &str) -> Option<Finding> {
    let shared = shared(e, field);
    if shared.is_empty() {
        return None;
    }
    let mut copy = e.clone();
    let origin = e.key.as_ref()?.origin.clone();
    copy.colocate = Some(Sp::new(field.to_owned(), origin));
    let then = ClusterLayout::of(&copy, model);
    if e.colocate.is_some() && !now.home.iter().all(|k| then.home.contains(k)) {
        return None;
    }
    let hot: Vec<&Shared> = shared
        .iter()
        .filter(|s| now.away_derived.contains(&s.name) && then.home.contains(&s.name))
        .collect();
    if hot.is_empty() {
        return None;
    }
    // A create adds members elsewhere without holding them (3 steps); it
    // takes the 5-step commit for the counters it moves elsewhere. One that
    // names the parent of an enforced relation conditions on that record,
    // which lies in its own slot whatever the child's tag.
    let counts = hot.iter().any(|s| s.name.starts_with("counter "));
    let parent_elsewhere = e.relations.iter().any(|r| r.on_delete.enforced());
    let create = (counts && then.create < now.create && !parent_elsewhere)
        .then_some((now.create, then.create));
    // An expiring entity's update always moves its ledger entry elsewhere.
    let update = !e.expires() && hot.iter().any(|s| s.moves_on_update);
    if create.is_none() && !update {
        return None;
    }
    Some(Finding {
        field: field.to_owned(),
        // What an update alone gains on: the keys it can move.
        hot: hot
            .iter()
            .filter(|s| create.is_some() || s.moves_on_update)
            .map(|s| s.name.clone())
            .collect(),
        create,
        update,
        still_away: then.away_derived,
    })
}

/// The finding for `e`: the key field whose `colocate` brings the most
/// shared keys together (the first in the key, on a tie), if any. A key
/// field that is the whole key has no records to share with.
pub(super) fn finding(e: &Entity, model: &Model) -> Option<Finding> {
    let key = e.key.as_ref()?;
    if key.placeholders().count() < 2 {
        return None;
    }
    let now = ClusterLayout::of(e, model);
    let mut best: Option<Finding> = None;
    for field in key.placeholders() {
        if e.colocate.as_ref().is_some_and(|c| c.as_str() == field) {
            continue;
        }
        if let Some(f) = consider(e, model, &now, field) {
            if best.as_ref().is_none_or(|b| f.hot.len() > b.hot.len()) {
                best = Some(f);
            }
        }
    }
    best
}

/// `relation link` as `relation \`link\``.
fn quoted(key: &str) -> String {
    match key.split_once(' ') {
        Some((kind, name)) => format!("{kind} `{name}`"),
        None => key.to_owned(),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Reports `finding` on `e`, unless I002 is allowed. Returns whether it
/// reported.
pub(super) fn report(e: &Entity, finding: &Finding, diags: &mut Diagnostics) -> bool {
    if allowed(Lint::HotCollections, &[&e.allow]) {
        return false;
    }
    let Some(key) = &e.key else { return false };
    let field = finding.field.as_str();
    let hot: Vec<String> = finding.hot.iter().map(|k| quoted(k)).collect();
    let paths = match (finding.create, finding.update) {
        (Some((now, then)), update) => format!(
            "every create takes the cross-slot commit for them ({now} sequential round trips instead of {then}){}",
            if update {
                ", as does an update that moves one of them (5 instead of 3)"
            } else {
                ""
            }
        ),
        (None, _) => "an update that moves one of them takes the cross-slot commit for them (5 sequential round trips instead of 3)".to_owned(),
    };
    let (origin, setting, instead) = match &e.colocate {
        Some(c) => (
            &c.origin,
            vocab::setting(&c.origin, "colocate", field),
            format!(
                " in place of {} (every key in the record's slot has `{field}` among its components too)",
                vocab::setting(&c.origin, "colocate", c)
            ),
        ),
        None => (
            &key.origin,
            vocab::setting(&key.origin, "colocate", field),
            String::new(),
        ),
    };
    let gain = match (finding.create.is_some(), finding.update) {
        (true, true) => "a create, or an update that moves them, commits in one script there",
        (true, false) => "a create commits in one script there",
        _ => "an update that moves them commits in one script there",
    };
    let still = if finding.still_away.is_empty() {
        String::new()
    } else {
        let away: Vec<String> = finding.still_away.iter().map(|k| quoted(k)).collect();
        format!(" ({} would still lie in other slots)", and_list(&away))
    };
    diags.push(warn(
        Lint::HotCollections,
        origin,
        format!(
            "on a Redis Cluster, `{}` keeps the {} that all its records with the same `{field}` write in other slots than those records, so {}; the writers of a busy `{field}` all take it on the same keys",
            *e.name,
            and_list(&hot),
            paths,
        ),
        &format!(
            "add {setting}{instead}: a key shares the record's slot when `{field}` is among its fields or groups, so these then share the record's slot and {gain}{still}; the cross-slot commit is safe otherwise, only slower (docs/cluster.md)"
        ),
        "the entity",
    ));
    true
}
